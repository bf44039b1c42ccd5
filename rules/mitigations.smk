# Mitigation arms (datasets of kind mitigation; docs/finetuning.md, biastransfer.train.methods): the splits
# of `from` under the arm's name, finetuned with a mitigation method for every model and seed, then
# embedded, predicted and reported like any dataset. group_dro, domain_independent and adversarial train
# over epochs (rule finetune_method); dfr and leace refit the last layer of the plain network of `from`
# with the same model and seed (rule refit_method: no epochs, so no trajectory).


wildcard_constraints:
    mitigation=names_pattern(PLAN.mitigations),


# Local: a copy of a small file.
rule mitigation_split:
    input:
        source=mitigation_source_file("split"),
    output:
        split_out=path("split", dataset="{mitigation}", split="{split}"),
    log:
        "logs/mitigation_split/{mitigation}/{split}.log",
    benchmark:
        "results/benchmarks/mitigation_split/{mitigation}/{split}.tsv"
    wildcard_constraints:
        split="train|val|test",
    localrule: True
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        **RESOURCES["small"],
    script:
        "../workflow/scripts/mitigation_split.py"


rule mitigation_attributes:
    input:
        source=mitigation_source_file("split"),
        attributes=mitigation_source_file("attributes"),
        split_copy=path("split", dataset="{mitigation}", split="{split}"),
    output:
        attributes_out=path("attributes", dataset="{mitigation}", split="{split}"),
    log:
        "logs/mitigation_attributes/{mitigation}/{split}.log",
    benchmark:
        "results/benchmarks/mitigation_attributes/{mitigation}/{split}.tsv"
    wildcard_constraints:
        split="train|val|test",
    localrule: True
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        **RESOURCES["small"],
    script:
        "../workflow/scripts/mitigation_attributes.py"


rule finetune_method:
    input:
        leakage_checks(),
        unpack(finetune_cache),
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
    wildcard_constraints:
        dataset=names_pattern(PLAN.loop_mitigations),
    conda:
        "../envs/torch.yaml"
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
        method=lambda wildcards: PLAN.method_of(wildcards.dataset),
        resume="results/finetune/{dataset}/{model}/seed{seed}.resume.pt",
        device=config["finetune"]["device"],
        num_workers=config["finetune"]["num_workers"],
    script:
        "../workflow/scripts/finetune.py"


# DFR and LEACE: the plain network of `from` (same model and seed) with its last layer refitted; its
# backbone's tensors are the plain network's (LEACE appends the eraser).
rule refit_method:
    input:
        leakage_checks(),
        unpack(finetune_cache),
        unpack(finetune_attributes),
        weights=lambda wildcards: PLAN.pretrained_weights(wildcards.model),
        start=lambda wildcards: path(
            "finetune_run",
            dataset=PLAN.source_of(wildcards.dataset),
            model=wildcards.model,
            seed=wildcards.seed,
            file="model.safetensors",
        ),
        train=path("split", split="train"),
        val=path("split", split="val"),
    output:
        trained=path("finetune_run", file="model.safetensors"),
        metrics=path("finetune_run", file="metrics.json"),
        curve=path("finetune_run", file="curve.csv"),
    log:
        "logs/finetune/{dataset}/{model}/seed{seed}.log",
    benchmark:
        "results/benchmarks/finetune/{dataset}/{model}/seed{seed}.tsv"
    wildcard_constraints:
        dataset=names_pattern(PLAN.head_only_mitigations),
    conda:
        "../envs/torch.yaml"
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
        method=lambda wildcards: PLAN.method_of(wildcards.dataset),
        device=config["finetune"]["device"],
        num_workers=config["finetune"]["num_workers"],
    script:
        "../workflow/scripts/finetune.py"
