# The link across levels (analysis.predictions; docs/statistics.md): each iEAT whose one pair is a finetuning
# dataset's protected attributes and the other two of its tasks, per network (finetuned and scratch, every
# model and seed), its embedding-level d beside the prediction-level bias of the same objects, and across the
# networks the rank correlation of the two with an interval and a verdict; its table and figure per dataset.
# After rules/report.smk (IEAT_SCRATCH).
LINKED = combinations(dataset=PLAN.predicted_datasets)
table_artefact(
    "link",
    PLAN.summary("link"),
    "results/tables/link_{dataset}",
    inputs={"correlation": PLAN.summary("link_correlation")},
    caption="table_link.rst",
    section="Prediction-level bias",
    title="Embedding d beside the predictions' bias, finetuned on {dataset}",
    instances=LINKED,
)
report_artefact(
    "link_figure",
    "link_figure.rst",
    kind="figure",
    section="Prediction-level bias",
    title="Embedding d against the predictions' contrast, finetuned on {dataset}",
    files={ext: f"results/figures/link_{{dataset}}.{ext}" for ext in ("png", "pdf")},
    instances=LINKED,
)


rule link:
    input:
        ieat=PLAN.summary("ieat"),
        ieat_scratch=IEAT_SCRATCH,
        change=PLAN.summary("ieat_change"),
        terms=PLAN.summary("amplification_terms"),
        splits=[path("split", dataset=d, split="test") for d in PLAN.predicted_datasets],
        attributes=[
            path("attributes", dataset=d, split="test")
            for d in PLAN.predicted_datasets
        ],
        predictions=PLAN.prediction_files(),
    output:
        table=PLAN.summary("link"),
        correlation=PLAN.summary("link_correlation"),
    log:
        "logs/link.log",
    benchmark:
        "results/benchmarks/link.tsv"
    localrule: True
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        **RESOURCES["predictions"],
    params:
        settings=PLAN.settings("link"),
    script:
        "../workflow/scripts/link.py"


rule plot_link:
    input:
        table=PLAN.summary("link"),
        correlation=PLAN.summary("link_correlation"),
    output:
        **artefact_outputs("link_figure"),
    log:
        "logs/report/plot_link/{dataset}.log",
    benchmark:
        "results/benchmarks/report/plot_link/{dataset}.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        **RESOURCES["plot"],
    script:
        "../workflow/scripts/plot_link.py"
