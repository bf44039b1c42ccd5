# intervention keeps flat params: a new shape would rerun the finetuning on its split (upgrading users).
# Interventions on the finetuning data (datasets of kind intervention; docs/finetuning.md): the training
# split of `from` rebalanced with respect to each image's protected attribute beside a list of objects,
# finetuned like any dataset, then compared with the untouched finetuning on the same networks and images
# (the pair's comparison tables, rules/comparisons.smk): the paired change of d per seed (images as units)
# and over seeds (seeds as units), and the prediction-level measures side by side
# (results/summary/intervention.csv and its table).


wildcard_constraints:
    intervention=names_pattern(PLAN.interventions),


table_artefact(
    "intervention",
    PLAN.summary("intervention"),
    "results/tables/intervention_{dataset}",
    caption="table_intervention.rst",
    section="Interventions",
    title="The intervention {dataset} against the untouched finetuning",
    instances=combinations(dataset=PLAN.compared_interventions),
)


# Local: a few seconds of table work, less than a cluster job's start-up.
rule intervention:
    input:
        train=intervention_source_file("split", "train"),
        attributes=intervention_source_file("attributes", "train"),
        val=intervention_source_file("split", "val"),
    output:
        train_out=path("split", dataset="{intervention}", split="train"),
        val_out=path("split", dataset="{intervention}", split="val"),
        weights=path("sample_weights", dataset="{intervention}"),
        cooccurrence=path("cooccurrence", dataset="{intervention}"),
    log:
        "logs/intervention/{intervention}.log",
    benchmark:
        "results/benchmarks/intervention/{intervention}.tsv"
    localrule: True
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        **RESOURCES["stats"],
    params:
        # less its switch (on, since it runs)
        spec=lambda wildcards: cfg.canonical(
            {
                k: v
                for k, v in config["datasets"][wildcards.intervention].items()
                if k != "enabled"
            }
        ),
    script:
        "../workflow/scripts/intervention.py"


rule intervention_test_split:
    input:
        test=intervention_source_file("split", "test"),
        attributes=intervention_source_file("attributes", "test"),
    output:
        test_out=path("split", dataset="{intervention}", split="test"),
        attributes_out=path("attributes", dataset="{intervention}", split="test"),
    log:
        "logs/intervention_test_split/{intervention}.log",
    benchmark:
        "results/benchmarks/intervention_test_split/{intervention}.tsv"
    localrule: True
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        **RESOURCES["small"],
    script:
        "../workflow/scripts/intervention_test_split.py"


rule intervention_summary:
    input:
        changes=comparison_changes(
            [(d, PLAN.source_of(d)) for d in PLAN.compared_interventions]
        ),
        cooccurrence=[
            path("cooccurrence", dataset=d) for d in PLAN.compared_interventions
        ],
        amplification=PLAN.summaries("amplification"),
    output:
        summary=PLAN.summary("intervention"),
    log:
        "logs/intervention_summary.log",
    benchmark:
        "results/benchmarks/intervention_summary.tsv"
    localrule: True
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        **RESOURCES["gather"],
    params:
        settings=PLAN.settings("intervention_summary"),
    script:
        "../workflow/scripts/intervention_summary.py"
