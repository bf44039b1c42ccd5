# Figures, LaTeX tables and the comparison with the paper's published numbers: each declared once as a
# report artefact (rules/artefacts.smk), from which rule all's targets, the static report's items and the
# outputs marked for `snakemake --report` (grouped by analysis set and model, with a caption that says how
# to read it) all come. The tables' rules are in rules/tables.smk.
# Config section `report:` (defaults in the schema): control_class, p_adjust (holm | bh), alpha (of the
# comparison with the paper only), tolerances ({measure: largest |ours - paper| called agreement}),
# ieat_targets ([X, Y] of the paper's iEAT). Each rule's settings: biastransfer.workflow.rules.report (the
# run's one significance rule, report.formatting.Significance: analysis.ieat.alpha on the p-values adjusted by
# report.p_adjust within each table; every star, verdict, legend and caption reads it).

# The scratch reference networks' iEATs (the target data alone), beside the finetuned rows of the iEAT tables
IEAT_SCRATCH = PLAN.summaries("ieat_scratch")

ANALYSED = combinations(analysis_set=config["analysis_sets"], model=config["models"])
FINETUNED = combinations(dataset=config["finetune"]["datasets"], model=config["models"])

for name, title in (
    ("intra", "Intra-class similarity"),
    ("inter", "Inter-class similarity"),
    ("person", "Object with each person group vs the object alone (Fig. 3)"),
    ("rank", "Ranks before vs after finetuning"),
):
    report_artefact(
        name,
        f"{name}.rst",
        kind="figure",
        section="Analysis set {analysis_set}",
        subsection="{model}",
        title=title,
        files={
            "png": f"results/figures/{{analysis_set}}/{{model}}/{name}.png",
            "pdf": f"results/figures/{{analysis_set}}/{{model}}/{name}.pdf",
        },
        instances=ANALYSED,
    )
report_artefact(
    "contact_sheet",
    "contact_sheet.rst",
    kind="figure",
    section="Analysis set {analysis_set}",
    title="Example images per class",
    files={
        ext: f"results/figures/{{analysis_set}}/contact_sheet.{ext}"
        for ext in ("png", "pdf", "csv")
    },
    instances=combinations(analysis_set=config["analysis_sets"]),
)
report_artefact(
    "curves",
    "curves.rst",
    kind="figure",
    section="Finetuning",
    title="Training curves of {model} finetuned on {dataset}",
    files={
        ext: f"results/figures/curves/{{dataset}}/{{model}}.{ext}"
        for ext in ("png", "pdf")
    },
    instances=FINETUNED,
)
report_artefact(
    "scratch_curves",
    "scratch_curves.rst",
    kind="figure",
    section="Finetuning",
    title="Training curves of {model} trained from scratch on {dataset} (the BTS reference)",
    files={
        ext: f"results/figures/scratch_curves/{{dataset}}/{{model}}.{ext}"
        for ext in ("png", "pdf")
    },
    instances=[i for i in FINETUNED if cfg.reference_seeds(config, i["dataset"])],
)
# One forest plot of every iEAT, or, beyond report.artefacts.FOREST_ROWS rows, one per analysis set
# (PLAN.forest_sets), each linked from the landing page.
report_artefact(
    "ieat_forest",
    "ieat_forest.rst",
    kind="figure",
    section="iEAT",
    title="Effect sizes with their intervals, every network"
    + (", {analysis_set}" if PLAN.forest_sets else ""),
    files={
        ext: f"results/figures/ieat_forest{'_{analysis_set}' if PLAN.forest_sets else ''}.{ext}"
        for ext in ("png", "pdf", "svg")
    },
    **(
        {"instances": combinations(analysis_set=PLAN.forest_sets)}
        if PLAN.forest_sets
        else {}
    ),
)
for name, title in (
    ("ieat_heatmap", "Effect sizes, all models"),
    ("ieat_change", "Change from pretrained, all models"),
):
    report_artefact(
        name,
        f"{name}.rst",
        kind="figure",
        section="iEAT",
        title=title,
        files={ext: f"results/figures/{name}.{ext}" for ext in ("png", "pdf")},
    )
table_artefact(
    "ieat",
    PLAN.summary("ieat"),
    "results/tables/ieat_{analysis_set}",
    caption="table_ieat.rst",
    inputs={"scratch": IEAT_SCRATCH},
    section="iEAT",
    title="iEAT on {analysis_set}",
    instances=combinations(analysis_set=config["analysis_sets"]),
)
table_artefact(
    "bts",
    PLAN.summary("bts"),
    "results/tables/bts_{analysis_set}_ft-{dataset}",
    caption="table_bts.rst",
    inputs={"cka": PLAN.summary("cka")},
    section="Bias transfer scores",
    title="BTS on {analysis_set}, finetuned on {dataset}",
    instances=combinations(
        analysis_set=config["analysis_sets"], dataset=config["finetune"]["datasets"]
    ),
)
table_artefact(
    "finetune",
    PLAN.summary("finetune_metrics"),
    "results/tables/finetune_{dataset}",
    caption="table_finetune.rst",
    section="Finetuning",
    title="Finetuning on {dataset}",
    instances=combinations(dataset=config["finetune"]["datasets"]),
)
table_artefact(
    "analysis_set",
    PLAN.summary("analysis_sets"),
    "results/tables/analysis_set_{analysis_set}",
    caption="table_analysis_set.rst",
    section="Analysis sets",
    title="Analysis set {analysis_set}",
    instances=combinations(analysis_set=config["analysis_sets"]),
)
report_artefact(
    "comparison",
    "comparison.rst",
    kind="table",
    section="Comparison with the paper",
    title="Ours vs published",
    files={
        "csv": "results/comparison/paper_comparison.csv",
        "document": "results/comparison/paper_comparison.tex",
    },
)


rule html_report:
    input:
        # every item's files and captions (read through params.shown)
        lambda wildcards: [
            f for item in ARTEFACTS.items() for f in item["files"].values()
        ],
        lambda wildcards: sorted({item["caption"] for item in ARTEFACTS.items()}),
        # every summary this run writes: the results model (results.json) and the landing page read them
        summaries=PLAN.summaries(*PLAN.written_summaries),
        findings="results/summary/findings.rst",
        citation=os.path.join(BASEDIR, "CITATION.cff"),
        # the training runs, for whether each converged
        curves=PLAN.finetune_runs("curve.csv"),
        scratch=PLAN.scratch_runs(),
        # the files the captions cite, copied into the report and its bundle: every summary of the run, its
        # filled config (config.rst), the finetuning curves (curves.rst) and the per-model layer profiles (layers.rst)
        cited=[
            *PLAN.summaries(*PLAN.written_summaries),
            "results/summary/config.yaml",
            *PLAN.finetune_runs("curve.csv"),
            *(
                path("layer_profile", analysis_set=a, model=m)
                for a in PLAN.analysis_sets
                for m in PLAN.models
                if PLAN.layers_on
            ),
        ],
    output:
        index="results/report/index.html",
        pages=[
            f"results/report/{page}.html"
            for page in ("findings", "tables", "figures", "provenance", "glossary")
        ],
        files=directory("results/report/files"),
        verdicts="results/summary/results.json",
        bundle="results/report.zip",
    log:
        "logs/report/html_report.log",
    benchmark:
        "results/benchmarks/report/html_report.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        **RESOURCES["small"],
    # settings from the config; shown: the artefacts the rule files declare (rules/artefacts.smk)
    params:
        settings=PLAN.settings("html_report"),
        shown=lambda wildcards: ARTEFACTS.items(),
    script:
        "../workflow/scripts/html_report.py"


rule plot_similarity:
    input:
        similarity=PLAN.summary("similarity"),
        bts=PLAN.summary("bts"),
        change=PLAN.summary("similarity_change"),
    output:
        **artefact_outputs("intra", "inter", "rank", "person", prefixed=True),
    log:
        "logs/report/plot_similarity/{analysis_set}/{model}.log",
    benchmark:
        "results/benchmarks/report/plot_similarity/{analysis_set}/{model}.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        **RESOURCES["plot"],
    params:
        settings=lambda wildcards: PLAN.settings("plot_similarity", wildcards),
    script:
        "../workflow/scripts/plot_similarity.py"


rule plot_contact_sheet:
    input:
        manifest=path("manifest"),
    output:
        **artefact_outputs("contact_sheet"),
    log:
        "logs/report/plot_contact_sheet/{analysis_set}.log",
    benchmark:
        "results/benchmarks/report/plot_contact_sheet/{analysis_set}.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        **RESOURCES["plot"],
    params:
        settings=PLAN.settings("plot_contact_sheet"),
    script:
        "../workflow/scripts/plot_contact_sheet.py"


rule plot_curves:
    input:
        curves=lambda w: [
            path(
                "finetune_run",
                dataset=w.dataset,
                model=w.model,
                seed=s,
                file="curve.csv",
            )
            for s in cfg.finetune_seeds(config, w.dataset)
        ],
        metrics=lambda w: [
            path(
                "finetune_run",
                dataset=w.dataset,
                model=w.model,
                seed=s,
                file="metrics.json",
            )
            for s in cfg.finetune_seeds(config, w.dataset)
        ],
    output:
        **artefact_outputs("curves"),
    log:
        "logs/report/plot_curves/{dataset}/{model}.log",
    benchmark:
        "results/benchmarks/report/plot_curves/{dataset}/{model}.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        **RESOURCES["plot"],
    params:
        settings=PLAN.settings("plot_curves"),
    script:
        "../workflow/scripts/plot_curves.py"


rule plot_scratch_curves:
    input:
        metrics=lambda w: [
            path(
                "scratch_run",
                dataset=w.dataset,
                model=w.model,
                seed=s,
                file="metrics.json",
            )
            for s in cfg.reference_seeds(config, w.dataset)
        ],
    output:
        **artefact_outputs("scratch_curves"),
    log:
        "logs/report/plot_scratch_curves/{dataset}/{model}.log",
    benchmark:
        "results/benchmarks/report/plot_scratch_curves/{dataset}/{model}.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        **RESOURCES["plot"],
    params:
        settings=PLAN.settings("plot_scratch_curves"),
    script:
        "../workflow/scripts/plot_curves.py"


rule plot_ieat:
    input:
        ieat=PLAN.summary("ieat"),
        scratch=IEAT_SCRATCH,
    output:
        **artefact_outputs("ieat_heatmap"),
    log:
        "logs/report/plot_ieat.log",
    benchmark:
        "results/benchmarks/report/plot_ieat.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        **RESOURCES["plot"],
    params:
        settings=PLAN.settings("plot_ieat"),
    script:
        "../workflow/scripts/plot_ieat.py"


rule plot_forest:
    input:
        ieat=PLAN.summary("ieat"),
        scratch=IEAT_SCRATCH,
    output:
        **artefact_outputs("ieat_forest"),
    log:
        f"logs/report/plot_forest{'_{analysis_set}' if PLAN.forest_sets else ''}.log",
    benchmark:
        f"results/benchmarks/report/plot_forest{'_{analysis_set}' if PLAN.forest_sets else ''}.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        **RESOURCES["plot"],
    params:
        settings=PLAN.settings("plot_forest"),
    script:
        "../workflow/scripts/plot_forest.py"


rule plot_change:
    input:
        change=PLAN.summary("ieat_change"),
    output:
        **artefact_outputs("ieat_change"),
    log:
        "logs/report/plot_change.log",
    benchmark:
        "results/benchmarks/report/plot_change.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        **RESOURCES["plot"],
    script:
        "../workflow/scripts/plot_change.py"


rule compare_paper:
    input:
        reference=os.path.join(BASEDIR, "resources", "paper_reference.csv"),
        bts=PLAN.summary("bts"),
        ieat=PLAN.summary("ieat"),
        finetune_metrics=PLAN.summary("finetune_metrics"),
        analysis_sets=PLAN.summary("analysis_sets"),
    output:
        **artefact_outputs("comparison"),
    log:
        "logs/report/compare_paper.log",
    benchmark:
        "results/benchmarks/report/compare_paper.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        **RESOURCES["small"],
    params:
        settings=PLAN.settings("compare_paper"),
    script:
        "../workflow/scripts/compare_paper.py"
