"""Intra-class bars, inter-class bars and the rank-vs-rank scatter of one model on one analysis set.

Snakemake: rule plot_similarity (rules/report.smk). Standalone, for a reviewer:
python workflow/scripts/plot_similarity.py --similarity results/summary/similarity.csv
    --bts results/summary/bts.csv --analysis_set coco --model resnet18
    --intra_png out/intra.png --intra_pdf out/intra.pdf --inter_png out/inter.png
    --inter_pdf out/inter.pdf --rank_png out/rank.png --rank_pdf out/rank.pdf
    --adjust holm [--control_class random] [--lists '{"intra": [...], "inter": [[p, q], ...]}']

``lists`` (the analysis set's ``bts`` section) restricts the figures to the classes and pairs the
BTS ranks; without it every class and pair in the summary is drawn.
"""

import logging
from pathlib import Path

from biastransfer.report.figures import BTS_COLUMNS, SIMILARITY_COLUMNS, intra_figure, inter_figure, rank_figure, save_figure
from biastransfer.scripting import run
from biastransfer.report.formatting import read_summary

log = logging.getLogger(__name__)


def _stem(png: str, pdf: str) -> Path:
    stem = Path(png).with_suffix("")
    if Path(pdf).with_suffix("") != stem or Path(png).suffix != ".png" or Path(pdf).suffix != ".pdf":
        raise ValueError(f"outputs {png!r} and {pdf!r} must be <stem>.png and <stem>.pdf")
    return stem


def main(
    similarity: str, bts: str, intra_png: str, intra_pdf: str, inter_png: str, inter_pdf: str, rank_png: str,
    rank_pdf: str, analysis_set: str, model: str, adjust: str, control_class: str | None = None,
    lists: dict | None = None,
) -> None:
    sims = read_summary(similarity, SIMILARITY_COLUMNS)
    scores = read_summary(bts, BTS_COLUMNS)
    where = dict(analysis_set=analysis_set, model=model, lists=lists)
    figures = {
        _stem(intra_png, intra_pdf): intra_figure(sims, scores, control_class=control_class, adjust=adjust, **where),
        _stem(inter_png, inter_pdf): inter_figure(sims, scores, control_class=control_class, adjust=adjust, **where),
        _stem(rank_png, rank_pdf): rank_figure(sims, scores, **where),
    }
    for stem, fig in figures.items():
        png, pdf = save_figure(fig, stem)
        log.info("wrote %s and %s", png, pdf)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
