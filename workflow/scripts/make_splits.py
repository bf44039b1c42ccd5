"""Finetuning splits of a COCO or Open Images dataset, without any analysis image.

COCO: train2017 / val2017 with the 80 categories as labels. Open Images: train / validation with the
601 boxable classes (human-verified positives), the train split optionally subsampled
(``train_subset``). Images chosen by any analysis-set selection of this dataset are excluded.
Standalone: python workflow/scripts/make_splits.py --dataset '{"kind": "coco", "root": "data/coco"}' \
    --name coco --selections a/selection.parquet --train train.parquet --val val.parquet
"""

import logging
from pathlib import Path

import pandas as pd

from biastransfer.data import coco
from biastransfer.data import openimages
from biastransfer.scripting import run
from biastransfer.data.splits import write_split

log = logging.getLogger(__name__)


def main(dataset: dict, name: str, selections: list, train: str, val: str) -> None:
    exclude = set()
    for path in selections:
        exclude |= set(pd.read_parquet(path, columns=["image_id"])["image_id"].astype(str))
    root, ann = Path(dataset["root"]), Path(dataset["root"]) / "annotations"
    seed = int(dataset.get("seed", 0))
    if dataset["kind"] == "coco":
        for out, split in ((train, "train2017"), (val, "val2017")):
            inst = coco.load_instances(ann / f"instances_{split}.json")
            s = coco.make_split(inst, dataset=name, name=Path(out).stem, root=root, exclude=exclude,
                                drop_unlabeled=dataset.get("drop_unlabeled", False))
            write_split(out, s)
            log.info("%s: %d images (%d analysis images excluded)", out, len(s.frame), len(exclude))
        return
    classes = openimages.load_classes(ann / "class-descriptions-boxable.csv")
    for out, split, subset in ((train, "train", dataset.get("train_subset")), (val, "validation", dataset.get("val_subset"))):
        labels = openimages.load_labels(ann / f"{split}-annotations-human-imagelabels-boxable.csv", classes,
                                        verified_only=dataset.get("verified_only", True))
        s = openimages.make_split(labels, classes, dataset=name, name=Path(out).stem, source_split=split, root=root,
                                  exclude=exclude, subset=subset, seed=seed)
        write_split(out, s)
        log.info("%s: %d images", out, len(s.frame))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
