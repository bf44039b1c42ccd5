"""Each model's value against the main covariate of every factors question, with the question's main
coefficient and its interval.

Snakemake: rule plot_factors (rules/claims.smk). Standalone, for a reviewer:
python workflow/scripts/plot_factors.py --table results/summary/factors.csv
    --values results/summary/factor_values.csv --png out/factors.png --pdf out/factors.pdf
"""

import logging

from biastransfer.report.factors import FACTORS_REQUIRED, VALUES_REQUIRED, factors_figure
from biastransfer.report.formatting import read_summary
from biastransfer.report.style import figure_stem, save_figure
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(table: str, values: str, png: str, pdf: str) -> None:
    factors = read_summary(table, FACTORS_REQUIRED)
    written = save_figure(factors_figure(read_summary(values, VALUES_REQUIRED), factors), figure_stem(png, pdf))
    log.info("%d questions -> %s", factors["question"].nunique(), ", ".join(map(str, written)))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
