# Embed every analysis image with the pretrained model and with each finetuned checkpoint.


rule embed:
    input:
        ancient(path("leakage_check")),
        manifest=path("manifest"),
        weights=lambda wildcards: PLAN.stage_weights(wildcards.model, wildcards.stage),
    output:
        embeddings=path("embeddings"),
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
        **RESOURCES["network"],
    params:
        entry=lambda wildcards: PLAN.network_entry(wildcards.model),
        inference=inference_settings,
    script:
        "../workflow/scripts/embed.py"
