"""The link across levels as a figure: each network's iEAT d against its predictions' contrast for the same
objects, both intervals as error bars, the rank correlation and its interval in each panel's title.

Snakemake: rule plot_link (rules/link.smk). Standalone, for a reviewer:
python workflow/scripts/plot_link.py --table results/summary/link.csv
    --correlation results/summary/link_correlation.csv --dataset D --png out/link_D.png --pdf out/link_D.pdf
"""

import logging

from biastransfer.report.formatting import read_summary
from biastransfer.report.link_report import CORRELATION_REQUIRED, LINK_REQUIRED, link_figure
from biastransfer.report.style import figure_stem, save_figure
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(table: str, correlation: str, dataset: str, png: str, pdf: str) -> None:
    rows = read_summary(table, LINK_REQUIRED)
    figure = link_figure(rows, read_summary(correlation, CORRELATION_REQUIRED), dataset)
    written = save_figure(figure, figure_stem(png, pdf))
    log.info(
        "%d linked rows of %s -> %s", int((rows["dataset"] == dataset).sum()), dataset, ", ".join(map(str, written))
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
