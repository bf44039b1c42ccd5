"""Tiny COCO and Open Images finetuning splits in the real formats, with learnable images.

The annotation files come from the dataset tests' own builders (``test_coco.build_split`` and
``test_openimages.plan``/``CLASSES``) and go through the real parsers and ``make_split``; each image
then gets one coloured square per label at a class-specific place, so a small CNN can learn them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

from biastransfer.data import coco
from biastransfer.data import openimages as oi
from biastransfer.data.manifest import write_manifest
from biastransfer.data.splits import Split, write_split
from biastransfer.data.toy_mirror import label_image
from biastransfer.hashing import file_digest


def write_images(split: Split, size: int) -> None:
    """Write a JPEG at every path of ``split`` drawn from its labels."""
    for n, (path, labels) in enumerate(zip(split.frame["path"], split.frame["labels"])):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        label_image(list(labels), list(split.classes), size, seed=n).save(path, quality=95)


def export_own_images(cwd: Path, n_per_class: int, size: int) -> None:
    """The images of config/examples/own_images.yaml (``data/own_images`` in ``cwd``), written by the export
    script as its header says, at a toy size: ``n_per_class`` analysis images per class, 60 finetuning images
    of ``size`` px."""
    script = Path(__file__).resolve().parents[1] / "workflow" / "scripts" / "export_synthetic_images.py"
    options = ["--out", "data/own_images", "--n_per_class", str(n_per_class), "--n_images", "60", "--size", str(size)]
    subprocess.run([sys.executable, str(script), *options], cwd=cwd, check=True, capture_output=True)


def write_image_manifest(path: Path, images: list[tuple[Path, str]]) -> None:
    """An analysis set's manifest at ``path`` of these (image file, class) pairs, ids ``i0, i1, ...``."""
    rows = [
        {
            "image_id": f"i{i}",
            "class": cls,
            "path": str(image),
            "sha256": file_digest(image),
            "source_split": "val",
            "source": "test",
            "reason": "",
        }
        for i, (image, cls) in enumerate(images)
    ]
    write_manifest(path, pd.DataFrame(rows))


def coco_splits(root: Path, size: int = 48) -> tuple[Path, Path]:
    """(train.parquet, val.parquet) of a fake COCO 2017 tree under ``root`` (4 classes, 30 + 30 images)."""
    from test_coco import build_split

    ann_dir = root / "coco" / "annotations"
    ann_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for split, start, name in (("train2017", 500, "train"), ("val2017", 100, "val")):
        inst, _, _ = build_split(split, start)
        (ann_dir / f"instances_{split}.json").write_text(json.dumps(inst))
        parsed = coco.load_instances(ann_dir / f"instances_{split}.json")
        made = coco.make_split(parsed, dataset="coco", name=name, root=root / "coco")
        write_images(made, size)
        write_split(root / "splits" / "coco" / f"{name}.parquet", made)
        paths.append(root / "splits" / "coco" / f"{name}.parquet")
    return paths[0], paths[1]


def openimages_splits(root: Path, size: int = 48) -> tuple[Path, Path]:
    """(train.parquet, val.parquet) of fake Open Images V4 label files under ``root`` (10 classes).

    Every third labelled image is held out for validation.
    """
    from test_openimages import CLASSES, M, plan

    d = root / "openimages"
    d.mkdir(parents=True, exist_ok=True)
    (d / "classes.csv").write_text("".join(f"{m},{n}\n" for m, n in CLASSES))
    lines = ["ImageID,Source,LabelName,Confidence"]
    for image_id, labels, _ in plan():
        lines += [f"{image_id},verification,{M[name]},{conf}" for name, conf in labels]
    (d / "labels.csv").write_text("\n".join(lines) + "\n")
    classes = oi.load_classes(d / "classes.csv")
    labels = oi.load_labels(d / "labels.csv", classes)
    ids = sorted(set(labels["image_id"]))
    val_ids, train_ids = ids[::3], [i for k, i in enumerate(ids) if k % 3]
    paths = []
    for name, source, exclude in (("train", "train", val_ids), ("val", "validation", train_ids)):
        made = oi.make_split(
            labels, classes, dataset="openimages", name=name, source_split=source, root=d, exclude=exclude
        )
        write_images(made, size)
        write_split(root / "splits" / "openimages" / f"{name}.parquet", made)
        paths.append(root / "splits" / "openimages" / f"{name}.parquet")
    return paths[0], paths[1]


def paper_mirror(mirror: Path, models: tuple = ("resnet18",), **counts) -> dict:
    """config/paper.yaml with its datasets, lists and ``models`` (toy weights) in a folder mirror of toy files.

    ``counts`` go to the toy_mirror builders (default: one image per analysis class, 3 train, 2 val, 16 px).
    """
    import yaml
    from conftest import ROOT

    from biastransfer.data import toy_mirror
    from biastransfer.data.download import apply_mirror
    from biastransfer.models.registry import REGISTRY
    from biastransfer.models.toy_weights import write_weights

    config = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())
    sizes = toy_mirror.ToySizes(**{"per_class": 1, "n_train": 3, "n_val": 2, "size": 16, **counts})
    for aset in config["analysis_sets"].values():
        cur, base = aset["curation"], aset["paper"]["base_url"]
        if config["datasets"][aset["dataset"]]["kind"] == "coco":
            lists, ann = toy_mirror.build_coco(mirror, base, aset["classes"], objects=cur["objects"], sizes=sizes)
        else:
            lists, ann = toy_mirror.build_openimages(
                mirror, base, aset["classes"], objects=cur["objects"], genders=cur["genders"], sizes=sizes
            )
        aset["paper"]["files"] = lists
        config["datasets"][aset["dataset"]].update(mirror=str(mirror), checksums=ann)
    if models:
        config["models"] = {}
        config.pop("claims")  # the paper's claims name all six models
    for name in models:
        path = write_weights(REGISTRY[name], apply_mirror(REGISTRY[name].weights, mirror))
        config["models"][name] = {"sha256": toy_mirror.sha256_of(path)}
    config["weights"]["mirror"] = str(mirror)
    return config
