"""Write the synthetic demo's images as "your own images": a folder of analysis classes and a finetuning table.

Not a workflow rule: it makes the input files of config/examples/own_images.yaml (docs/datasets.md,
"Your own images"). ``out``/analysis/<class>/*.png holds ``n_per_class`` fresh analysis images per class;
``out``/finetune.csv lists ``n_images`` scenes of the unbiased finetuning distribution (images in
``out``/images/) with columns path (relative to the table), labels (joined by "|") and licence.
Standalone: python workflow/scripts/export_synthetic_images.py --out data/own_images
"""

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from biastransfer.atomic import write_csv
from biastransfer.data import synthetic
from biastransfer.scripting import run

log = logging.getLogger(__name__)

CLASSES = ("person_a", "person_b", "car", "surfboard", "refrigerator", "stop_sign", "random")


def main(
    out: str, n_per_class: int = 40, n_images: int = 1800, size: int = 64, seed: int = 13, classes: list | None = None
) -> None:
    root = Path(out)
    for i, cls in enumerate(classes or CLASSES):
        synthetic.generate_analysis_set(
            "own", [cls], n_per_class, size=size, seed=seed + 1 + i, image_dir=root / "analysis" / cls
        )
    frame = synthetic.generate_split(
        "own",
        "all",
        n_images,
        synthetic.SceneDistribution(),
        label_groups=False,
        size=size,
        rng=np.random.default_rng(seed),
        image_dir=root / "images",
    )
    table = pd.DataFrame(
        {
            "path": [Path(p).relative_to(root).as_posix() for p in frame["path"]],
            "labels": ["|".join(labels) for labels in frame["labels"]],
            "licence": "CC0",
        }
    )
    write_csv(root / "finetune.csv", table)
    log.info(
        "%s: %d analysis classes x %d images, %d finetuning images",
        root,
        len(classes or CLASSES),
        n_per_class,
        n_images,
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
