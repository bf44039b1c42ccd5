# Flat params but synthetic_test_split's: a new shape would retrain on the files they write (upgrading users).
# Synthetic planted-bias datasets and analysis sets (config `kind: synthetic`, `source: synthetic`). The
# rules for real data (rules/real_data.smk) write the same files for their kinds. Both are local rules:
# each takes a few seconds, less than a cluster job's own start-up and status polling.


rule synthetic_dataset:
    output:
        images=directory("results/data/{synthetic}/images"),
        train=path("split", dataset="{synthetic}", split="train"),
        val=path("split", dataset="{synthetic}", split="val"),
    log:
        "logs/synthetic_dataset/{synthetic}.log",
    benchmark:
        "results/benchmarks/synthetic_dataset/{synthetic}.tsv"
    localrule: True
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=20,
    # less the test split's size (rule synthetic_test_split): resizing it redraws no training scene
    params:
        spec=lambda wildcards: cfg.canonical(
            {
                k: v
                for k, v in config["datasets"][wildcards.synthetic].items()
                if k != "n_test"
            }
        ),
    script:
        "../workflow/scripts/synthetic_dataset.py"


rule synthetic_analysis_set:
    output:
        manifest=path("manifest", analysis_set="{synthetic_set}"),
        images=directory("results/data/analysis/{synthetic_set}"),
    log:
        "logs/synthetic_analysis_set/{synthetic_set}.log",
    benchmark:
        "results/benchmarks/synthetic_analysis_set/{synthetic_set}.tsv"
    localrule: True
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        **RESOURCES["plot"],
    # only what shapes the images: editing the set's iEATs or BTS lists reruns nothing here
    params:
        classes=lambda wildcards: config["analysis_sets"][wildcards.synthetic_set][
            "classes"
        ],
        n_per_class=lambda wildcards: config["analysis_sets"][wildcards.synthetic_set][
            "n_per_class"
        ],
        size=lambda wildcards: config["analysis_sets"][wildcards.synthetic_set]["size"],
        seed=lambda wildcards: config["analysis_sets"][wildcards.synthetic_set]["seed"],
    script:
        "../workflow/scripts/synthetic_analysis_set.py"


# The evaluation split of a synthetic dataset (datasets.<name>.n_test fresh scenes, its own seed stream)
# and each image's protected attribute (the drawn figure): what the networks' predictions are measured on
# (rules/predictions.smk). A rule of its own, so that adding or resizing it redraws no training scene.
rule synthetic_test_split:
    input:
        train=path("split", dataset="{synthetic}", split="train"),
        val=path("split", dataset="{synthetic}", split="val"),
    output:
        images=directory("results/data/{synthetic}/test_images"),
        test=path("split", dataset="{synthetic}", split="test"),
        attributes=path("attributes", dataset="{synthetic}", split="test"),
    log:
        "logs/synthetic_test_split/{synthetic}.log",
    benchmark:
        "results/benchmarks/synthetic_test_split/{synthetic}.tsv"
    localrule: True
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        **RESOURCES["plot"],
    params:
        settings=lambda wildcards: PLAN.settings("synthetic_test_split", wildcards),
    script:
        "../workflow/scripts/synthetic_test_split.py"


# The protected attribute of each training image of a synthetic dataset (the drawn figure, from the
# generator's own draws): what an intervention (kind intervention, rules/interventions.smk) rebalances.
rule synthetic_train_attributes:
    input:
        train=path("split", dataset="{synthetic}", split="train"),
    output:
        attributes=path("attributes", dataset="{synthetic}", split="train"),
    log:
        "logs/synthetic_train_attributes/{synthetic}.log",
    benchmark:
        "results/benchmarks/synthetic_train_attributes/{synthetic}.tsv"
    localrule: True
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        **RESOURCES["small"],
    params:
        spec=lambda wildcards: cfg.canonical(
            {
                k: v
                for k, v in config["datasets"][wildcards.synthetic].items()
                if k != "n_test"
            }
        ),
    script:
        "../workflow/scripts/synthetic_train_attributes.py"


# The protected attribute of each validation image of a synthetic dataset (the drawn figure): the groups of
# the worst-group validation mAP of its finetunings and its mitigation arms (rules/mitigations.smk).
rule synthetic_val_attributes:
    input:
        val=path("split", dataset="{synthetic}", split="val"),
    output:
        attributes=path("attributes", dataset="{synthetic}", split="val"),
    log:
        "logs/synthetic_val_attributes/{synthetic}.log",
    benchmark:
        "results/benchmarks/synthetic_val_attributes/{synthetic}.tsv"
    localrule: True
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        **RESOURCES["small"],
    params:
        spec=lambda wildcards: cfg.canonical(
            {
                k: v
                for k, v in config["datasets"][wildcards.synthetic].items()
                if k != "n_test"
            }
        ),
    script:
        "../workflow/scripts/synthetic_val_attributes.py"
