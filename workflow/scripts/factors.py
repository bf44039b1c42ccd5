"""Answer the config's factors questions (factors.questions): a meta-regression of a measure across models on
their covariates, a mixed model with random intercepts for the test and the model, and cluster-bootstrap
intervals over models.

Snakemake: rule factors (rules/claims.smk). Standalone, for a reviewer:
python workflow/scripts/factors.py --ieat results/summary/ieat.csv --change results/summary/ieat_change.csv
    --bts results/summary/bts.csv --table out/factors.csv --values out/factor_values.csv
    --covariates_table out/covariates.csv --settings '{"factors": {...}, "models": {...}, "datasets": {...},
    "covariates": {...}, "alpha": 0.05, "adjust": "holm"}'
(the settings as rule factors passes them: ``biastransfer.workflow.rules.analysis.FactorsSettings``). A zoo
run: --ieat and --statuses results/zoo/status/*.json; a model that failed its check is left out and named. A
question whose covariates name cka reads --cka results/summary/cka.csv.
"""

import logging

import pandas as pd

from biastransfer.atomic import write_csv
from biastransfer.scripting import run
from biastransfer.stats.claim_measures import read_summaries
from biastransfer.stats.factor_measures import factors_from_summaries
from biastransfer.workflow.rules.analysis import FactorsSettings
from biastransfer.zoo import left_out_models

log = logging.getLogger(__name__)


def main(
    ieat: str,
    settings: FactorsSettings,
    table: str,
    values: str,
    covariates_table: str,
    change: str | None = None,
    bts: str | None = None,
    statuses: list | None = None,
    cka: str | None = None,
) -> None:
    summaries, left_out = read_summaries(ieat, change, bts, cka), left_out_models(statuses)
    given = {m: {k: v["value"] for k, v in found.items()} for m, found in settings.covariates.items()}
    result, per_model = factors_from_summaries(
        settings.factors,
        summaries,
        given,
        models=settings.models,
        datasets=settings.datasets,
        alpha=settings.alpha,
        adjust=settings.adjust,
        left_out=left_out,
    )
    sources = pd.DataFrame(
        [
            {"model": model, "covariate": name, "value": item["value"], "source": item["source"]}
            for model, found in settings.covariates.items()
            for name, item in found.items()
        ]
    )
    write_csv(covariates_table, sources)
    write_csv(values, per_model)
    write_csv(table, result)
    for question, rows in result.groupby("question", sort=False):
        first = rows.iloc[0]
        log.info(
            "%s: %s (%d models, %d residual df)",
            question,
            first["question_verdict"],
            first["n_models"],
            first["df_resid"],
        )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
