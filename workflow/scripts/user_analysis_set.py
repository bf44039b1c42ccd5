"""The manifest of an analysis set of your own images (``source: folder`` or ``source: table``).

Every listed file is hashed and opened as an image; classes must be disjoint (no file or identical image
in two), image ids unique and every class at least ``min_per_class`` strong. Every problem is named,
one line per file or table row, and nothing is written. ``threads`` threads read the files (more help
on network file systems). Standalone:
python workflow/scripts/user_analysis_set.py --analysis_set '{"source": "folder", "root": "my_images",
"classes": ["person_a", "person_b", "car", "surfboard"]}' --manifest manifest.parquet --threads 4
"""

import logging

from biastransfer.data.user import analysis_set_manifest
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(analysis_set: dict, manifest: str, threads: int = 1) -> None:
    frame = analysis_set_manifest(analysis_set, manifest, workers=threads)
    sizes = frame.groupby("class", sort=False).size()
    log.info(
        "%s: %d images in %d classes (%s)",
        manifest,
        len(frame),
        len(sizes),
        ", ".join(f"{c} {n}" for c, n in sizes.items()),
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
