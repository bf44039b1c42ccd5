"""Fetch the images of an analysis-set selection that are not on disk yet, hash them, write the manifest.

With ``images: all`` nothing is downloaded (the unpacked archives must hold every image).
Standalone: python workflow/scripts/fetch_analysis_images.py --selection sel.parquet --manifest m.parquet
"""

import pandas as pd

from biastransfer.data.curation import manifest_from_selection
from biastransfer.data.manifest import write_manifest
from biastransfer.scripting import run


def main(selection: str, manifest: str, images: str = "needed", mirror: str | None = None, workers: int = 8) -> None:
    sel = pd.read_parquet(selection)
    write_manifest(manifest, manifest_from_selection(sel, download=images != "all", mirror=mirror, workers=workers))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
