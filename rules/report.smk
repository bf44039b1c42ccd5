# Figures, LaTeX tables and the comparison with the paper's published numbers, each marked for
# `snakemake --report` (grouped by analysis set and model, with a caption that says how to read it).
# Config section `report:` (defaults in the schema): control_class, p_adjust (holm | bh), alpha,
# tolerances ({measure: largest |ours - paper| called agreement}), ieat_targets ([X, Y] of the paper's iEAT).

REPORT = config["report"]
P_ADJUST = REPORT["p_adjust"]

FIGURE_TARGETS = [
    f"results/figures/{a}/{m}/{kind}.{ext}"
    for a in config["analysis_sets"]
    for m in config["models"]
    for kind in ("intra", "inter", "rank", "person")
    for ext in ("png", "pdf")
] + [
    f"results/figures/{a}/contact_sheet.{ext}"
    for a in config["analysis_sets"]
    for ext in ("png", "pdf", "csv")
] + [
    f"results/figures/curves/{d}/{m}.{ext}"
    for d in config["finetune"]["datasets"]
    for m in config["models"]
    for ext in ("png", "pdf")
] + [
    "results/figures/ieat_heatmap.png",
    "results/figures/ieat_heatmap.pdf",
    "results/figures/ieat_change.png",
    "results/figures/ieat_change.pdf",
]
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
# Every output of this file; rule all asks for them (all_targets in rules/common.smk).
REPORT_TARGETS = (
    FIGURE_TARGETS
    + TABLE_TARGETS
    + [
        "results/comparison/paper_comparison.csv",
        "results/comparison/paper_comparison.tex",
    ]
)


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
        curves=lambda w: [f"results/finetune/{w.dataset}/{w.model}/seed{s}/curve.csv" for s in cfg.finetune_seeds(config, w.dataset)],
        metrics=lambda w: [f"results/finetune/{w.dataset}/{w.model}/seed{s}/metrics.json" for s in cfg.finetune_seeds(config, w.dataset)],
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
