# The link across levels (analysis.predictions; docs/statistics.md): each iEAT whose one pair is a finetuning
# dataset's protected attributes and the other two of its tasks, per network (finetuned and scratch, every
# model and seed), its embedding-level d beside the prediction-level bias of the same objects, and across the
# networks the rank correlation of the two with an interval and a verdict; its table and figure per dataset.
# After rules/report.smk (IEAT_SCRATCH).
LINKED = combinations(dataset=PREDICTED_DATASETS)
table_artefact(
    "link",
    "results/summary/link.csv",
    "results/tables/link_{dataset}",
    inputs={"correlation": "results/summary/link_correlation.csv"},
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
        ieat="results/summary/ieat.csv",
        ieat_scratch=IEAT_SCRATCH,
        change="results/summary/ieat_change.csv",
        terms="results/summary/amplification_terms.csv",
        splits=[path("split", dataset=d, split="test") for d in PREDICTED_DATASETS],
        attributes=[
            path("attributes", dataset=d, split="test") for d in PREDICTED_DATASETS
        ],
        predictions=prediction_files(),
    output:
        table="results/summary/link.csv",
        correlation="results/summary/link_correlation.csv",
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
        tests=cfg.canonical({a: s["ieat"] for a, s in config["analysis_sets"].items()}),
        settings=cfg.canonical(
            {
                k: config["analysis"]["predictions"][k]
                for k in ("threshold", "bootstrap", "ci_level", "seed")
            }
        ),
    script:
        "../workflow/scripts/link.py"


rule plot_link:
    input:
        table="results/summary/link.csv",
        correlation="results/summary/link_correlation.csv",
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
