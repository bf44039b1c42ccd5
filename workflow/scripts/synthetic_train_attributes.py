"""The per-image protected attribute of a synthetic dataset's training split: the figure each scene shows.

The training scenes are the first draws of the dataset's seed (synthetic_dataset.py draws the train scenes
before any image), so they are drawn again here without rendering; their labels must be the split's, image
by image, or the split was made with another spec (an error naming the first image that differs). The file
is what an intervention (kind intervention) rebalances.

Standalone (``spec`` as for synthetic_dataset.py):
python workflow/scripts/synthetic_train_attributes.py --spec '{"kind": "synthetic", "n_train": 200, ...}'
--train /tmp/syn/train.parquet --attributes /tmp/syn/train_attributes.parquet [--synthetic NAME]
"""

import logging

import numpy as np

from biastransfer.data import synthetic as scenes
from biastransfer.data.attributes import write_attributes
from biastransfer.data.splits import read_split
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(spec: dict, train: str, attributes: str, synthetic: str = "synthetic") -> None:
    split = read_split(train)
    distribution = scenes.spec_distribution(spec)
    drawn = distribution.sample(spec["n_train"], np.random.default_rng(spec["seed"]))
    attrs = scenes.drawn_split_attributes(train, split, drawn, spec, synthetic, "train")
    write_attributes(attributes, attrs)
    log.info("%s/train: attributes %s (None: no figure)", synthetic, attrs.counts())


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
