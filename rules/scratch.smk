# Flat params here: a new params shape would rerun every finished scratch training of an upgrading user.
# The reference for the Bias Transfer Score (analysis.bts.reference: scratch): each model's architecture
# trained from random initialisation on a finetuning dataset with the finetuning recipe (hyper-parameters
# and seed), so that rho(pretrained, finetuned) can be read beside rho(scratch, finetuned): how much of
# the finetuned ranking the target data alone gives. Embedded as stage scratch-{dataset}-seed{seed}.


rule train_scratch:
    input:
        leakage_checks(),
        after_pretraining,
        unpack(finetune_cache),
        train=path("split", split="train"),
        val=path("split", split="val"),
    output:
        trained=path("scratch_run", file="model.safetensors"),
        metrics=path("scratch_run", file="metrics.json"),
    log:
        "logs/scratch/{dataset}/{model}/seed{seed}.log",
    benchmark:
        "results/benchmarks/scratch/{dataset}/{model}/seed{seed}.tsv"
    conda:
        "../envs/torch.yaml"
    threads: config["finetune"]["num_workers"] + 1
    resources:
        mem_mb=finetune_mem_mb,
        runtime=finetune_runtime,
        gpu=FINETUNE_GPUS,
    params:
        entry=lambda wildcards: PLAN.network_entry(wildcards.model),
        hyper=lambda wildcards: {
            **cfg.finetune_params(config, wildcards.model, wildcards.dataset),
            "seed": int(wildcards.seed),
        },
        device=config["finetune"]["device"],
        num_workers=config["finetune"]["num_workers"],
    script:
        "../workflow/scripts/pretrain.py"
