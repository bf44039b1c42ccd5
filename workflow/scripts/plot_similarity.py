"""Intra- and inter-class similarity with their change, the rank-vs-rank scatter and the object+person
comparisons (paper Fig. 3) of one model on one analysis set.

Snakemake: rule plot_similarity (rules/report.smk). Standalone, for a reviewer:
python workflow/scripts/plot_similarity.py --similarity results/summary/similarity.csv
    --bts results/summary/bts.csv --change results/summary/similarity_change.csv --analysis_set coco --model resnet18
    --intra_png out/intra.png --intra_pdf out/intra.pdf --inter_png out/inter.png
    --inter_pdf out/inter.pdf --rank_png out/rank.png --rank_pdf out/rank.pdf --person_png out/person.png
    --person_pdf out/person.pdf
    --settings '{"alpha": 0.01, "adjust": "holm", "control_class": "random", "lists": {"intra": [...], "inter": [[p, q], ...]}}'

``lists`` (the analysis set's ``bts`` section) restricts the figures to the classes and pairs the
BTS ranks; when it lists none, every class and pair in the summary is drawn. ``change`` may be empty (no
bootstrap): the change panel then shows each seed's change without an interval.
"""

import logging
from pathlib import Path

import pandas as pd

from biastransfer.report.figures import (
    SIMILARITY_CHANGE_COLUMNS,
    SIMILARITY_COLUMNS,
    inter_figure,
    intra_figure,
    rank_figure,
)
from biastransfer.report.formatting import BTS_COLUMNS, read_summary
from biastransfer.report.person_figures import person_figure
from biastransfer.report.style import figure_stem, save_figure
from biastransfer.scripting import run
from biastransfer.workflow.rules.report import SimilarityFigures

log = logging.getLogger(__name__)


def _changes(path: str) -> pd.DataFrame | None:
    header = pd.read_csv(path, nrows=0).columns if Path(path).stat().st_size > 1 else []
    return read_summary(path, SIMILARITY_CHANGE_COLUMNS) if "delta" in header else None


def main(
    similarity: str,
    bts: str,
    change: str,
    intra_png: str,
    intra_pdf: str,
    inter_png: str,
    inter_pdf: str,
    rank_png: str,
    rank_pdf: str,
    person_png: str,
    person_pdf: str,
    analysis_set: str,
    model: str,
    settings: SimilarityFigures,
) -> None:
    alpha, adjust, control_class, lists = settings.alpha, settings.adjust, settings.control_class, settings.lists
    sims = read_summary(similarity, SIMILARITY_COLUMNS)
    scores = read_summary(bts, BTS_COLUMNS)
    changes = _changes(change)
    where = dict(analysis_set=analysis_set, model=model, lists=lists)
    figures = {
        figure_stem(intra_png, intra_pdf): intra_figure(
            sims, scores, changes, control_class=control_class, alpha=alpha, adjust=adjust, **where
        ),
        figure_stem(inter_png, inter_pdf): inter_figure(
            sims, scores, changes, control_class=control_class, alpha=alpha, adjust=adjust, **where
        ),
        figure_stem(rank_png, rank_pdf): rank_figure(sims, scores, **where),
        figure_stem(person_png, person_pdf): person_figure(sims, analysis_set=analysis_set, model=model),
    }
    for stem, fig in figures.items():
        png, pdf = save_figure(fig, stem)
        log.info("wrote %s and %s", png, pdf)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
