"""The layer-profile figure of one model on one analysis set: iEAT d and BTS rho against depth.

Standalone: python workflow/scripts/plot_layers.py --profile results/layers/A/M/profile.csv
--png out/layers.png --pdf out/layers.pdf --analysis_set A --model M
"""

import logging
from pathlib import Path

from biastransfer.report.formatting import read_summary
from biastransfer.report.layer_report import PROFILE_REQUIRED, profile_figure
from biastransfer.report.style import save_figure
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(profile: str, png: str, pdf: str, analysis_set: str, model: str) -> None:
    if Path(png).with_suffix(".pdf") != Path(pdf):
        raise ValueError(f"the figure's outputs must share one stem: {png!r}, {pdf!r}")
    table = read_summary(profile, PROFILE_REQUIRED)
    written = save_figure(profile_figure(table, analysis_set=analysis_set, model=model), Path(png).with_suffix(""))
    log.info("layer profile of %s on %s -> %s", model, analysis_set, ", ".join(map(str, written)))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
