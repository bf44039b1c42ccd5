# Figures, LaTeX tables and the comparison with the paper's published numbers, each marked for
# `snakemake --report` (grouped by analysis set and model, with a caption that says how to read it).
# Config section `report:` (defaults in the schema): control_class, p_adjust (holm | bh), alpha,
# tolerances ({measure: largest |ours - paper| called agreement}), ieat_targets ([X, Y] of the paper's iEAT).

REPORT = config["report"]
P_ADJUST = REPORT["p_adjust"]

FIGURE_TARGETS = (
    [
        f"results/figures/{a}/{m}/{kind}.{ext}"
        for a in config["analysis_sets"]
        for m in config["models"]
        for kind in ("intra", "inter", "rank", "person")
        for ext in ("png", "pdf")
    ]
    + [
        f"results/figures/{a}/contact_sheet.{ext}"
        for a in config["analysis_sets"]
        for ext in ("png", "pdf", "csv")
    ]
    + [
        f"results/figures/curves/{d}/{m}.{ext}"
        for d in config["finetune"]["datasets"]
        for m in config["models"]
        for ext in ("png", "pdf")
    ]
    + [
        f"results/figures/scratch_curves/{d}/{m}.{ext}"
        for d in config["finetune"]["datasets"]
        if cfg.reference_seeds(config, d)
        for m in config["models"]
        for ext in ("png", "pdf")
    ]
    + [
        "results/figures/ieat_heatmap.png",
        "results/figures/ieat_heatmap.pdf",
        "results/figures/ieat_change.png",
        "results/figures/ieat_change.pdf",
    ]
)
TABLE_TARGETS = (
    [f"results/tables/analysis_set_{a}.tex" for a in config["analysis_sets"]]
    + [f"results/tables/ieat_{a}.tex" for a in config["analysis_sets"]]
    + [
        f"results/tables/bts_{a}_ft-{d}.tex"
        for a in config["analysis_sets"]
        for d in config["finetune"]["datasets"]
    ]
    + [f"results/tables/finetune_{d}.tex" for d in config["finetune"]["datasets"]]
)


# What the static report (results/report/index.html) shows, in order; add a new figure or table here too.
REPORT_ITEMS = (
    [
        report_item(
            "figure",
            f"Analysis set {a}, {m}",
            words,
            f"{kind}.rst",
            {
                "png": f"results/figures/{a}/{m}/{kind}.png",
                "pdf": f"results/figures/{a}/{m}/{kind}.pdf",
            },
            analysis_set=a,
            model=m,
        )
        for a in config["analysis_sets"]
        for m in config["models"]
        for kind, words in (
            ("intra", "Intra-class similarity"),
            ("inter", "Inter-class similarity"),
            ("person", "Object with each person group vs the object alone (Fig. 3)"),
            ("rank", "Ranks before vs after finetuning"),
        )
    ]
    + [
        report_item(
            "figure",
            f"Analysis set {a}: what the classes look like",
            "Example images per class",
            "contact_sheet.rst",
            {
                "png": f"results/figures/{a}/contact_sheet.png",
                "pdf": f"results/figures/{a}/contact_sheet.pdf",
                "csv": f"results/figures/{a}/contact_sheet.csv",
            },
            analysis_set=a,
        )
        for a in config["analysis_sets"]
    ]
    + [
        report_item(
            "figure",
            "Finetuning",
            f"Training curves of {m} finetuned on {d}",
            "curves.rst",
            {
                "png": f"results/figures/curves/{d}/{m}.png",
                "pdf": f"results/figures/curves/{d}/{m}.pdf",
            },
            dataset=d,
            model=m,
        )
        for d in config["finetune"]["datasets"]
        for m in config["models"]
    ]
    + [
        report_item(
            "figure",
            "Finetuning",
            f"Training curves of {m} trained from scratch on {d} (the BTS reference)",
            "scratch_curves.rst",
            {
                "png": f"results/figures/scratch_curves/{d}/{m}.png",
                "pdf": f"results/figures/scratch_curves/{d}/{m}.pdf",
            },
            dataset=d,
            model=m,
        )
        for d in config["finetune"]["datasets"]
        if cfg.reference_seeds(config, d)
        for m in config["models"]
    ]
    + [
        report_item(
            "figure",
            "iEAT",
            words,
            f"{name}.rst",
            {
                "png": f"results/figures/{name}.png",
                "pdf": f"results/figures/{name}.pdf",
            },
        )
        for name, words in (
            ("ieat_heatmap", "Effect sizes, all models"),
            ("ieat_change", "Change from pretrained, all models"),
        )
    ]
    + [
        report_item(
            "table",
            "iEAT",
            f"iEAT on {a}",
            "table_ieat.rst",
            table_files(f"results/tables/ieat_{a}"),
            analysis_set=a,
        )
        for a in config["analysis_sets"]
    ]
    + [
        report_item(
            "table",
            "Bias transfer scores",
            f"BTS on {a}, finetuned on {d}",
            "table_bts.rst",
            table_files(f"results/tables/bts_{a}_ft-{d}"),
            analysis_set=a,
            dataset=d,
        )
        for a in config["analysis_sets"]
        for d in config["finetune"]["datasets"]
    ]
    + [
        report_item(
            "table",
            "Finetuning",
            f"Finetuning on {d}",
            "table_finetune.rst",
            table_files(f"results/tables/finetune_{d}"),
            dataset=d,
        )
        for d in config["finetune"]["datasets"]
    ]
    + [
        report_item(
            "table",
            "Analysis sets",
            f"Analysis set {a}",
            "table_analysis_set.rst",
            table_files(f"results/tables/analysis_set_{a}"),
            analysis_set=a,
        )
        for a in config["analysis_sets"]
    ]
    + [
        report_item(
            "table",
            "Comparison with the paper",
            "Ours vs published",
            "comparison.rst",
            {
                "csv": "results/comparison/paper_comparison.csv",
                "document": "results/comparison/paper_comparison.tex",
            },
        )
    ]
)

# Every output of this file; rule all asks for them (all_targets in rules/common.smk).
REPORT_TARGETS = (
    FIGURE_TARGETS
    + TABLE_TARGETS
    + [
        "results/comparison/paper_comparison.csv",
        "results/comparison/paper_comparison.tex",
        "results/report/index.html",
    ]
)


rule html_report:
    input:
        # every item's files and captions (read through params.shown)
        [f for item in REPORT_ITEMS for f in item["files"].values()],
        sorted({item["caption"] for item in REPORT_ITEMS}),
        ieat="results/summary/ieat.csv",
        bts="results/summary/bts.csv",
        findings="results/summary/findings.rst",
        provenance="results/summary/provenance.csv",
        analysis_sets="results/summary/analysis_sets.csv",
    output:
        index="results/report/index.html",
        pages=[
            f"results/report/{page}.html"
            for page in ("findings", "tables", "figures", "provenance")
        ],
        files=directory("results/report/files"),
    log:
        "logs/report/html_report.log",
    benchmark:
        "results/benchmarks/report/html_report.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    params:
        config=cfg.canonical(config),
        shown=REPORT_ITEMS,
        alpha=config["analysis"]["ieat"]["alpha"],
        adjust=P_ADJUST,
    script:
        "../workflow/scripts/html_report.py"


rule plot_similarity:
    input:
        similarity="results/summary/similarity.csv",
        bts="results/summary/bts.csv",
        change="results/summary/similarity_change.csv",
    output:
        intra_png=report(
            "results/figures/{analysis_set}/{model}/intra.png",
            caption="../workflow/report/intra.rst",
            category="Analysis set {analysis_set}",
            subcategory="{model}",
            labels={"model": "{model}", "figure": "intra-class similarity"},
        ),
        intra_pdf="results/figures/{analysis_set}/{model}/intra.pdf",
        inter_png=report(
            "results/figures/{analysis_set}/{model}/inter.png",
            caption="../workflow/report/inter.rst",
            category="Analysis set {analysis_set}",
            subcategory="{model}",
            labels={"model": "{model}", "figure": "inter-class similarity"},
        ),
        inter_pdf="results/figures/{analysis_set}/{model}/inter.pdf",
        rank_png=report(
            "results/figures/{analysis_set}/{model}/rank.png",
            caption="../workflow/report/rank.rst",
            category="Analysis set {analysis_set}",
            subcategory="{model}",
            labels={"model": "{model}", "figure": "ranks before vs after"},
        ),
        rank_pdf="results/figures/{analysis_set}/{model}/rank.pdf",
        person_png=report(
            "results/figures/{analysis_set}/{model}/person.png",
            caption="../workflow/report/person.rst",
            category="Analysis set {analysis_set}",
            subcategory="{model}",
            labels={"model": "{model}", "figure": "object+person vs object"},
        ),
        person_pdf="results/figures/{analysis_set}/{model}/person.pdf",
    log:
        "logs/report/plot_similarity/{analysis_set}/{model}.log",
    benchmark:
        "results/benchmarks/report/plot_similarity/{analysis_set}/{model}.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        control_class=REPORT["control_class"],
        adjust=P_ADJUST,
        # the classes and pairs the BTS ranks (all of them when the analysis set lists none)
        lists=lambda wildcards: cfg.canonical(
            config["analysis_sets"][wildcards.analysis_set]["bts"]
        ),
    script:
        "../workflow/scripts/plot_similarity.py"


rule plot_contact_sheet:
    input:
        manifest="results/analysis_sets/{analysis_set}/manifest.parquet",
    output:
        png=report(
            "results/figures/{analysis_set}/contact_sheet.png",
            caption="../workflow/report/contact_sheet.rst",
            category="Analysis set {analysis_set}",
            labels={"figure": "example images per class"},
        ),
        pdf="results/figures/{analysis_set}/contact_sheet.pdf",
        csv="results/figures/{analysis_set}/contact_sheet.csv",
    log:
        "logs/report/plot_contact_sheet/{analysis_set}.log",
    benchmark:
        "results/benchmarks/report/plot_contact_sheet/{analysis_set}.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        per_class=4,
    script:
        "../workflow/scripts/plot_contact_sheet.py"


rule plot_curves:
    input:
        curves=lambda w: [
            f"results/finetune/{w.dataset}/{w.model}/seed{s}/curve.csv"
            for s in cfg.finetune_seeds(config, w.dataset)
        ],
        metrics=lambda w: [
            f"results/finetune/{w.dataset}/{w.model}/seed{s}/metrics.json"
            for s in cfg.finetune_seeds(config, w.dataset)
        ],
    output:
        png=report(
            "results/figures/curves/{dataset}/{model}.png",
            caption="../workflow/report/curves.rst",
            category="Finetuning",
            labels={"finetuned on": "{dataset}", "model": "{model}"},
        ),
        pdf="results/figures/curves/{dataset}/{model}.pdf",
    log:
        "logs/report/plot_curves/{dataset}/{model}.log",
    benchmark:
        "results/benchmarks/report/plot_curves/{dataset}/{model}.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "../workflow/scripts/plot_curves.py"


rule plot_scratch_curves:
    input:
        metrics=lambda w: [
            f"results/scratch/{w.dataset}/{w.model}/seed{s}/metrics.json"
            for s in cfg.reference_seeds(config, w.dataset)
        ],
    output:
        png=report(
            "results/figures/scratch_curves/{dataset}/{model}.png",
            caption="../workflow/report/scratch_curves.rst",
            category="Finetuning",
            labels={"trained from scratch on": "{dataset}", "model": "{model}"},
        ),
        pdf="results/figures/scratch_curves/{dataset}/{model}.pdf",
    log:
        "logs/report/plot_scratch_curves/{dataset}/{model}.log",
    benchmark:
        "results/benchmarks/report/plot_scratch_curves/{dataset}/{model}.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        scratch=True,
    script:
        "../workflow/scripts/plot_curves.py"


rule plot_ieat:
    input:
        ieat="results/summary/ieat.csv",
    output:
        png=report(
            "results/figures/ieat_heatmap.png",
            caption="../workflow/report/ieat_heatmap.rst",
            category="iEAT",
            labels={"figure": "effect sizes, all models"},
        ),
        pdf="results/figures/ieat_heatmap.pdf",
    log:
        "logs/report/plot_ieat.log",
    benchmark:
        "results/benchmarks/report/plot_ieat.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        adjust=P_ADJUST,
    script:
        "../workflow/scripts/plot_ieat.py"


rule plot_change:
    input:
        change="results/summary/ieat_change.csv",
    output:
        png=report(
            "results/figures/ieat_change.png",
            caption="../workflow/report/ieat_change.rst",
            category="iEAT",
            labels={"figure": "change from pretrained, all models"},
        ),
        pdf="results/figures/ieat_change.pdf",
    log:
        "logs/report/plot_change.log",
    benchmark:
        "results/benchmarks/report/plot_change.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "../workflow/scripts/plot_change.py"


rule table_analysis_set:
    input:
        summary="results/summary/analysis_sets.csv",
    output:
        table=report(
            "results/tables/analysis_set_{analysis_set}.tex",
            caption="../workflow/report/table_analysis_set.rst",
            category="Tables",
            subcategory="Analysis sets",
            labels={"analysis set": "{analysis_set}", "table": "classes and sizes"},
        ),
        fragment="results/tables/analysis_set_{analysis_set}_tabular.tex",
        csv="results/tables/analysis_set_{analysis_set}.csv",
    log:
        "logs/report/table_analysis_set/{analysis_set}.log",
    benchmark:
        "results/benchmarks/report/table_analysis_set/{analysis_set}.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    params:
        kind="analysis_set",
    script:
        "../workflow/scripts/make_tables.py"


rule table_ieat:
    input:
        summary="results/summary/ieat.csv",
    output:
        table=report(
            "results/tables/ieat_{analysis_set}.tex",
            caption="../workflow/report/table_ieat.rst",
            category="Tables",
            subcategory="iEAT",
            labels={"analysis set": "{analysis_set}", "table": "iEAT"},
        ),
        fragment="results/tables/ieat_{analysis_set}_tabular.tex",
        csv="results/tables/ieat_{analysis_set}.csv",
    log:
        "logs/report/table_ieat/{analysis_set}.log",
    benchmark:
        "results/benchmarks/report/table_ieat/{analysis_set}.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    params:
        kind="ieat",
        adjust=P_ADJUST,
    script:
        "../workflow/scripts/make_tables.py"


rule table_bts:
    input:
        summary="results/summary/bts.csv",
    output:
        table=report(
            "results/tables/bts_{analysis_set}_ft-{dataset}.tex",
            caption="../workflow/report/table_bts.rst",
            category="Tables",
            subcategory="Bias transfer scores",
            labels={"analysis set": "{analysis_set}", "finetuned on": "{dataset}"},
        ),
        fragment="results/tables/bts_{analysis_set}_ft-{dataset}_tabular.tex",
        csv="results/tables/bts_{analysis_set}_ft-{dataset}.csv",
    log:
        "logs/report/table_bts/{analysis_set}_ft-{dataset}.log",
    benchmark:
        "results/benchmarks/report/table_bts/{analysis_set}_ft-{dataset}.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    params:
        kind="bts",
        adjust=P_ADJUST,
    script:
        "../workflow/scripts/make_tables.py"


rule table_finetune:
    input:
        summary="results/summary/finetune_metrics.csv",
    output:
        table=report(
            "results/tables/finetune_{dataset}.tex",
            caption="../workflow/report/table_finetune.rst",
            category="Tables",
            subcategory="Finetuning",
            labels={"finetuned on": "{dataset}", "table": "settings and metric"},
        ),
        fragment="results/tables/finetune_{dataset}_tabular.tex",
        csv="results/tables/finetune_{dataset}.csv",
    log:
        "logs/report/table_finetune/{dataset}.log",
    benchmark:
        "results/benchmarks/report/table_finetune/{dataset}.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    params:
        kind="finetune",
    script:
        "../workflow/scripts/make_tables.py"


rule compare_paper:
    input:
        reference=os.path.join(workflow.basedir, "resources", "paper_reference.csv"),
        bts="results/summary/bts.csv",
        ieat="results/summary/ieat.csv",
        finetune_metrics="results/summary/finetune_metrics.csv",
        analysis_sets="results/summary/analysis_sets.csv",
    output:
        csv=report(
            "results/comparison/paper_comparison.csv",
            caption="../workflow/report/comparison.rst",
            category="Comparison with the paper",
            labels={"table": "ours vs published (CSV)"},
        ),
        tex=report(
            "results/comparison/paper_comparison.tex",
            caption="../workflow/report/comparison.rst",
            category="Comparison with the paper",
            labels={"table": "ours vs published (LaTeX)"},
        ),
    log:
        "logs/report/compare_paper.log",
    benchmark:
        "results/benchmarks/report/compare_paper.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    params:
        alpha=REPORT["alpha"],
        tolerances=REPORT["tolerances"],
        targets=REPORT["ieat_targets"],
    script:
        "../workflow/scripts/compare_paper.py"
