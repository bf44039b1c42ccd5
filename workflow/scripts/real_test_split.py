"""The evaluation (test) split of a COCO, Open Images or table dataset, without any analysis or training image.

COCO: val2017 less the analysis images (then also the model-selection split) or its seeded
``evaluation.holdout``; Open Images: the V4 test split's human-verified labels (or a seeded
``evaluation.subset``); a table: its rows with ``split: test``. Checked disjoint from the train split (and
from val, unless it is the model-selection split) by image id before it is written.
Standalone: python workflow/scripts/real_test_split.py --dataset '{"kind": "coco", "root": "data/coco"}' \
    --name coco --selections a/selection.parquet --train train.parquet --val val.parquet --test test.parquet
"""

import logging

import pandas as pd

from biastransfer.data.kinds import kind_of
from biastransfer.data.leakage import check_no_leakage
from biastransfer.data.splits import read_split_columns, write_split
from biastransfer.scripting import run
from biastransfer.workflow.config import evaluation_is_val

log = logging.getLogger(__name__)


def main(dataset: dict, name: str, selections: list, train: str, val: str, test: str) -> None:
    exclude = set()
    for path in selections:
        exclude |= set(pd.read_parquet(path, columns=["image_id"])["image_id"].astype(str))
    split = kind_of(dataset).test_split(dataset, name, exclude)
    disjoint = {"train": train} if evaluation_is_val(dataset) else {"train": train, "val": val}
    check_no_leakage(
        split.frame, {s: read_split_columns(p, ["image_id"]) for s, p in disjoint.items()}, what="evaluation"
    )
    write_split(test, split)
    log.info(
        "%s: %d images (%d analysis images excluded; disjoint from %s)",
        test,
        len(split.frame),
        len(exclude),
        " and ".join(disjoint),
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
