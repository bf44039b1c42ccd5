"""Finetuning splits of a COCO or Open Images dataset, without any analysis image.

COCO: train2017 / val2017 with the 80 categories as labels. Open Images: train / validation with the
601 boxable classes (human-verified positives), the train split optionally subsampled
(``train_subset``). Images chosen by any analysis-set selection of this dataset are excluded.
Standalone: python workflow/scripts/make_splits.py --dataset '{"kind": "coco", "root": "data/coco"}' \
    --name coco --selections a/selection.parquet --train train.parquet --val val.parquet
"""

import logging

import pandas as pd

from biastransfer.data.kinds import kind_of
from biastransfer.data.splits import write_split
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(dataset: dict, name: str, selections: list, train: str, val: str) -> None:
    exclude = set()
    for path in selections:
        exclude |= set(pd.read_parquet(path, columns=["image_id"])["image_id"].astype(str))
    for out, split in zip((train, val), kind_of(dataset).make_splits(dataset, name, exclude)):
        write_split(out, split)
        log.info("%s: %d images (%d analysis images excluded)", out, len(split.frame), len(exclude))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
