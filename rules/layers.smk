# Layer profiles (docs/layers.md): embeddings of several layers of each model, pretrained and finetuned,
# from one forward pass per batch; iEAT and BTS at every layer (one job per analysis set and model);
# a summary, a profile figure per model and a LaTeX table per analysis set. Config: analysis.layers
# (enabled, pooling) and per model models.<name>.layers / layer_pooling. Targets and input functions:
# rules/common.smk (layer_targets, layer_profile_tables, stage_layer_embeddings).


rule embed_layers:
    input:
        ancient("results/checks/leakage/{analysis_set}.ok"),
        manifest="results/analysis_sets/{analysis_set}/manifest.parquet",
        weights=stage_weights,
    output:
        directory=directory("results/layers/{analysis_set}/{model}/embeddings/{stage}"),
    log:
        "logs/embed_layers/{analysis_set}/{model}/{stage}.log",
    benchmark:
        "results/benchmarks/embed_layers/{analysis_set}/{model}/{stage}.tsv"
    group:
        EMBEDDING_GROUP
    conda:
        "../envs/torch.yaml"
    threads: config["analysis"]["embed"]["num_workers"] + 1
    resources:
        mem_mb=lambda wildcards, attempt: 4000 * attempt,
        runtime=lambda wildcards, attempt: 30 * attempt,
        gpu=lambda wildcards: int(config["analysis"]["embed"]["device"] == "cuda"),
    params:
        entry=lambda wildcards: cfg.canonical(network_entry(wildcards.model)),
        layers=lambda wildcards: model_entry(wildcards.model).get("layers", []),
        pooling=lambda wildcards: model_entry(wildcards.model).get(
            "layer_pooling", config["analysis"]["layers"]["pooling"]
        ),
        batch_size=config["analysis"]["embed"]["batch_size"],
        num_workers=config["analysis"]["embed"]["num_workers"],
        device=config["analysis"]["embed"]["device"],
    script:
        "../workflow/scripts/embed_layers.py"


rule layer_profile:
    input:
        embeddings=stage_layer_embeddings,
    output:
        table="results/layers/{analysis_set}/{model}/profile.csv",
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
        tests=lambda wildcards: cfg.canonical(
            config["analysis_sets"][wildcards.analysis_set]["ieat"]
        ),
        lists=lambda wildcards: cfg.canonical(
            config["analysis_sets"][wildcards.analysis_set]["bts"]
        ),
        ieat=cfg.canonical(config["analysis"]["ieat"]),
        bts=cfg.canonical(config["analysis"]["bts"]),
        similarity=cfg.canonical(config["analysis"]["similarity"]),
    script:
        "../workflow/scripts/layer_profile.py"


rule summarise_layers:
    input:
        tables=[f"results/layers/{a}/{m}/profile.csv" for a, m in all_pairs()],
    output:
        table="results/summary/layer_profile.csv",
    log:
        "logs/summarise/layer_profile.log",
    benchmark:
        "results/benchmarks/summarise/layer_profile.tsv"
    localrule: True
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        summary="layer_profile",
    script:
        "../workflow/scripts/summarise.py"


rule plot_layers:
    input:
        profile="results/layers/{analysis_set}/{model}/profile.csv",
    output:
        png=report(
            "results/figures/{analysis_set}/{model}/layers.png",
            caption="../workflow/report/layers.rst",
            category="Analysis set {analysis_set}",
            subcategory="{model}",
            labels={"model": "{model}", "figure": "layer profile"},
        ),
        pdf="results/figures/{analysis_set}/{model}/layers.pdf",
    log:
        "logs/report/plot_layers/{analysis_set}/{model}.log",
    benchmark:
        "results/benchmarks/report/plot_layers/{analysis_set}/{model}.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "../workflow/scripts/plot_layers.py"


rule table_layers:
    input:
        summary="results/summary/layer_profile.csv",
    output:
        table=report(
            "results/tables/layers_{analysis_set}.tex",
            caption="../workflow/report/table_layers.rst",
            category="Tables",
            subcategory="Layer profiles",
            labels={
                "analysis set": "{analysis_set}",
                "table": "iEAT and BTS by layer",
            },
        ),
    log:
        "logs/report/table_layers/{analysis_set}.log",
    benchmark:
        "results/benchmarks/report/table_layers/{analysis_set}.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "../workflow/scripts/table_layers.py"
