"""The trajectory figure (PNG and PDF) of one model finetuned on one dataset (its table: make_tables.py).

Standalone: python workflow/scripts/plot_trajectory.py --trajectory results/trajectory/A/M/ft-D.csv
--png T.png --pdf T.pdf
"""

import logging
from pathlib import Path

from biastransfer.report.formatting import read_summary
from biastransfer.report.style import save_figure
from biastransfer.report.trajectory import TRAJECTORY_REQUIRED, trajectory_figure
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(trajectory: str, png: str, pdf: str) -> None:
    if Path(png).with_suffix("") != Path(pdf).with_suffix(""):
        raise ValueError(f"png {png} and pdf {pdf} must share one stem")
    frame = read_summary(trajectory, TRAJECTORY_REQUIRED)
    save_figure(trajectory_figure(frame), Path(png).with_suffix(""))
    log.info("%s -> %s, %s", trajectory, png, pdf)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
