"""Draw the evaluation (test) split of a synthetic dataset and its per-image protected attribute.

Fresh scenes from the dataset's own distribution, drawn from the test seed stream of its seed
(biastransfer.data.synthetic.evaluation_rng), so that the train and val scenes stay as they were; checked
disjoint from train and val by image id and file sha256. The attribute is the figure each scene shows
(person_a / person_b); a scene without a figure has none (a null attribute, counted in the log).

Standalone (``spec`` as for synthetic_dataset.py, with ``n_test``):
python workflow/scripts/synthetic_test_split.py --settings '{"spec": {"kind": "synthetic", "n_test": 100,
"size": 64, "label_groups": false, "p_person": 0.8, "p_object": 0.85, "cooccurrence": {}, "p_occluded": 0,
"seed": 0}}'
--train /tmp/syn/train.parquet --val /tmp/syn/val.parquet --images /tmp/syn/test_images
--test /tmp/syn/test.parquet --attributes /tmp/syn/test_attributes.parquet [--synthetic NAME]
"""

import logging

import pandas as pd

from biastransfer.data import synthetic as scenes
from biastransfer.data.attributes import write_attributes
from biastransfer.data.leakage import check_no_leakage
from biastransfer.data.splits import Split, read_split, write_split
from biastransfer.hashing import file_digest
from biastransfer.scripting import run
from biastransfer.workflow.rules.data import SyntheticTestSplitSettings

log = logging.getLogger(__name__)


def draw_test_split(spec: dict, images: str, name: str) -> tuple[Split, pd.DataFrame]:
    """The test split (``spec['n_test']`` scenes) and its frame with each image's drawn ``figure``."""
    distribution = scenes.spec_distribution(spec)
    frame = scenes.generate_split(
        name,
        "test",
        spec["n_test"],
        distribution,
        label_groups=spec["label_groups"],
        size=spec["size"],
        rng=scenes.evaluation_rng(spec["seed"]),
        image_dir=images,
    )
    return Split(name, "test", scenes.class_list(spec["label_groups"]), frame), frame


def main(
    settings: SyntheticTestSplitSettings,
    train: str,
    val: str,
    images: str,
    test: str,
    attributes: str,
    synthetic: str = "synthetic",
) -> None:
    spec = settings.spec
    if spec["n_test"] < 1:
        raise ValueError(f"dataset {synthetic!r}: n_test is {spec['n_test']}, so it has no test split to draw")
    split, frame = draw_test_split(spec, images, synthetic)
    hashed = frame.assign(sha256=[file_digest(p) for p in frame["path"]])
    check_no_leakage(
        hashed,
        {
            s: read_split(p).frame.assign(sha256=lambda f: [file_digest(x) for x in f["path"]])
            for s, p in (("train", train), ("val", val))
        },
        what="test",
    )
    write_split(test, split)
    attrs = scenes.figure_attributes(
        synthetic, "test", file_digest(test), split.classes, frame["image_id"], frame["figure"]
    )
    write_attributes(attributes, attrs)
    log.info("%s/test: %d images, attributes %s (None: no figure, excluded)", synthetic, len(frame), attrs.counts())


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
