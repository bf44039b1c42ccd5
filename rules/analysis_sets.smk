# Your own images as analysis sets (config `source: folder | table`): every listed file is hashed and
# opened, and every bad file or row is named, before any training or embedding job (they all wait
# for the manifest through the leakage checks). A table finetuning dataset (`kind: table`) goes through
# the real-data rules of rules/real_data.smk. Module: biastransfer.data.user.
# Then, for every analysis set of any source, the leakage check against every training split (a local
# rule: it compares ids and digests already recorded in the tables) and the summary of class sizes.


rule user_analysis_set:
    input:
        user_set_inputs,
    output:
        manifest=path("manifest", analysis_set="{user_set}"),
    log:
        "logs/user_analysis_set/{user_set}.log",
    benchmark:
        "results/benchmarks/user_analysis_set/{user_set}.tsv"
    wildcard_constraints:
        user_set=names_pattern(PLAN.user_sets),
    conda:
        "../envs/data.yaml"
    threads: lambda wildcards: config["analysis_sets"][wildcards.user_set]["workers"]
    resources:
        mem_mb=2000,
        runtime=60,
    # only what shapes the manifest: editing the set's iEATs or BTS lists (or its hashing threads) reruns
    # nothing here, and so no leakage check, training or embedding
    params:
        analysis_set=lambda wildcards: cfg.canonical(
            {
                k: v
                for k, v in config["analysis_sets"][wildcards.user_set].items()
                if k not in ("bts", "ieat", "workers")
            }
        ),
    script:
        "../workflow/scripts/user_analysis_set.py"


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
        ]
        + [
            path("split", dataset=d, split="test")
            for d in PLAN.predicted_datasets
            if config["datasets"][d]["kind"] in ("synthetic", "table")
        ],
        # each evaluation split is checked against its dataset's training splits too
        evaluation=PLAN.evaluation_disjoint(),
    script:
        "../workflow/scripts/check_leakage.py"


rule analysis_set_summary:
    input:
        manifests=expand(
            path("manifest"),
            analysis_set=config["analysis_sets"],
        ),
    output:
        table=PLAN.summary("analysis_sets"),
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
