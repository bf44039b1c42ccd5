# Embed every analysis image with every network of a model: pretrained, each finetuned seed (interventions'
# included) and each scratch reference network. One job per analysis set and model (PLAN.embedded_stages):
# the networks run side by side on each batch, so each image is read and decoded once and torch is imported
# once; each network's file is results/embeddings/{analysis_set}/{model}/{stage}.parquet with its own
# provenance. A changed checkpoint reruns the whole job, and what reads any of its files (README.md,
# "Rerunning one piece").


rule embed:
    input:
        ancient(path("leakage_check")),
        manifest=path("manifest"),
        # one per network, in the order of PLAN.embedded_stages (the stages of the job's settings)
        weights=lambda wildcards: [
            PLAN.stage_weights(wildcards.model, s) for s in PLAN.embedded_stages
        ],
    output:
        embeddings=[path("embeddings", stage=s) for s in PLAN.embedded_stages],
    log:
        "logs/embed/{analysis_set}/{model}.log",
    benchmark:
        "results/benchmarks/embed/{analysis_set}/{model}.tsv"
    # first of the jobs that wait for the trained networks: most of the analyses and the report follow it
    priority: 1
    group:
        EMBEDDING_GROUP
    conda:
        "../envs/torch.yaml"
    threads: config["analysis"]["embed"]["num_workers"] + 1
    resources:
        **network_resources(len(PLAN.embedded_stages)),
    params:
        settings=lambda wildcards: PLAN.settings("embed", wildcards),
    script:
        "../workflow/scripts/embed.py"
