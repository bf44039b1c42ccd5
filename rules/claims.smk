# Claims about groups of models (config claims, docs/claims.md): each model one unit (its seeds averaged),
# compared between model groups on one finetuning dataset or between two finetuning datasets, model by
# model; exact permutation p-values over the models, Holm over the claims, verdicts in words.
# A zoo run measures pretrained networks only: its claims compare groups on pretrained d (the config check
# refuses any other), read from the iEATs and the zoo's status records (a model that failed its check is
# left out of its group and named in the table).
CLAIMS_INPUTS = (
    {"statuses": expand("results/zoo/status/{model}.json", model=config["models"])}
    if PLAN.zoo
    else {"change": PLAN.summary("ieat_change"), "bts": PLAN.summary("bts")}
)

table_artefact(
    "claims",
    PLAN.summary("claims"),
    "results/tables/claims",
    caption="table_claims.rst",
    section="Claims about groups of models",
    title="Claims, tested with models as units",
    instances=[{}] if PLAN.claims_on else [],
)
report_artefact(
    "claims_figure",
    "claims_figure.rst",
    kind="figure",
    section="Claims about groups of models",
    title="Each model's value, by group",
    files={ext: f"results/figures/claims.{ext}" for ext in ("png", "pdf")},
    instances=[{}] if PLAN.claims_on else [],
)


rule claims:
    input:
        **CLAIMS_INPUTS,
        ieat=PLAN.summary("ieat"),
    output:
        table=PLAN.summary("claims"),
        values=PLAN.summary("claim_values"),
    log:
        "logs/claims.log",
    benchmark:
        "results/benchmarks/claims.tsv"
    localrule: True
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        **RESOURCES["plot"],
    params:
        settings=PLAN.settings("claims"),
    script:
        "../workflow/scripts/claims.py"


rule plot_claims:
    input:
        table=PLAN.summary("claims"),
        values=PLAN.summary("claim_values"),
    output:
        **artefact_outputs("claims_figure"),
    log:
        "logs/report/plot_claims.log",
    benchmark:
        "results/benchmarks/report/plot_claims.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        **RESOURCES["plot"],
    script:
        "../workflow/scripts/plot_claims.py"


# What predicts a measure across models (config factors, docs/statistics.md): each question a meta-regression
# of the measure on the models' covariates (biastransfer.stats.factors), read from the same summaries as the
# claims; the covariates and their sources come with the settings (results/summary/covariates.csv).
table_artefact(
    "factors",
    PLAN.summary("factors"),
    "results/tables/factors",
    caption="table_factors.rst",
    section="What predicts the measures across models",
    title="Coefficients of the factors questions",
    instances=[{}] if PLAN.factors_on else [],
)
report_artefact(
    "factors_figure",
    "factors_figure.rst",
    kind="figure",
    section="What predicts the measures across models",
    title="Each model's value against the main covariate",
    files={ext: f"results/figures/factors.{ext}" for ext in ("png", "pdf")},
    instances=[{}] if PLAN.factors_on else [],
)


rule factors:
    input:
        **CLAIMS_INPUTS,
        **({"cka": PLAN.summary("cka")} if PLAN.factors_cka else {}),
        ieat=PLAN.summary("ieat"),
    output:
        table=PLAN.summary("factors"),
        values=PLAN.summary("factor_values"),
        covariates_table=PLAN.summary("covariates"),
    log:
        "logs/factors.log",
    benchmark:
        "results/benchmarks/factors.tsv"
    localrule: True
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        **RESOURCES["plot"],
    params:
        settings=PLAN.settings("factors"),
    script:
        "../workflow/scripts/factors.py"


rule plot_factors:
    input:
        table=PLAN.summary("factors"),
        values=PLAN.summary("factor_values"),
    output:
        **artefact_outputs("factors_figure"),
    log:
        "logs/report/plot_factors.log",
    benchmark:
        "results/benchmarks/report/plot_factors.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        **RESOURCES["plot"],
    script:
        "../workflow/scripts/plot_factors.py"
