"""The pre-flight check (biastransfer.preflight, workflow/scripts/preflight.py) on a small toy folder mirror."""

import copy
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT
from fake_datasets import paper_mirror

from biastransfer.data import toy_mirror
from biastransfer.data.download import apply_mirror
from biastransfer.models.registry import REGISTRY
from biastransfer.preflight import MISMATCH, MISSING, OK, REMOTE, UNLISTED, preflight
from biastransfer.workflow.config import fill_defaults

PAPER = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory):
    """(config, mirror): the paper config reduced to resnet18, every file in a folder mirror."""
    mirror = tmp_path_factory.mktemp("mirror")
    return fill_defaults(paper_mirror(mirror)), mirror


def test_a_complete_mirror_lists_every_file_as_ok(mirrored, tmp_path, monkeypatch):
    config, _ = mirrored
    monkeypatch.chdir(tmp_path)
    table = preflight(config)
    assert set(table["status"]) == {OK}
    groups = table.groupby("group").size().to_dict()
    assert groups["coco: paper lists"] == 13 and groups["openimages: paper lists"] == 16
    # analysis, train and val images; COCO's 12 evaluation images are in val2017, Open Images' in its test split;
    # COCO's train2017 and Open Images' train split also have five images with a person beside each of their
    # four and five curation objects
    assert groups["coco: images"] == 13 + 3 + 2 + 12 + 4 * 5 and groups["openimages: images"] == 16 + 3 + 2 + 12 + 5 * 5
    assert groups["openimages: annotations"] == 5, "class descriptions, train, validation and test labels, MIAP"
    assert groups["resnet18: weights"] == 1


def test_missing_and_changed_files_are_named(mirrored, tmp_path, monkeypatch):
    config, mirror = mirrored
    monkeypatch.chdir(tmp_path)
    image = next((mirror / "open-images-dataset.s3.amazonaws.com" / "train").iterdir())
    labels = apply_mirror(toy_mirror.oi.FILES["validation-annotations-human-imagelabels-boxable.csv"][0], mirror)
    saved_image, saved_labels = image.read_bytes(), open(labels, "rb").read()
    try:
        image.unlink()
        table = preflight(config).set_index("file")
        assert table.loc[f"data/openimages/train/{image.name}", "status"] == MISSING
        assert (table["status"] != OK).sum() == 1
        with open(labels, "ab") as fh:
            fh.write(b"\n")
        table = preflight(config).set_index("file")
        row = table.loc["data/openimages/annotations/validation-annotations-human-imagelabels-boxable.csv"]
        assert row["status"] == MISMATCH and "sha256" in row["detail"]
        # the images are listed from the annotation files, so with a changed label file they are not listed
        assert (table["status"] == UNLISTED).sum() == 1
        done = subprocess.run(
            [
                sys.executable,
                str(ROOT / "workflow" / "scripts" / "preflight.py"),
                "--configfile",
                str(ROOT / "config" / "paper.yaml"),
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 1 and "simclr_r50_v1" in done.stdout  # its converted weights are not there
    finally:
        image.write_bytes(saved_image)
        open(labels, "wb").write(saved_labels)


def test_without_a_mirror_the_downloads_are_remote(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = fill_defaults({**copy.deepcopy(PAPER), "models": {"resnet50": {}}})
    table = preflight(config)
    assert set(table["status"]) == {REMOTE, UNLISTED}
    assert (table["url"] == REGISTRY["resnet50"].weights).sum() == 1
