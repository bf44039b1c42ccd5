# zoo_status keeps flat params: a new params shape would fetch every model's weights again (upgrading users).
# The model zoo (config/zoo.yaml, docs/zoo.md): a pretrained-only audit of many models in one run.
# Every model is checked first (zoo_status: weights fetched into the shared cache and verified, model
# built); the checkpoint's records decide which models the summaries read, so a model that fails (an
# unknown name, bad weights) is named in the ranked table's summary and never stops the others.
# The per-model embeddings, similarities and iEATs are the ordinary rules' (embed, similarity, ieat).
# Settings (the iEAT that orders the table and leads the figure and findings): biastransfer.workflow.rules.zoo.


ZOO_STATUSES = expand("results/zoo/status/{model}.json", model=config["models"])
report_artefact(
    "zoo_ranking",
    "zoo_ranking.rst",
    kind="table",
    section="Model zoo",
    title="Every iEAT of every model, ranked",
    files={"csv": "results/zoo/ranking.csv", "document": "results/zoo/ranking.tex"},
    run="zoo",
)
report_artefact(
    "zoo_forest",
    "zoo_forest.rst",
    kind="figure",
    section="Model zoo",
    title="Forest plot of d by model family",
    files={ext: f"results/figures/zoo_forest.{ext}" for ext in ("png", "pdf")},
    run="zoo",
)
report_artefact(
    "zoo_findings",
    "zoo_findings.rst",
    kind="page",
    section="Model zoo",
    title="Findings",
    files={"html": "results/zoo/findings.html"},
    run="zoo",
)
ZOO_TARGETS = [
    PLAN.summary("similarity"),
    PLAN.summary("ieat"),
    PLAN.summary("analysis_sets"),
    "results/summary/config.yaml",
    "results/zoo/status.csv",
    *ARTEFACTS.targets("zoo"),
    *ARTEFACTS.files("ieat_heatmap"),
    # the claims a zoo can test (pretrained d, rules/claims.smk; none without claims.tests)
    *PLAN.summaries("claims"),
    *ARTEFACTS.files("claims", "claims_figure"),
    # the factors questions a zoo can ask (pretrained d, rules/claims.smk; none without factors.questions)
    *PLAN.summaries("factors", "factor_values", "covariates"),
    *ARTEFACTS.files("factors", "factors_figure"),
]


checkpoint zoo_status:
    output:
        status="results/zoo/status/{model}.json",
    log:
        "logs/zoo_status/{model}.log",
    benchmark:
        "results/benchmarks/zoo_status/{model}.tsv"
    wildcard_constraints:
        model=names_pattern(
            [m for m in config["models"] if m not in PLAN.workflow_models]
        ),
    # downloads weights: on a cluster it runs on the submit host, as fetch_weights does
    localrule: True
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=embed_mem_mb,
        runtime=60,
    params:
        entry=lambda wildcards: cfg.canonical(PLAN.model_entry(wildcards.model)),
        cache_dir=config["weights"]["cache_dir"],
        mirror=config["weights"]["mirror"],
    script:
        "../workflow/scripts/zoo_status.py"


rule zoo_table:
    input:
        zoo_analyses_done,  # ordering only: each passed model's analyses as one job group
        ieat=PLAN.summary("ieat"),
        statuses=ZOO_STATUSES,
    output:
        **artefact_outputs("zoo_ranking"),
        status_csv="results/zoo/status.csv",
    log:
        "logs/zoo/table.log",
    benchmark:
        "results/benchmarks/zoo/table.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        **RESOURCES["gather"],
    params:
        settings=PLAN.settings("zoo_table"),
    script:
        "../workflow/scripts/zoo_table.py"


rule zoo_forest:
    input:
        ranking="results/zoo/ranking.csv",
        status_csv="results/zoo/status.csv",
    output:
        **artefact_outputs("zoo_forest"),
    log:
        "logs/zoo/forest.log",
    benchmark:
        "results/benchmarks/zoo/forest.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        **RESOURCES["gather"],
    params:
        settings=PLAN.settings("zoo_forest"),
    script:
        "../workflow/scripts/zoo_forest.py"


rule zoo_findings:
    input:
        ranking="results/zoo/ranking.csv",
        status_csv="results/zoo/status.csv",
        claims=PLAN.summaries("claims"),
        factors=PLAN.summaries("factors"),
    output:
        **artefact_outputs("zoo_findings"),
        findings="results/zoo/findings.rst",
    log:
        "logs/zoo/findings.log",
    benchmark:
        "results/benchmarks/zoo/findings.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        **RESOURCES["small"],
    params:
        settings=PLAN.settings("zoo_findings"),
    script:
        "../workflow/scripts/zoo_findings.py"
