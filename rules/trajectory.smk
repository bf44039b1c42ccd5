# trajectory_settings keeps flat params: a new shape would rerun the finetuning reading its record (upgrading users).
# Trajectories over finetuning epochs (finetune.trajectory): the finetune job embeds every analysis set
# after the chosen epochs (rules/finetune.smk); one job per (analysis set, model, finetune dataset) tests
# every epoch of every seed, one job draws its figure, one writes its table (rules/tables.smk), and one table
# gathers them all.


TRAJECTORY_JOBS = [
    {"analysis_set": a, "model": m, "dataset": d}
    for a, m in PLAN.all_pairs()
    for d in PLAN.trajectory_datasets
]
report_artefact(
    "trajectory_figure",
    "trajectory.rst",
    kind="figure",
    section="Analysis set {analysis_set}",
    subsection="{model}",
    title="Trajectory over finetuning on {dataset}",
    files={
        ext: f"results/figures/{{analysis_set}}/{{model}}/trajectory_ft-{{dataset}}.{ext}"
        for ext in ("png", "pdf")
    },
    instances=TRAJECTORY_JOBS,
)
table_artefact(
    "trajectory",
    path("trajectory_table"),
    "results/tables/trajectory_{analysis_set}_{model}_ft-{dataset}",
    caption="table_trajectory.rst",
    section="Trajectories",
    title="{model} over finetuning on {dataset}, analysis set {analysis_set}",
    instances=TRAJECTORY_JOBS,
)


# What a finetune job embeds (none when the trajectory is off), in a file: rewritten when it changes, it
# reruns the finetune jobs only while the trajectory is on (rules/finetune.smk, trajectory_io).
rule trajectory_settings:
    output:
        settings=path("trajectory_settings"),
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
        analysis_sets=list(config["analysis_sets"]) if PLAN.trajectory_on else [],
        epochs=lambda wildcards: PLAN.trajectory_epochs(
            wildcards.model, wildcards.dataset
        ),
        amp=config["analysis"]["embed"]["amp"],
    script:
        "../workflow/scripts/trajectory_settings.py"


rule trajectory:
    input:
        pretrained=path("embeddings", stage="pretrained"),
        trajectory=trajectory_folders,
        metrics=trajectory_metrics,
    output:
        table=path("trajectory_table"),
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
        settings=lambda wildcards: PLAN.settings("trajectory", wildcards),
    script:
        "../workflow/scripts/trajectory.py"


rule summarise_trajectory:
    input:
        tables=[path("trajectory_table", **job) for job in TRAJECTORY_JOBS],
    output:
        table=PLAN.summary("trajectory"),
    log:
        "logs/summarise/trajectory.log",
    benchmark:
        "results/benchmarks/summarise/trajectory.tsv"
    localrule: True
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        **RESOURCES["gather"],
    params:
        settings=PLAN.settings("summarise_trajectory"),
    script:
        "../workflow/scripts/summarise.py"


rule plot_trajectory:
    input:
        trajectory=path("trajectory_table"),
    output:
        **artefact_outputs("trajectory_figure"),
    log:
        "logs/report/trajectory/{analysis_set}/{model}/ft-{dataset}.log",
    benchmark:
        "results/benchmarks/report/trajectory/{analysis_set}/{model}/ft-{dataset}.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        **RESOURCES["plot"],
    script:
        "../workflow/scripts/plot_trajectory.py"
