"""Compare groups of networks that differ only in their training data on their iEAT effect sizes.

Standalone: python workflow/scripts/attribution.py --ieat results/summary/ieat.csv --table A.csv
--comparisons '[{"name": "planted", "analysis_set": "synthetic", "test": "surfboard_vs_car",
"groups": {"planted": ["m0", "m1"], "none": ["n0", "n1"]}}]' [--options '{"alpha": 0.05}': fields of biastransfer.stats.Design]
"""

import logging

import pandas as pd

from biastransfer.atomic import write_csv
from biastransfer.scripting import run
from biastransfer.stats.attribution import Design, attribution_table

log = logging.getLogger(__name__)


def main(ieat: str, table: str, comparisons: list, options: dict | None = None) -> None:
    result = attribution_table(
        pd.read_csv(ieat, keep_default_na=False, na_values=[""]), comparisons, Design(**(options or {}))
    )
    write_csv(table, result)
    for row in result.itertuples():
        log.info(
            "%s: %s - %s = %.3f (p %.3g, %s; Welch p %.3g; smallest attainable p %.3g)",
            row.name,
            row.group_a,
            row.group_b,
            row.difference,
            row.pvalue,
            row.method,
            row.pvalue_welch,
            row.min_pvalue,
        )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
