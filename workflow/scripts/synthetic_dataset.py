"""Draw a synthetic planted-bias dataset: PNG images plus train/val splits with multi-label targets.

Standalone (``spec`` is a dataset entry with every key, as the schema's defaults fill it):
python workflow/scripts/synthetic_dataset.py --spec '{"kind": "synthetic", "n_train": 200, "n_val": 50,
"size": 64, "label_groups": false, "p_person": 0.8, "p_object": 0.85, "cooccurrence": {"surfboard": 0.9},
"p_occluded": 0, "seed": 0}' --images /tmp/syn/images --train /tmp/syn/train.parquet --val /tmp/syn/val.parquet
[--synthetic NAME]
"""

import logging

import numpy as np

from biastransfer.data import synthetic as scenes
from biastransfer.data.splits import Split, write_split
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(spec: dict, images: str, train: str, val: str, synthetic: str = "synthetic") -> None:
    name = synthetic
    distribution = scenes.spec_distribution(spec)
    label_groups = spec["label_groups"]
    classes = scenes.class_list(label_groups)
    rng = np.random.default_rng(spec["seed"])
    for split, n, out in (("train", spec["n_train"], train), ("val", spec["n_val"], val)):
        frame = scenes.generate_split(
            name,
            split,
            n,
            distribution,
            label_groups=label_groups,
            size=spec["size"],
            rng=rng,
            image_dir=f"{images}/{split}",
        )
        write_split(out, Split(name, split, classes, frame))
        counts = frame["labels"].explode().value_counts().to_dict()
        log.info("%s/%s: %d images, label counts %s", name, split, n, counts)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
