# Statistics on embeddings: intra/inter-class similarities, Bias Transfer Scores and iEATs,
# then one summary table of each with multiple-comparison-adjusted p-values; the findings in words, the
# provenance of every embedding and the filled config, each also a page of both reports.
for name, title in (
    ("findings", "Findings"),
    ("provenance", "Provenance"),
    ("config", "Configuration"),
):
    report_artefact(
        name,
        f"{name}.rst",
        kind="page",
        section=title,
        title=title,
        files={"html": f"results/summary/{name}.html"},
    )


rule similarity:
    input:
        embeddings=path("embeddings"),
    output:
        table=path("stage_table", kind="similarity"),
    log:
        "logs/similarity/{analysis_set}/{model}/{stage}.log",
    benchmark:
        "results/benchmarks/similarity/{analysis_set}/{model}/{stage}.tsv"
    group:
        MODEL_STATS_GROUP
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        **RESOURCES["stats"],
    params:
        settings=PLAN.settings("similarity"),
    script:
        "../workflow/scripts/similarity.py"


rule bts:
    input:
        pretrained=path("stage_table", kind="similarity", stage="pretrained"),
        finetuned=finetuned_similarity_tables,
        reference=reference_tables,
        pretrained_embeddings=path("embeddings", stage="pretrained"),
        finetuned_embeddings=finetuned_embeddings,
    output:
        table=path("bts"),
    log:
        "logs/bts/{analysis_set}/{model}/ft-{dataset}.log",
    benchmark:
        "results/benchmarks/bts/{analysis_set}/{model}/ft-{dataset}.tsv"
    group:
        MODEL_STATS_GROUP
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        **RESOURCES["plot"],
    params:
        settings=lambda wildcards: PLAN.settings("bts", wildcards),
    script:
        "../workflow/scripts/bts.py"


rule ieat:
    input:
        embeddings=path("embeddings"),
    output:
        table=path("stage_table", kind="ieat"),
    log:
        "logs/ieat/{analysis_set}/{model}/{stage}.log",
    benchmark:
        "results/benchmarks/ieat/{analysis_set}/{model}/{stage}.tsv"
    group:
        MODEL_STATS_GROUP
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        **RESOURCES["stats"],
    params:
        settings=lambda wildcards: PLAN.settings("ieat", wildcards),
    script:
        "../workflow/scripts/ieat.py"


# One marker per model that reads every analysis table of the model's group (MODEL_STATS_GROUP in
# rules/common.smk): the group becomes one connected set of jobs. No action: it only joins them.
rule model_analyses:
    input:
        model_analysis_tables,
    output:
        touch(path("analyses_done")),
    group:
        MODEL_STATS_GROUP
    threads: 1
    resources:
        mem_mb=100,
        runtime=1,


# One job per summary, so that a new iEAT test rewrites ieat.csv only (and reruns only its readers).
rule summarise:
    input:
        tables=lambda wildcards: summary_inputs(wildcards.summary),
    output:
        table="results/summary/{summary}.csv",
    log:
        "logs/summarise/{summary}.log",
    benchmark:
        "results/benchmarks/summarise/{summary}.tsv"
    wildcard_constraints:
        summary="similarity|bts|ieat|ieat_scratch",
    localrule: True
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        **RESOURCES["gather"],
    script:
        "../workflow/scripts/summarise.py"


rule change:
    input:
        pretrained_embeddings=path("embeddings", stage="pretrained"),
        finetuned_embeddings=finetuned_embeddings,
    output:
        ieat=path("change", kind="ieat"),
        similarity=path("change", kind="similarity"),
        seeds=path("change", kind="ieat_seeds"),
    log:
        "logs/change/{analysis_set}/{model}/ft-{dataset}.log",
    benchmark:
        "results/benchmarks/change/{analysis_set}/{model}/ft-{dataset}.tsv"
    group:
        MODEL_STATS_GROUP
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=20,
    params:
        settings=lambda wildcards: PLAN.settings("change", wildcards),
    script:
        "../workflow/scripts/change.py"


rule summarise_change:
    input:
        ieat=change_inputs("ieat"),
        similarity=change_inputs("similarity"),
        seeds=change_inputs("ieat_seeds"),
    output:
        ieat_out="results/summary/ieat_change.csv",
        similarity_out="results/summary/similarity_change.csv",
        seeds_out="results/summary/ieat_seeds.csv",
    log:
        "logs/summarise_change.log",
    benchmark:
        "results/benchmarks/summarise_change.tsv"
    localrule: True
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        **RESOURCES["gather"],
    script:
        "../workflow/scripts/summarise_change.py"


rule findings:
    input:
        ieat="results/summary/ieat.csv",
        ieat_scratch=IEAT_SCRATCH,
        bts="results/summary/bts.csv",
        curves=finetune_runs("curve.csv"),
        scratch=scratch_runs(),
        attribution=attribution_targets(),
        ieat_change="results/summary/ieat_change.csv",
        ieat_seeds="results/summary/ieat_seeds.csv",
        similarity_change="results/summary/similarity_change.csv",
        layers=layer_profile_tables(),
        trajectory=trajectory_summary(),
        claims=claims_summary(),
        amplification=amplification_summary(),
        amplification_terms=amplification_summary("amplification_terms"),
        link=link_summary(),
        link_correlation=link_summary("link_correlation"),
        intervention=intervention_summary(),
    output:
        **artefact_outputs("findings"),
        findings="results/summary/findings.rst",
    log:
        "logs/findings.log",
    benchmark:
        "results/benchmarks/findings.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        **RESOURCES["small"],
    params:
        **SIGNIFICANCE,
        tests=cfg.canonical({a: s["ieat"] for a, s in config["analysis_sets"].items()}),
        planted=planted_associations(),
    script:
        "../workflow/scripts/findings.py"


rule provenance:
    input:
        embeddings=[
            path("embeddings", analysis_set=a, model=m, stage=s)
            for a, m in all_pairs()
            for s in cfg.stages(config) + cfg.scratch_stages(config)
        ],
        # where each model's pretrained weights came from, in the order of params.models
        origins=[weights_origin(m) for m in config["models"]],
    output:
        **artefact_outputs("provenance"),
        table="results/summary/provenance.csv",
    log:
        "logs/provenance.log",
    benchmark:
        "results/benchmarks/provenance.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        **RESOURCES["small"],
    params:
        models=list(config["models"]),
    script:
        "../workflow/scripts/provenance.py"


rule effective_config:
    output:
        **artefact_outputs("config"),
        yaml_out="results/summary/config.yaml",
    log:
        "logs/effective_config.log",
    benchmark:
        "results/benchmarks/effective_config.tsv"
    localrule: True
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        **RESOURCES["small"],
    params:
        config=cfg.canonical(config),
    script:
        "../workflow/scripts/effective_config.py"
