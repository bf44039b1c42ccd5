"""Faults on the paper's real-data path, over loopback HTTP from a toy mirror (small targets, not the whole DAG).

An image missing from the mirror, a truncated annotation zip and a label CSV whose checksum changed fail the
run naming the URL and leave no output or partial file behind; a burst of HTTP 503s is retried through. After
the fix a rerun completes without redoing finished work.
"""

import shutil

import pytest
import yaml
from conftest import run_snakemake as snakemake
from fake_datasets import paper_mirror
from loopback import FileServer

from biastransfer.data import openimages as oi
from biastransfer.data.download import apply_mirror

pytestmark = pytest.mark.slow

OI_MANIFEST = "results/analysis_sets/openimages/manifest.parquet"
COCO_OK = "results/data/coco/annotations.ok"
OI_OK = "results/data/openimages/annotations.ok"


@pytest.fixture
def served(tmp_path):
    """(workdir, config file, mirror folder, server) with every remote file of the paper config served."""
    mirror = tmp_path / "mirror"
    config = paper_mirror(mirror, models=(), per_class=2)  # manifests need two images a class
    with FileServer(root=mirror) as server:
        for entry in config["datasets"].values():
            if "mirror" in entry:  # not an intervention
                entry["mirror"] = server.url
        config["weights"]["mirror"] = server.url
        path = tmp_path / "toy.yaml"
        path.write_text(yaml.safe_dump(config))
        workdir = tmp_path / "run"
        workdir.mkdir()
        yield workdir, path, mirror, server


def run(served, *targets, check=True):
    workdir, config = served[:2]
    return snakemake("--cores", "1", *targets, "--configfile", config, cwd=workdir, check=check)


def rules_run(done) -> set:
    return {
        line.split()[-1].rstrip(":")
        for line in done.stderr.splitlines() + done.stdout.splitlines()
        if line.startswith(("rule ", "localrule "))
    }


def hidden(path):
    """Move ``path`` aside; return a function that puts it back."""
    aside = path.with_name(path.name + ".aside")
    path.rename(aside)
    return lambda: aside.rename(path)


def test_a_missing_image_fails_naming_its_url_and_503s_are_retried(served):
    workdir, config, mirror, server = served
    base = yaml.safe_load(config.read_text())["analysis_sets"]["openimages"]["paper"]["base_url"]
    car, man = (open(apply_mirror(f"{base}/{c}.txt", mirror)).read().split()[0] for c in ("car", "man"))
    flaky = f"/open-images-dataset.s3.amazonaws.com/validation/{car}.jpg"
    lost_file = mirror / "open-images-dataset.s3.amazonaws.com" / "validation" / f"{man}.jpg"
    server.fail[flaky] = 2  # two 503s, then the file
    restore = hidden(lost_file)
    done = run(served, OI_MANIFEST, check=False)
    assert done.returncode != 0
    assert f"validation/{lost_file.name}: HTTP 404" in done.stdout + done.stderr
    assert not (workdir / OI_MANIFEST).exists() and not list(workdir.rglob("*.partial"))
    assert [p for p, _ in server.requests].count(flaky) >= 3 and (
        workdir / "data/openimages/validation" / flaky.rsplit("/", 1)[-1]
    ).is_file()
    restore()
    again = run(served, OI_MANIFEST)
    assert rules_run(again) == {"fetch_analysis_images"}, "only the failed job reruns"
    assert (workdir / OI_MANIFEST).is_file()


def test_a_truncated_zip_and_a_changed_label_csv_fail_and_leave_nothing(served):
    workdir, _, mirror, server = served
    archive = mirror / "images.cocodataset.org" / "annotations" / "annotations_trainval2017.zip"
    labels = apply_mirror(oi.FILES["validation-annotations-human-imagelabels-boxable.csv"][0], mirror)
    shutil.copy(archive, archive.with_suffix(".good"))
    shutil.copy(labels, f"{labels}.good")
    archive.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    with open(labels, "a") as fh:
        fh.write("ffffffffffffffff,verification,/m/0k4j,1\n")
    done = run(served, COCO_OK, OI_OK, "--keep-going", check=False)
    out = done.stdout + done.stderr
    assert done.returncode != 0
    assert "images.cocodataset.org/annotations/annotations_trainval2017.zip: sha256 mismatch" in out
    assert "validation-annotations-human-imagelabels-boxable.csv: sha256 mismatch" in out
    for path in (
        COCO_OK,
        OI_OK,
        "data/coco/annotations_trainval2017.zip",
        "data/openimages/annotations/validation-annotations-human-imagelabels-boxable.csv",
    ):
        assert not (workdir / path).exists(), path
    assert not list(workdir.rglob("*.partial"))
    shutil.move(archive.with_suffix(".good"), archive)
    shutil.move(f"{labels}.good", labels)
    classes = "/storage.googleapis.com/openimages/2018_04/class-descriptions-boxable.csv"
    asked = [p for p, _ in server.requests].count(classes)
    run(served, COCO_OK, OI_OK)
    assert [p for p, _ in server.requests].count(classes) == asked, "a verified file is not fetched again"
    assert (workdir / COCO_OK).is_file() and (workdir / OI_OK).is_file()
