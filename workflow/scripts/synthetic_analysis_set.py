"""Draw a synthetic analysis set: fresh images per analysis class and their manifest.

Standalone: python workflow/scripts/synthetic_analysis_set.py --spec '{"dataset": "d", "source": "synthetic",
"classes": ["person_a", "person_b", "car"], "n_per_class": 10}' --manifest /tmp/a/manifest.parquet --images /tmp/a/images
"""

import logging

from biastransfer.data import synthetic
from biastransfer.data.manifest import write_manifest
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(spec: dict, manifest: str, images: str, wildcards: dict | None = None) -> None:
    name = (wildcards or {}).get("synthetic_set", "synthetic")
    frame = synthetic.generate_analysis_set(
        name, spec["classes"], spec.get("n_per_class", 40), size=spec.get("size", 64),
        seed=spec.get("seed", 0), image_dir=images,
    )
    write_manifest(manifest, frame)
    log.info("%s: %d classes x %d images", name, len(spec["classes"]), spec.get("n_per_class", 40))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
