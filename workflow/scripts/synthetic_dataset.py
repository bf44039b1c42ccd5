"""Draw a synthetic planted-bias dataset: PNG images plus train/val splits with multi-label targets.

Standalone: python workflow/scripts/synthetic_dataset.py --spec '{"kind": "synthetic", "n_train": 200,
"n_val": 50, "cooccurrence": {"surfboard": 0.9}}' --images /tmp/syn/images --train /tmp/syn/train.parquet
--val /tmp/syn/val.parquet
"""

import logging

import numpy as np

from biastransfer.data import synthetic
from biastransfer.scripting import run
from biastransfer.data.splits import Split, write_split

log = logging.getLogger(__name__)


def main(spec: dict, images: str, train: str, val: str, wildcards: dict | None = None) -> None:
    name = (wildcards or {}).get("synthetic", "synthetic")
    distribution = synthetic.SceneDistribution(
        p_person=spec.get("p_person", 0.8), p_object=spec.get("p_object", 0.85),
        cooccurrence=spec.get("cooccurrence", {}), p_occluded=spec.get("p_occluded", 0.0),
    )
    label_groups = spec.get("label_groups", False)
    classes = synthetic.class_list(label_groups)
    rng = np.random.default_rng(spec.get("seed", 0))
    for split, n, out in (("train", spec["n_train"], train), ("val", spec["n_val"], val)):
        frame = synthetic.generate_split(
            name, split, n, distribution, label_groups=label_groups, size=spec.get("size", 64),
            rng=rng, image_dir=f"{images}/{split}",
        )
        write_split(out, Split(name, split, classes, frame))
        counts = frame["labels"].explode().value_counts().to_dict()
        log.info("%s/%s: %d images, label counts %s", name, split, n, counts)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
