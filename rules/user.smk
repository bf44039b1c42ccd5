# Your own images as analysis sets (config `source: folder | table`): every listed file is hashed and
# opened, and every bad file or row is named, before any training or embedding job (they all wait
# for the manifest through the leakage checks). A table finetuning dataset (`kind: table`) goes through
# the real-dataset rules of rules/datasets.smk. Module: biastransfer.data.user.


rule user_analysis_set:
    input:
        user_set_inputs,
    output:
        manifest="results/analysis_sets/{user_set}/manifest.parquet",
    log:
        "logs/user_analysis_set/{user_set}.log",
    benchmark:
        "results/benchmarks/user_analysis_set/{user_set}.tsv"
    wildcard_constraints:
        user_set=names_pattern(USER_SETS),
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
