# Statistics on embeddings: intra/inter-class similarities, Bias Transfer Scores (with the linear CKA of
# each finetuned and scratch network against the pretrained one, in the same job) and iEATs,
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


# Similarities and iEATs: one job each per analysis set and model, over every network that its embed job
# embedded (PLAN.embedded_stages), as embed does: the imports paid once, one table per network unchanged.
rule similarity:
    input:
        embeddings=[path("embeddings", stage=s) for s in PLAN.embedded_stages],
    output:
        tables=[
            path("stage_table", kind="similarity", stage=s)
            for s in PLAN.embedded_stages
        ],
    log:
        "logs/similarity/{analysis_set}/{model}.log",
    benchmark:
        "results/benchmarks/similarity/{analysis_set}/{model}.tsv"
    group:
        MODEL_STATS_GROUP
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        **RESOURCES["stats"],
    params:
        settings=PLAN.settings("similarity"),
        stages=PLAN.embedded_stages,
    script:
        "../workflow/scripts/similarity.py"


# The BTS and CKA tables of every finetuning dataset: one job per analysis set and model, as above, one table of
# each per dataset unchanged (the scripts assign each finetuned and scratch file to its dataset by its stage).
rule bts:
    input:
        pretrained=path("stage_table", kind="similarity", stage="pretrained"),
        finetuned=[
            path("stage_table", kind="similarity", stage=s)
            for s in PLAN.finetuned_stages
        ],
        reference=[
            path("stage_table", kind="similarity", stage=s)
            for s in PLAN.scratch_stages
        ],
        pretrained_embeddings=path("embeddings", stage="pretrained"),
        finetuned_embeddings=[
            path("embeddings", stage=s) for s in PLAN.finetuned_stages
        ],
        reference_embeddings=[path("embeddings", stage=s) for s in PLAN.scratch_stages],
    output:
        table=[path("bts", dataset=d) for d in PLAN.finetune_datasets],
        cka=[path("cka", dataset=d) for d in PLAN.finetune_datasets],
    log:
        "logs/bts/{analysis_set}/{model}.log",
    benchmark:
        "results/benchmarks/bts/{analysis_set}/{model}.tsv"
    group:
        MODEL_STATS_GROUP
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        **RESOURCES["plot"],
    params:
        settings=lambda wildcards: PLAN.settings("bts", wildcards),
        datasets=PLAN.finetune_datasets,
    script:
        "../workflow/scripts/bts.py"


rule ieat:
    input:
        embeddings=[path("embeddings", stage=s) for s in PLAN.embedded_stages],
    output:
        tables=[path("stage_table", kind="ieat", stage=s) for s in PLAN.embedded_stages],
    log:
        "logs/ieat/{analysis_set}/{model}.log",
    benchmark:
        "results/benchmarks/ieat/{analysis_set}/{model}.tsv"
    group:
        MODEL_STATS_GROUP
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        **RESOURCES["stats"],
    params:
        settings=lambda wildcards: PLAN.settings("ieat", wildcards),
        stages=PLAN.embedded_stages,
    script:
        "../workflow/scripts/ieat.py"


# One marker per model that reads every analysis table of the model's group (MODEL_STATS_GROUP in
# rules/common.smk): the group becomes one connected set of jobs. No action: it only joins them.
rule model_analyses:
    input:
        lambda wildcards: PLAN.model_analysis_tables(wildcards.model),
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
        table=path("summary"),
    log:
        "logs/summarise/{summary}.log",
    benchmark:
        "results/benchmarks/summarise/{summary}.tsv"
    wildcard_constraints:
        summary="similarity|ieat|ieat_scratch",
    localrule: True
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        **RESOURCES["gather"],
    params:
        settings=lambda wildcards: PLAN.settings("summarise", wildcards),
    script:
        "../workflow/scripts/summarise.py"


# The BTS summary and the CKA summary in one job: the BTS jobs write both tables.
rule summarise_bts:
    input:
        tables=summary_inputs("bts"),
        cka=PLAN.cka_tables(),
    output:
        table=PLAN.summary("bts"),
        cka_table=PLAN.summary("cka"),
    log:
        "logs/summarise/bts.log",
    benchmark:
        "results/benchmarks/summarise/bts.tsv"
    localrule: True
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        **RESOURCES["gather"],
    params:
        settings=PLAN.settings("summarise", {"summary": "bts"}),
    script:
        "../workflow/scripts/summarise.py"


# What finetuning changed, for every finetuning dataset: one job per analysis set and model, likewise.
rule change:
    input:
        pretrained_embeddings=path("embeddings", stage="pretrained"),
        finetuned_embeddings=[
            path("embeddings", stage=s) for s in PLAN.finetuned_stages
        ],
    output:
        ieat=[path("change", kind="ieat", dataset=d) for d in PLAN.finetune_datasets],
        similarity=[
            path("change", kind="similarity", dataset=d)
            for d in PLAN.finetune_datasets
        ],
        seeds=[
            path("change", kind="ieat_seeds", dataset=d)
            for d in PLAN.finetune_datasets
        ],
    log:
        "logs/change/{analysis_set}/{model}.log",
    benchmark:
        "results/benchmarks/change/{analysis_set}/{model}.tsv"
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
        datasets=PLAN.finetune_datasets,
    script:
        "../workflow/scripts/change.py"


rule summarise_change:
    input:
        ieat=change_inputs("ieat"),
        similarity=change_inputs("similarity"),
        seeds=change_inputs("ieat_seeds"),
    output:
        ieat_out=PLAN.summary("ieat_change"),
        similarity_out=PLAN.summary("similarity_change"),
        seeds_out=PLAN.summary("ieat_seeds"),
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


# The summaries the findings read, whichever this run writes (the script knows each by its name).
FINDINGS_SUMMARIES = (
    "ieat",
    "ieat_scratch",
    "bts",
    "cka",
    "attribution",
    "ieat_change",
    "ieat_seeds",
    "similarity_change",
    "layer_profile",
    "trajectory",
    "claims",
    "factors",
    "amplification",
    "amplification_terms",
    "link",
    "link_correlation",
    "intervention",
    "comparison",
)


rule findings:
    input:
        summaries=PLAN.summaries(*FINDINGS_SUMMARIES),
        curves=PLAN.finetune_runs("curve.csv"),
        scratch=PLAN.scratch_runs(),
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
        settings=PLAN.settings("findings"),
    script:
        "../workflow/scripts/findings.py"


rule provenance:
    input:
        embeddings=[
            path("embeddings", analysis_set=a, model=m, stage=s)
            for a, m in PLAN.all_pairs()
            for s in PLAN.embedded_stages
        ],
        # where each model's pretrained weights came from, in the order of the settings' models
        origins=[PLAN.weights_origin(m) for m in config["models"]],
    output:
        **artefact_outputs("provenance"),
        table=PLAN.summary("provenance"),
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
        settings=PLAN.settings("provenance"),
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
        settings=PLAN.settings("effective_config"),
    script:
        "../workflow/scripts/effective_config.py"
