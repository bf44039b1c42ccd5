"""Mitigation arms as training jobs (biastransfer.train.run) on a tiny fake COCO tree: DFR keeps the start
network's embeddings exactly, LEACE's embeddings are its erased features, the metrics record the method,
the selection and the worst-group mAP, and bad inputs fail before any training."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch
from fake_datasets import coco_splits
from test_train import datasets, model_for, spec_of

from biastransfer.data.attributes import Attributes, write_attributes
from biastransfer.data.splits import read_split
from biastransfer.hashing import file_digest
from biastransfer.models.checkpoints import load_classifier_from_checkpoint
from biastransfer.models.extractors import create_backbone
from biastransfer.models.loading import read_weights_file
from biastransfer.train.methods import MethodConfig
from biastransfer.train.run import TrainingFiles, run_training, train_config

HYPER = {"epochs": 2, "lr": 0.05, "batch_size": 8}


def attribute_file(split_path, out, values=("man", "woman")):
    """An attribute file of a split: the images alternately of each value (every fifth without one)."""
    split = read_split(split_path)
    ids = split.frame["image_id"].astype(str).tolist()
    given = [None if i % 5 == 4 else values[i % 2] for i in range(len(ids))]
    frame = pd.DataFrame({"image_id": ids, "attribute": given, "source": [v and "test" for v in given]})
    write_attributes(out, Attributes(split.dataset, split.name, file_digest(split_path), values, (), frame))
    return str(out)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("methods")
    train, val = coco_splits(root)
    return {
        "train": str(train),
        "val": str(val),
        "train_attributes": attribute_file(train, root / "train_attributes.parquet"),
        "val_attributes": attribute_file(val, root / "val_attributes.parquet"),
    }


def run(tree, out, method=None, start=None, attributes=True):
    spec = spec_of("timm")
    files = TrainingFiles(
        tree["train"],
        tree["val"],
        str(out / "model.safetensors"),
        str(out / "metrics.json"),
        str(out / "curve.csv"),
        train_attributes=tree["train_attributes"] if attributes else None,
        val_attributes=tree["val_attributes"] if attributes else None,
    )
    return run_training(
        lambda classes: model_for(spec, len(classes)),
        spec,
        files,
        train_config(HYPER, 0, 0),
        device=torch.device("cpu"),
        threads=1,
        log=lambda m: None,
        method=method,
        start=start,
    )


@pytest.fixture(scope="module")
def plain(tree, tmp_path_factory):
    out = tmp_path_factory.mktemp("plain")
    return out / "model.safetensors", run(tree, out)


def embeddings(tree, checkpoint):
    spec = spec_of("timm")
    backbone = create_backbone(spec, checkpoint)
    _, val = datasets({"coco": (tree["train"], tree["val"])}, "coco", spec)
    x = torch.stack([val[i][0] for i in range(8)])
    with torch.no_grad():
        return backbone(x)


def test_plain_finetuning_records_its_method_selection_and_worst_group(plain):
    _, metrics = plain
    assert (metrics["method"], metrics["selection"]) == ("plain", "map")
    assert 0 <= metrics["metric_worst_group"] <= 1
    assert metrics["history"][metrics["epoch_best"] - 1]["worst_group"] == metrics["metric_worst_group"]


def test_without_attribute_files_the_worst_group_is_absent(tree, tmp_path):
    metrics = run(tree, tmp_path, attributes=False)
    assert metrics["metric_worst_group"] is None and metrics["method"] == "plain"


def test_dfr_keeps_the_start_networks_backbone_tensors_and_embeddings(tree, plain, tmp_path):
    start, _ = plain
    metrics = run(tree, tmp_path, MethodConfig("dfr"), start=str(start))
    before, _ = read_weights_file(start)
    after, _ = read_weights_file(tmp_path / "model.safetensors")
    backbone = [k for k in before if k.startswith("backbone.")]
    assert backbone and set(backbone) == {k for k in after if k.startswith("backbone.")}
    assert all(torch.equal(before[k], after[k]) for k in backbone)
    assert not torch.equal(before["head.weight"], after["head.weight"])
    assert torch.equal(embeddings(tree, start), embeddings(tree, tmp_path / "model.safetensors"))
    assert metrics["method"] == "dfr" and metrics["start_sha256"] == file_digest(start)
    assert json.loads((tmp_path / "metrics.json").read_text())["metric_worst_group"] == metrics["metric_worst_group"]


def test_leace_networks_embed_the_erased_features(tree, plain, tmp_path):
    start, _ = plain
    run(tree, tmp_path, MethodConfig("leace"), start=str(start))
    after, _ = read_weights_file(tmp_path / "model.safetensors")
    weight, bias = after["backbone.eraser.weight"], after["backbone.eraser.bias"]
    erased = embeddings(tree, start) @ weight.T + bias
    assert torch.allclose(embeddings(tree, tmp_path / "model.safetensors"), erased, atol=1e-5)
    # the prediction jobs' loader: the classifier's backbone applies the eraser before its head
    classifier, _ = load_classifier_from_checkpoint(tmp_path / "model.safetensors")
    _, val = datasets({"coco": (tree["train"], tree["val"])}, "coco", spec_of("timm"))
    with torch.no_grad():
        logits = classifier(torch.stack([val[i][0] for i in range(8)]))
    assert torch.allclose(logits, erased @ after["head.weight"].T + after["head.bias"], atol=1e-4)


@pytest.mark.parametrize("method", ["group_dro", "domain_independent", "adversarial"])
def test_loop_methods_write_a_plain_classifier_checkpoint(tree, plain, tmp_path, method):
    start, _ = plain
    metrics = run(tree, tmp_path, MethodConfig(method))
    after, _ = read_weights_file(tmp_path / "model.safetensors")
    before, _ = read_weights_file(start)
    assert set(after) == set(before) and metrics["method"] == method


def test_worst_group_selection_with_an_empty_validation_group_fails_before_training(tree, tmp_path):
    lopsided = dict(tree, val_attributes=attribute_file(tree["val"], tmp_path / "v.parquet", ("man", "woman")))
    frame = pd.read_parquet(lopsided["val_attributes"])
    split = read_split(tree["val"])
    # every validation image labelled with the first class gets no attribute value: its groups are empty
    first = split.classes[0]
    empty = [first in labels for labels in split.frame["labels"]]
    frame.loc[empty, ["attribute", "source"]] = None
    write_attributes(
        lopsided["val_attributes"],
        Attributes(split.dataset, "val", file_digest(tree["val"]), ("man", "woman"), (), frame),
    )
    with pytest.raises(ValueError, match=rf"v\.parquet: .*is labelled '{first}'"):
        run(lopsided, tmp_path / "out", MethodConfig(selection="worst_group"))
    assert not (tmp_path / "out").exists()


def test_a_method_without_the_attribute_file_is_a_named_error(tree, tmp_path):
    with pytest.raises(ValueError, match="method group_dro needs the training split's attribute file"):
        run(tree, tmp_path, MethodConfig("group_dro"), attributes=False)


def test_a_head_only_method_without_its_start_network_is_a_named_error(tree, tmp_path):
    with pytest.raises(ValueError, match="method dfr needs the finetuned network it starts from"):
        run(tree, tmp_path, MethodConfig("dfr"))


SYNTHETIC = {
    "kind": "synthetic",
    "n_train": 40,
    "n_val": 30,
    "size": 32,
    "label_groups": True,
    "p_person": 0.8,
    "p_object": 0.85,
    "cooccurrence": {"surfboard": 0.9},
    "p_occluded": 0.6,
    "seed": 3,
}


def test_synthetic_validation_attributes_are_the_drawn_figures(tmp_path):
    """With the figures labelled (label_groups), each validation image's attribute is its figure label; a spec
    that draws other scenes is an error naming the image."""
    from report_site import script

    train, val = str(tmp_path / "train.parquet"), str(tmp_path / "val.parquet")
    script("synthetic_dataset").main(SYNTHETIC, str(tmp_path / "images"), train, val, "syn")
    script("synthetic_val_attributes").main(SYNTHETIC, val, str(tmp_path / "va.parquet"), "syn")
    attrs = pd.read_parquet(tmp_path / "va.parquet")
    labels = read_split(val).frame["labels"]
    figures = [next((x for x in labels if x.startswith("person_")), None) for labels in labels]
    assert [None if pd.isna(v) else v for v in attrs["attribute"]] == figures and any(figures)
    with pytest.raises(ValueError, match="image 'syn-val-.*was it made with another spec"):
        script("synthetic_val_attributes").main(SYNTHETIC | {"seed": 4}, val, str(tmp_path / "x.parquet"), "syn")
