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
from biastransfer.hashing import file_digest
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(spec: dict, train: str, attributes: str, synthetic: str = "synthetic") -> None:
    split = read_split(train)
    distribution = scenes.spec_distribution(spec)
    drawn = distribution.sample(spec["n_train"], np.random.default_rng(spec["seed"]))
    if len(drawn) != len(split.frame):
        raise ValueError(f"{train}: {len(split.frame)} images, but the spec of {synthetic!r} draws {len(drawn)}")
    for image_id, labels, scene in zip(split.frame["image_id"], split.frame["labels"], drawn):
        if sorted(labels) != scene.labels(spec["label_groups"]):
            raise ValueError(
                f"{train}: image {image_id!r} has labels {sorted(labels)}, but the spec of "
                f"{synthetic!r} draws {scene.labels(spec['label_groups'])}; was it made with another spec?"
            )
    attrs = scenes.figure_attributes(
        synthetic, "train", file_digest(train), split.classes, split.frame["image_id"], (s.person for s in drawn)
    )
    write_attributes(attributes, attrs)
    log.info("%s/train: attributes %s (None: no figure)", synthetic, attrs.counts())


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
