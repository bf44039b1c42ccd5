"""Draw a synthetic analysis set: fresh images per analysis class and their manifest.

Standalone: python workflow/scripts/synthetic_analysis_set.py --classes person_a person_b car --n_per_class 10
--size 64 --seed 0 --manifest /tmp/a/manifest.parquet --images /tmp/a/images [--synthetic_set NAME]
"""

import logging

from biastransfer.data import synthetic
from biastransfer.data.manifest import write_manifest
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(
    classes: list,
    n_per_class: int,
    size: int,
    seed: int,
    manifest: str,
    images: str,
    synthetic_set: str = "synthetic",
) -> None:
    frame = synthetic.generate_analysis_set(synthetic_set, classes, n_per_class, size=size, seed=seed, image_dir=images)
    write_manifest(manifest, frame)
    log.info("%s: %d classes x %d images", synthetic_set, len(classes), n_per_class)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
