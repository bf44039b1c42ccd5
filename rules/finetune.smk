# Flat params here: a new params shape would rerun every finished finetuning of an upgrading user.
# Finetune every model on every target dataset with every seed (multi-label BCE, validation each epoch).
# Resumable: the last epoch's state is kept beside (not inside) the declared outputs, since Snakemake
# deletes declared outputs before a job runs. Recipe, per-model settings and GPU notes: docs/finetuning.md.
# With finetune.trajectory, the job also embeds every analysis set after the chosen epochs (one folder of
# epochNN.parquet per analysis set; rules/trajectory.smk analyses them).


rule finetune:
    input:
        leakage_checks(),
        unpack(finetune_cache),
        unpack(finetune_sample_weights),
        unpack(finetune_attributes),
        **trajectory_io("input"),
        weights=lambda wildcards: PLAN.pretrained_weights(wildcards.model),
        train=path("split", split="train"),
        val=path("split", split="val"),
    output:
        **trajectory_io("output"),
        trained=path("finetune_run", file="model.safetensors"),
        metrics=path("finetune_run", file="metrics.json"),
        curve=path("finetune_run", file="curve.csv"),
    log:
        "logs/finetune/{dataset}/{model}/seed{seed}.log",
    benchmark:
        "results/benchmarks/finetune/{dataset}/{model}/seed{seed}.tsv"
    # a mitigation arm: rules/mitigations.smk
    wildcard_constraints:
        dataset=names_pattern(PLAN.plain_datasets),
    conda:
        "../envs/torch.yaml"
    # the training process plus its image-decoding loader workers
    threads: config["finetune"]["num_workers"] + 1
    resources:
        mem_mb=finetune_mem_mb,
        runtime=finetune_runtime,
        gpu=FINETUNE_GPUS,
    params:
        entry=lambda wildcards: PLAN.network_entry(wildcards.model),
        hyper=lambda wildcards: cfg.finetune_params(
            config, wildcards.model, wildcards.dataset
        ),
        resume="results/finetune/{dataset}/{model}/seed{seed}.resume.pt",
        device=config["finetune"]["device"],
        num_workers=config["finetune"]["num_workers"],
    script:
        "../workflow/scripts/finetune.py"


rule finetune_summary:
    input:
        metrics=PLAN.finetune_runs(),
    output:
        table=PLAN.summary("finetune_metrics"),
    log:
        "logs/finetune_summary.log",
    benchmark:
        "results/benchmarks/finetune_summary.tsv"
    localrule: True
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        **RESOURCES["small"],
    script:
        "../workflow/scripts/finetune_summary.py"
