# user_analysis_set keeps flat params: a new shape would retrain on its manifest (trajectory on, upgrading users).
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
    # the splits also compared by file hash, and each evaluation split against its training splits
    params:
        settings=PLAN.settings("check_leakage"),
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
        settings=PLAN.settings("analysis_set_summary"),
    script:
        "../workflow/scripts/analysis_set_summary.py"
