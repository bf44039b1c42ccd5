# Synthetic planted-bias datasets and analysis sets, and the leakage check for every analysis set.
# The rules for COCO and Open Images (rules/datasets.smk) write the same files for kind coco/openimages.
# All three are local rules: each takes a few seconds (the leakage check compares ids and digests
# already recorded in the tables), less than a cluster job's own start-up and status polling.


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
    params:
        spec=lambda wildcards: cfg.canonical(config["datasets"][wildcards.synthetic]),
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


rule check_leakage:
    input:
        manifest=path("manifest"),
        splits=leakage_inputs,
    output:
        ok=path("leakage_check"),
    log:
        "logs/check_leakage/{analysis_set}.log",
    benchmark:
        "results/benchmarks/check_leakage/{analysis_set}.tsv"
    localrule: True
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        **RESOURCES["stats"],
    params:
        # Synthetic and table (your own) images are compared by file hash too; COCO and Open Images
        # by their own image ids (hashing all of COCO train2017 would read 18 GB).
        hash_files=[
            path("split", dataset=d, split=split)
            for d in cfg.training_datasets(config)
            if config["datasets"][d]["kind"] in ("synthetic", "table")
            for split in ("train", "val")
        ],
    script:
        "../workflow/scripts/check_leakage.py"


rule analysis_set_summary:
    input:
        manifests=expand(
            path("manifest"),
            analysis_set=config["analysis_sets"],
        ),
    output:
        table="results/summary/analysis_sets.csv",
    log:
        "logs/analysis_set_summary.log",
    benchmark:
        "results/benchmarks/analysis_set_summary.tsv"
    localrule: True
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        **RESOURCES["small"],
    params:
        analysis_sets=lambda wildcards: {
            a: s.get("dataset") or s["source"]
            for a, s in config["analysis_sets"].items()
        },
    script:
        "../workflow/scripts/analysis_set_summary.py"
