# Flat params here: a new params shape would rerun an upgrading user's pretraining and weights downloads.
# Pretrained weights: trained here for the synthetic demo's models (source: workflow), fetched otherwise.


rule pretrain:
    input:
        leakage_checks(),
        unpack(pretrain_inputs),
    output:
        trained=path("pretrain_run", file="model.safetensors"),
        metrics=path("pretrain_run", file="metrics.json"),
    log:
        "logs/pretrain/{model}.log",
    benchmark:
        "results/benchmarks/pretrain/{model}.tsv"
    wildcard_constraints:
        model=names_pattern(PLAN.workflow_models),
    conda:
        "../envs/torch.yaml"
    threads: 2
    resources:
        mem_mb=lambda wildcards, attempt: 4000 * attempt,
        runtime=lambda wildcards, attempt: 60 * attempt,
        gpu=FINETUNE_GPUS,
    params:
        entry=lambda wildcards: PLAN.network_entry(wildcards.model),
        hyper=lambda wildcards: cfg.pretrain_params(config, wildcards.model),
        device=config["finetune"]["device"],
        num_workers=config["finetune"]["num_workers"],
    script:
        "../workflow/scripts/pretrain.py"


rule fetch_weights:
    output:
        weights="results/weights/{model}/weights.done",
    log:
        "logs/fetch_weights/{model}.log",
    benchmark:
        "results/benchmarks/fetch_weights/{model}.tsv"
    wildcard_constraints:
        model=names_pattern(
            [m for m in config["models"] if m not in PLAN.workflow_models]
        ),
    retries: 2
    localrule: True
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        **RESOURCES["download"],
    params:
        entry=lambda wildcards: PLAN.network_entry(wildcards.model),
        cache_dir=config["weights"]["cache_dir"],
        mirror=config["weights"]["mirror"],
    script:
        "../workflow/scripts/fetch_weights.py"
