"""Change in the representation (iEAT d) against change in the predictions (the prediction shift), per
compared finetuning arm, model and iEAT, coloured by the change of the validation metric.

Snakemake: rule plot_comparison (rules/comparisons.smk). Standalone, for a reviewer:
python workflow/scripts/plot_comparison.py --summary results/summary/comparison.csv
    --png out/comparison.png --pdf out/comparison.pdf
"""

import logging

from biastransfer.report.comparison_report import COMPARISON_REQUIRED, comparison_figure
from biastransfer.report.formatting import read_summary
from biastransfer.report.style import figure_stem, save_figure
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(summary: str, png: str, pdf: str) -> None:
    table = read_summary(summary, COMPARISON_REQUIRED)
    written = save_figure(comparison_figure(table), figure_stem(png, pdf))
    log.info("%d comparison rows -> %s", len(table), ", ".join(map(str, written)))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
