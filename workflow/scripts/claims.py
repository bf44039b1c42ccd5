"""Test the config's claims about groups of models (claims.tests) with models as units.

Snakemake: rule claims (rules/claims.smk). Standalone, for a reviewer:
python workflow/scripts/claims.py --ieat results/summary/ieat.csv --change results/summary/ieat_change.csv
    --bts results/summary/bts.csv --table out/claims.csv --values out/claim_values.csv
    --settings '{"claims": {"groups": {...}, "tests": [...], "alpha": 0.05, ...}, "datasets": ["coco"],
    "adjust": "holm"}'
(claims: the filled config's claims section, e.g. from results/summary/config.yaml.) A zoo run, whose
claims compare groups on pretrained d: --ieat and --statuses results/zoo/status/*.json (no --change, --bts);
a model that failed its check is left out of its group and named in the table.
"""

import logging

from biastransfer.atomic import write_csv
from biastransfer.scripting import run
from biastransfer.stats.claim_measures import claims_from_summaries, read_summaries
from biastransfer.workflow.rules.analysis import ClaimsSettings
from biastransfer.zoo import left_out_models

log = logging.getLogger(__name__)


def main(
    ieat: str,
    settings: ClaimsSettings,
    table: str,
    values: str,
    change: str | None = None,
    bts: str | None = None,
    statuses: list | None = None,
) -> None:
    summaries, left_out = read_summaries(ieat, change, bts), left_out_models(statuses)
    result, per_model = claims_from_summaries(
        settings.claims, summaries, datasets=settings.datasets, adjust=settings.adjust, left_out=left_out
    )
    write_csv(values, per_model)
    write_csv(table, result)
    for row in result.itertuples():
        log.info(
            "%s: %s (difference %.3g, adjusted p %.3g, floor %.3g)",
            row.claim,
            row.verdict,
            row.difference,
            row.p_adjusted,
            row.p_floor,
        )
        if row.left_out:
            log.warning("%s: left out of its groups: %s", row.claim, row.left_out)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
