"""Forest plot of every iEAT: d with its bootstrap interval for the pretrained network, each finetuned seed and
the network trained from scratch (when the run trains one); filled markers are significant. With
--analysis_set, the iEATs of that analysis set alone (a run with more rows than report.artefacts.FOREST_ROWS
draws one plot per analysis set).

Snakemake: rule plot_forest (rules/report.smk). Standalone, for a reviewer:
python workflow/scripts/plot_forest.py --ieat results/summary/ieat.csv
    [--scratch results/summary/ieat_scratch.csv] --png out/ieat_forest.png --pdf out/ieat_forest.pdf
    --svg out/ieat_forest.svg --settings '{"alpha": 0.01, "adjust": "holm"}' [--analysis_set A]
(adjust: holm or bh)
"""

import logging
from pathlib import Path

from biastransfer.report.forest import FOREST_COLUMNS, forest_figure
from biastransfer.report.formatting import read_summary, rows_where
from biastransfer.report.style import figure_stem, save_figure
from biastransfer.scripting import run
from biastransfer.workflow.rules.report import ForestSettings

log = logging.getLogger(__name__)


def main(
    ieat: str,
    png: str,
    pdf: str,
    svg: str,
    settings: ForestSettings,
    scratch: list | None = None,
    analysis_set: str = "",
) -> None:
    stem = figure_stem(png, pdf)
    if Path(svg) != stem.with_suffix(".svg"):
        raise ValueError(f"output {svg!r} must be {stem}.svg, beside {png!r}")
    scratch = [scratch] if isinstance(scratch, str) else list(scratch or [])  # none, or the scratch iEAT summary
    table = read_summary(ieat, FOREST_COLUMNS)
    reference = read_summary(scratch[0], FOREST_COLUMNS) if scratch else None
    if analysis_set:
        table = rows_where(table, FOREST_COLUMNS, "analysis_set", analysis_set, where=ieat)
        reference = None if reference is None else reference[reference["analysis_set"] == analysis_set]
    fig = forest_figure(table, reference, alpha=settings.alpha, adjust=settings.adjust)
    written = save_figure(fig, stem, formats=("png", "pdf", "svg"))
    log.info(
        "%d iEAT rows (%d scratch) -> %s",
        len(table),
        len(reference if reference is not None else []),
        ", ".join(map(str, written)),
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
