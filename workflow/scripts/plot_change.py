"""Forest plot of what finetuning changed in each iEAT: delta d per seed with paired bootstrap intervals.

Snakemake: rule plot_change (rules/report.smk). Standalone, for a reviewer:
python workflow/scripts/plot_change.py --change results/summary/ieat_change.csv
    --png out/ieat_change.png --pdf out/ieat_change.pdf
"""

import logging
from pathlib import Path

import pandas as pd

from biastransfer.report.formatting import read_summary
from biastransfer.report.ieat_figures import CHANGE_COLUMNS, change_figure
from biastransfer.report.style import figure_stem, save_figure
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(change: str, png: str, pdf: str) -> None:
    stem = figure_stem(png, pdf)
    header = pd.read_csv(change, nrows=0).columns if Path(change).stat().st_size > 1 else []
    table = read_summary(change, CHANGE_COLUMNS) if "delta_d" in header else pd.DataFrame(columns=CHANGE_COLUMNS)
    written = save_figure(change_figure(table), stem)
    log.info("%d iEAT changes -> %s", len(table), ", ".join(map(str, written)))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
