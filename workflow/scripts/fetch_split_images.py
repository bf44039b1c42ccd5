"""Make sure every image of a finetuning split is on disk (fetching the missing ones), then publish the split.

Image URLs follow from the path below the dataset root (COCO: images.cocodataset.org/<split>/<file>;
Open Images: the CVDF bucket open-images-dataset/<split>/<id>.jpg). Standalone:
python workflow/scripts/fetch_split_images.py --dataset '{"kind": "coco", "root": "data/coco"}' \
    --selected sel/train.parquet --published results/splits/coco/train.parquet
"""

import logging
import os
from pathlib import Path

from biastransfer.data.download import Download, fetch_many
from biastransfer.data.kinds import kind_of
from biastransfer.data.splits import read_split, write_split
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(dataset: dict, selected: str, published: str, workers: int = 8) -> None:
    s = read_split(selected)
    root = Path(dataset["root"] or ".")
    missing = [p for p in s.frame["path"] if not os.path.isfile(p)]
    # images and mirror: coco and openimages only (a table dataset has neither)
    if missing and (dataset.get("images") == "all" or kind_of(dataset).image_base_url is None):
        raise FileNotFoundError(f"{len(missing)} image(s) of {selected} missing under {root}, e.g. {missing[0]}")
    if missing:
        log.info("%s: fetching %d of %d images", selected, len(missing), len(s.frame))
        base = kind_of(dataset).image_base_url
        items = [Download(f"{base}/{Path(p).relative_to(root).as_posix()}", p) for p in missing]
        fetch_many(items, ".", workers=workers, mirror=dataset.get("mirror"))
    write_split(published, s)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
