"""The per-image protected attribute of a synthetic dataset's validation split: the figure each scene shows.

synthetic_dataset.py draws the training scenes, renders them (which draws too) and then draws the validation
scenes from one generator; the same draws are made here, the training scenes rendered in memory and
dropped. The validation scenes' labels must be the split's, image by image, or the split was made with
another spec (an error naming the first image that differs). The file gives the groups of the worst-group
validation mAP (biastransfer.train.methods).

Standalone (``spec`` as for synthetic_dataset.py):
python workflow/scripts/synthetic_val_attributes.py --spec '{"kind": "synthetic", "n_train": 200, ...}'
--val /tmp/syn/val.parquet --attributes /tmp/syn/val_attributes.parquet [--synthetic NAME]
"""

import logging

import numpy as np

from biastransfer.data import synthetic as scenes
from biastransfer.data.attributes import write_attributes
from biastransfer.data.splits import read_split
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(spec: dict, val: str, attributes: str, synthetic: str = "synthetic") -> None:
    split = read_split(val)
    distribution = scenes.spec_distribution(spec)
    rng = np.random.default_rng(spec["seed"])
    for scene in distribution.sample(spec["n_train"], rng):
        scenes.draw_scene(scene, rng, spec["size"])
    drawn = distribution.sample(spec["n_val"], rng)
    attrs = scenes.drawn_split_attributes(val, split, drawn, spec, synthetic, "val")
    write_attributes(attributes, attrs)
    log.info("%s/val: attributes %s (None: no figure)", synthetic, attrs.counts())


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
