"""Heat map of iEAT effect sizes: models x concept pairs, one panel per stage (the network trained from scratch
last, when the run trains one), significance marks.

Snakemake: rule plot_ieat (rules/report.smk). Standalone, for a reviewer:
python workflow/scripts/plot_ieat.py --ieat results/summary/ieat.csv [--scratch results/summary/ieat_scratch.csv]
    --png out/ieat_heatmap.png --pdf out/ieat_heatmap.pdf --settings '{"alpha": 0.01, "adjust": "holm"}'
(adjust: holm or bh)
"""

import logging

from biastransfer.report.formatting import read_summary
from biastransfer.report.ieat_figures import ieat_heatmap
from biastransfer.report.style import figure_stem, save_figure
from biastransfer.report.tables import IEAT_COLUMNS, IEAT_PARTS, with_scratch
from biastransfer.scripting import run
from biastransfer.workflow.rules.report import SignificanceSettings

log = logging.getLogger(__name__)


def main(ieat: str, png: str, pdf: str, settings: SignificanceSettings, scratch: list | None = None) -> None:
    stem = figure_stem(png, pdf)
    scratch = [scratch] if isinstance(scratch, str) else list(scratch or [])  # none, or the scratch iEAT summary
    table = with_scratch(
        read_summary(ieat, IEAT_COLUMNS), read_summary(scratch[0], IEAT_COLUMNS + IEAT_PARTS) if scratch else None
    )
    written = save_figure(ieat_heatmap(table, alpha=settings.alpha, adjust=settings.adjust), stem)
    log.info("%d iEAT rows -> %s", len(table), ", ".join(map(str, written)))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
