# Paired comparisons between two finetuning arms of each model (analysis.comparisons; docs/finetuning.md):
# every finetuned dataset with a `from` (an intervention) against its source, and each declared
# {arm, against}. Per pair, analysis set and model, the paired change of d per seed (images as units) and
# over seeds (seeds as units); then one summary (results/summary/comparison.csv) that adds both arms' BTS,
# representation leakage, prediction shift and validation metric side by side, with their changes, and one
# table and figure across the pairs.
COMPARED = sorted({d for pair in PLAN.comparisons for d in pair})


wildcard_constraints:
    arm=names_pattern(COMPARED),
    against=names_pattern(COMPARED),


table_artefact(
    "arm_comparison",
    PLAN.summary("comparison"),
    "results/tables/arm_comparison",
    caption="table_arm_comparison.rst",
    section="Comparisons between finetuning arms",
    title="Each arm against what it is compared with: d, prediction shift and validation metric",
    instances=[{}] if PLAN.comparisons else [],
)
report_artefact(
    "arm_comparison_figure",
    "arm_comparison_figure.rst",
    kind="figure",
    section="Comparisons between finetuning arms",
    title="Change in the representation against change in the predictions, per arm",
    files={ext: f"results/figures/arm_comparison.{ext}" for ext in ("png", "pdf")},
    instances=[{}] if PLAN.comparisons else [],
)


rule comparison_change:
    input:
        against_embeddings=comparison_embeddings("against"),
        arm_embeddings=comparison_embeddings("arm"),
    output:
        table=path("comparison_change"),
    log:
        "logs/comparison_change/{arm}_vs_{against}/{analysis_set}/{model}.log",
    benchmark:
        "results/benchmarks/comparison_change/{arm}_vs_{against}/{analysis_set}/{model}.tsv"
    group:
        MODEL_STATS_GROUP
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        **RESOURCES["stats"],
    params:
        settings=lambda wildcards: PLAN.settings("comparison_change", wildcards),
    script:
        "../workflow/scripts/comparison_change.py"


rule comparison_summary:
    input:
        changes=comparison_changes(PLAN.comparisons),
        metrics=[
            path("finetune_run", dataset=d, model=m, seed=s, file="metrics.json")
            for d in COMPARED
            for m in PLAN.models
            for s in PLAN.finetune_seeds(d)
        ],
        bts=PLAN.summaries("bts"),
        amplification=PLAN.summaries("amplification"),
        link=PLAN.summaries("link"),
    output:
        summary=PLAN.summary("comparison"),
    log:
        "logs/comparison_summary.log",
    benchmark:
        "results/benchmarks/comparison_summary.tsv"
    localrule: True
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        **RESOURCES["gather"],
    params:
        settings=PLAN.settings("comparison_summary"),
    script:
        "../workflow/scripts/comparison_summary.py"


rule plot_comparison:
    input:
        summary=PLAN.summary("comparison"),
    output:
        **artefact_outputs("arm_comparison_figure"),
    log:
        "logs/report/plot_comparison.log",
    benchmark:
        "results/benchmarks/report/plot_comparison.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        **RESOURCES["plot"],
    script:
        "../workflow/scripts/plot_comparison.py"
