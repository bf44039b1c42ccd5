"""Compare groups of networks that differ only in their training data on their iEAT effect sizes or their
prediction contrasts (a comparison's measure ``contrast`` reads --link, the link summary).

Standalone: python workflow/scripts/attribution.py --ieat results/summary/ieat.csv --table A.csv
--settings '{"comparisons": [{"name": "planted", "analysis_set": "synthetic", "test": "surfboard_vs_car",
"measure": "d", "groups": {"planted": ["m0", "m1"], "none": ["n0", "n1"]}}], "design": {"alternative": "two-sided",
"permutations": 100000, "level": 0.95, "alpha": 0.05, "power": 0.8, "simulations": 2000, "seed": 0}}'
[--link results/summary/link.csv] (design: the fields of biastransfer.stats.Design)
"""

import logging

import pandas as pd

from biastransfer.atomic import write_csv
from biastransfer.scripting import run
from biastransfer.stats.attribution import Design, attribution_table
from biastransfer.workflow.rules.analysis import AttributionSettings

log = logging.getLogger(__name__)


def main(ieat: str, table: str, settings: AttributionSettings, link: list | str | None = None) -> None:
    design = Design(**settings.design.as_dict())
    links = [link] if isinstance(link, str) else list(link or [])
    predictions = pd.read_csv(links[0], keep_default_na=False, na_values=[""]) if links else None
    summary = pd.read_csv(ieat, keep_default_na=False, na_values=[""])
    result = attribution_table(summary, settings.comparisons, design, link=predictions)
    write_csv(table, result)
    for row in result.itertuples():
        log.info(
            "%s (%s): %s - %s = %.3f (p %.3g, %s; Welch p %.3g; smallest attainable p %.3g)",
            row.name,
            row.measure,
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
