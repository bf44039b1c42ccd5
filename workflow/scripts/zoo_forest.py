"""The model zoo's forest plot: d with its interval for every audited model on one test, grouped by family.

Standalone: python workflow/scripts/zoo_forest.py --ranking results/zoo/ranking.csv \\
    --status_csv results/zoo/status.csv --settings '{"rank_by": {"analysis_set": "coco", "test": "t"}}' --png F.png --pdf F.pdf
"""

from pathlib import Path

import pandas as pd

from biastransfer.report.style import save_figure
from biastransfer.report.zoo import forest_figure
from biastransfer.scripting import run
from biastransfer.workflow.rules.zoo import ZooForestSettings


def main(ranking: str, status_csv: str, settings: ZooForestSettings, png: str, pdf: str) -> None:
    status = pd.read_csv(status_csv, keep_default_na=False, na_values=[""])
    fig = forest_figure(pd.read_csv(ranking), status, **settings.ranked_by())
    written = save_figure(fig, Path(png).with_suffix(""))
    if [str(p) for p in written] != [png, pdf]:
        raise ValueError(f"png and pdf must share one stem, got {png} and {pdf}")


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
