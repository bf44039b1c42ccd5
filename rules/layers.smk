# Layer profiles (docs/layers.md): embeddings of several layers of each model, pretrained and finetuned,
# from one forward pass per batch (one job per analysis set and model for all of its stages, side by side
# on each batch, as rule embed); iEAT and BTS at every layer (one job per analysis set and model);
# a summary, a profile figure per model and a LaTeX table per analysis set. Config: analysis.layers
# (enabled, pooling) and per model models.<name>.layers / layer_pooling. Input functions: below
# (stage_layer_embeddings).


LAYERS_ON = config["analysis"]["layers"]["enabled"]
report_artefact(
    "layer_profile",
    "layers.rst",
    kind="figure",
    section="Analysis set {analysis_set}",
    subsection="{model}",
    title="Layer profile",
    files={
        ext: f"results/figures/{{analysis_set}}/{{model}}/layers.{ext}"
        for ext in ("png", "pdf")
    },
    instances=ANALYSED if LAYERS_ON else [],
)
table_artefact(
    "layers",
    PLAN.summary("layer_profile"),
    "results/tables/layers_{analysis_set}",
    caption="table_layers.rst",
    section="Layer profiles",
    title="iEAT and BTS by layer on {analysis_set}",
    instances=combinations(analysis_set=config["analysis_sets"]) if LAYERS_ON else [],
)


rule embed_layers:
    input:
        ancient(path("leakage_check")),
        manifest=path("manifest"),
        weights=lambda wildcards: [
            PLAN.stage_weights(wildcards.model, s) for s in PLAN.stages
        ],
    output:
        directories=[directory(path("layer_embeddings", stage=s)) for s in PLAN.stages],
    log:
        "logs/embed_layers/{analysis_set}/{model}.log",
    benchmark:
        "results/benchmarks/embed_layers/{analysis_set}/{model}.tsv"
    group:
        EMBEDDING_GROUP
    conda:
        "../envs/torch.yaml"
    threads: config["analysis"]["embed"]["num_workers"] + 1
    resources:
        **network_resources(len(PLAN.stages)),
    params:
        settings=lambda wildcards: PLAN.settings("embed_layers", wildcards),
    script:
        "../workflow/scripts/embed_layers.py"


rule layer_profile:
    input:
        embeddings=stage_layer_embeddings,
    output:
        table=path("layer_profile"),
    log:
        "logs/layer_profile/{analysis_set}/{model}.log",
    benchmark:
        "results/benchmarks/layer_profile/{analysis_set}/{model}.tsv"
    group:
        MODEL_STATS_GROUP
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        settings=lambda wildcards: PLAN.settings("layer_profile", wildcards),
    script:
        "../workflow/scripts/layer_profile.py"


rule summarise_layers:
    input:
        tables=[
            path("layer_profile", analysis_set=a, model=m) for a, m in PLAN.all_pairs()
        ],
    output:
        table=PLAN.summary("layer_profile"),
    log:
        "logs/summarise/layer_profile.log",
    benchmark:
        "results/benchmarks/summarise/layer_profile.tsv"
    localrule: True
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        **RESOURCES["gather"],
    params:
        settings=PLAN.settings("summarise_layers"),
    script:
        "../workflow/scripts/summarise.py"


rule plot_layers:
    input:
        profile=path("layer_profile"),
    output:
        **artefact_outputs("layer_profile"),
    log:
        "logs/report/plot_layers/{analysis_set}/{model}.log",
    benchmark:
        "results/benchmarks/report/plot_layers/{analysis_set}/{model}.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        **RESOURCES["plot"],
    script:
        "../workflow/scripts/plot_layers.py"
