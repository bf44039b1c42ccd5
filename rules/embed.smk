# Embed every analysis image with the pretrained model and with each finetuned checkpoint.


rule embed:
    input:
        ancient("results/checks/leakage/{analysis_set}.ok"),
        manifest="results/analysis_sets/{analysis_set}/manifest.parquet",
        weights=stage_weights,
    output:
        embeddings="results/embeddings/{analysis_set}/{model}/{stage}.parquet",
    log:
        "logs/embed/{analysis_set}/{model}/{stage}.log",
    benchmark:
        "results/benchmarks/embed/{analysis_set}/{model}/{stage}.tsv"
    group:
        EMBEDDING_GROUP
    conda:
        "../envs/torch.yaml"
    threads: config["analysis"]["embed"]["num_workers"] + 1
    resources:
        mem_mb=embed_mem_mb,
        runtime=lambda wildcards, attempt: 30 * attempt,
        gpu=lambda wildcards: int(config["analysis"]["embed"]["device"] == "cuda"),
    params:
        entry=lambda wildcards: cfg.canonical(network_entry(wildcards.model)),
        batch_size=embed_batch_size,
        num_workers=config["analysis"]["embed"]["num_workers"],
        device=config["analysis"]["embed"]["device"],
    script:
        "../workflow/scripts/embed.py"
