# Trajectories over finetuning epochs (finetune.trajectory): the finetune job embeds every analysis set
# after the chosen epochs (rules/finetune.smk); one job per (analysis set, model, finetune dataset) tests
# every epoch of every seed, one job draws its figure and table, and one table gathers them all.

TRAJECTORY = config["analysis"]["trajectory"]
TRAJECTORY_JOBS = [
    (a, m, d)
    for a, m in all_pairs()
    for d in config["finetune"]["datasets"]
    if trajectory_on()
]
# Every output of this file that rule all asks for (all_targets in rules/common.smk).
TRAJECTORY_TARGETS = trajectory_summary() + [
    path
    for a, m, d in TRAJECTORY_JOBS
    for path in (
        f"results/figures/{a}/{m}/trajectory_ft-{d}.png",
        f"results/figures/{a}/{m}/trajectory_ft-{d}.pdf",
        f"results/tables/trajectory_{a}_{m}_ft-{d}.tex",
    )
]


# What a finetune job embeds (none when the trajectory is off), in a file: rewritten when it changes, it
# reruns the finetune jobs only while the trajectory is on (rules/common.smk, trajectory_io).
rule trajectory_settings:
    output:
        settings="results/trajectory/settings/{model}/ft-{dataset}.json",
    log:
        "logs/trajectory_settings/{model}/ft-{dataset}.log",
    benchmark:
        "results/benchmarks/trajectory_settings/{model}/ft-{dataset}.tsv"
    localrule: True
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    params:
        analysis_sets=list(config["analysis_sets"]) if trajectory_on() else [],
        epochs=lambda wildcards: cfg.trajectory_epochs(
            config, wildcards.model, wildcards.dataset
        ),
    script:
        "../workflow/scripts/trajectory_settings.py"


rule trajectory:
    input:
        pretrained="results/embeddings/{analysis_set}/{model}/pretrained.parquet",
        trajectory=trajectory_folders,
        metrics=trajectory_metrics,
    output:
        table="results/trajectory/{analysis_set}/{model}/ft-{dataset}.csv",
    log:
        "logs/trajectory/{analysis_set}/{model}/ft-{dataset}.log",
    benchmark:
        "results/benchmarks/trajectory/{analysis_set}/{model}/ft-{dataset}.tsv"
    group:
        MODEL_STATS_GROUP
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        mem_mb=lambda wildcards, attempt: 4000 * attempt,
        runtime=lambda wildcards, attempt: 30 * attempt,
    params:
        epochs=lambda wildcards: cfg.trajectory_epochs(
            config, wildcards.model, wildcards.dataset
        ),
        tests=lambda wildcards: cfg.canonical(
            config["analysis_sets"][wildcards.analysis_set]["ieat"]
        ),
        lists=lambda wildcards: cfg.canonical(
            config["analysis_sets"][wildcards.analysis_set]["bts"]
        ),
        similarity=cfg.canonical(config["analysis"]["similarity"]),
        ieat=cfg.canonical(
            {
                "permutations": TRAJECTORY["permutations"],
                "bootstrap": TRAJECTORY["bootstrap"],
                **{
                    k: config["analysis"]["ieat"][k]
                    for k in ("alternative", "method", "seed", "ci_level")
                },
            }
        ),
        bts=cfg.canonical(
            {
                "bootstrap": TRAJECTORY["bootstrap"],
                **{
                    k: config["analysis"]["bts"][k]
                    for k in ("pvalue", "ci_level", "seed")
                },
            }
        ),
    script:
        "../workflow/scripts/trajectory.py"


rule summarise_trajectory:
    input:
        tables=[f"results/trajectory/{a}/{m}/ft-{d}.csv" for a, m, d in TRAJECTORY_JOBS],
    output:
        table="results/summary/trajectory.csv",
    log:
        "logs/summarise/trajectory.log",
    benchmark:
        "results/benchmarks/summarise/trajectory.tsv"
    localrule: True
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        summary="trajectory",
    script:
        "../workflow/scripts/summarise.py"


rule report_trajectory:
    input:
        trajectory="results/trajectory/{analysis_set}/{model}/ft-{dataset}.csv",
    output:
        png=report(
            "results/figures/{analysis_set}/{model}/trajectory_ft-{dataset}.png",
            caption="../workflow/report/trajectory.rst",
            category="Analysis set {analysis_set}",
            subcategory="{model}",
            labels={
                "model": "{model}",
                "figure": "trajectory over finetuning on {dataset}",
            },
        ),
        pdf="results/figures/{analysis_set}/{model}/trajectory_ft-{dataset}.pdf",
        tex=report(
            "results/tables/trajectory_{analysis_set}_{model}_ft-{dataset}.tex",
            caption="../workflow/report/table_trajectory.rst",
            category="Tables",
            subcategory="Trajectories",
            labels={
                "analysis set": "{analysis_set}",
                "model": "{model}",
                "finetuned on": "{dataset}",
            },
        ),
    log:
        "logs/report/trajectory/{analysis_set}/{model}/ft-{dataset}.log",
    benchmark:
        "results/benchmarks/report/trajectory/{analysis_set}/{model}/ft-{dataset}.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "../workflow/scripts/plot_trajectory.py"
