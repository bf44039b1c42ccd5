"""Training curves of one model finetuned on one dataset (or of its scratch reference networks): loss
and validation metric per epoch and seed.

Snakemake: rule plot_curves (rules/report.smk). Standalone, for a reviewer:
python workflow/scripts/plot_curves.py --curves results/finetune/coco/resnet18/seed0/curve.csv ...
    --metrics results/finetune/coco/resnet18/seed0/metrics.json ... --png out/curves.png --pdf out/curves.pdf
    --settings '{"scratch": false}'
Scratch reference networks (rule plot_scratch_curves) keep their curve in metrics.json: give only --metrics and
--settings '{"scratch": true}'.
"""

import logging

from biastransfer.report.curves import curves_figure, read_curves, read_histories
from biastransfer.report.style import figure_stem, save_figure
from biastransfer.scripting import run
from biastransfer.workflow.rules.report import CurvesFigure

log = logging.getLogger(__name__)


def main(metrics: list, png: str, pdf: str, settings: CurvesFigure, curves: list | None = None) -> None:
    stem, scratch = figure_stem(png, pdf), settings.scratch
    table = read_histories(metrics) if scratch else read_curves(curves or [], metrics)
    written = save_figure(curves_figure(table, scratch=scratch), stem)
    log.info("%d runs, %d epochs -> %s", len(metrics), len(table), ", ".join(map(str, written)))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
