"""Training curves of one model finetuned on one dataset: loss and validation metric per epoch and seed.

Snakemake: rule plot_curves (rules/report.smk). Standalone, for a reviewer:
python workflow/scripts/plot_curves.py --curves results/finetune/coco/resnet18/seed0/curve.csv ...
    --metrics results/finetune/coco/resnet18/seed0/metrics.json ... --png out/curves.png --pdf out/curves.pdf
"""

import logging

from biastransfer.report.curves import curves_figure, read_curves
from biastransfer.report.style import figure_stem, save_figure
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(curves: list, metrics: list, png: str, pdf: str) -> None:
    stem = figure_stem(png, pdf)
    table = read_curves(curves, metrics)
    written = save_figure(curves_figure(table), stem)
    log.info("%d runs, %d epochs -> %s", len(curves), len(table), ", ".join(map(str, written)))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
