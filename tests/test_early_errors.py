"""Errors that used to come late, inside a job, or unnamed: each is now named, before any job runs."""

import copy
import os
import re

import pytest
import yaml
from conftest import ROOT, run_snakemake
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from biastransfer.data.download import Download, fetch_many
from biastransfer.models.layers import layer_problems
from biastransfer.schema_types import schema_problems

SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
TINY = yaml.safe_load((ROOT / "tests" / "configs" / "tiny.yaml").read_text())
PAPER = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())


def test_a_float_where_an_integer_is_due_is_named_by_its_key():
    conf = copy.deepcopy(TINY)
    conf["finetune"]["defaults"]["epochs"] = 2.0
    conf["analysis"]["ieat"]["permutations"] = 2000.0
    conf["analysis_sets"]["synthetic"]["n_per_class"] = 6.0
    conf["models"]["tinycnn"]["pretrain"]["batch_size"] = 32.0
    validate(copy.deepcopy(conf), str(SCHEMA))  # JSON Schema counts 2.0 as an integer
    assert schema_problems(conf, SCHEMA) == [
        "analysis.ieat.permutations: 2000.0 is not an integer (write 2000)",
        "analysis_sets.synthetic.n_per_class: 6.0 is not an integer (write 6)",
        "finetune.defaults.epochs: 2.0 is not an integer (write 2)",
        "models.tinycnn.pretrain.batch_size: 32.0 is not an integer (write 32)",
    ]


@pytest.mark.parametrize("name", ["../escaped", "a/b", "..", "a\\b"])
def test_a_paper_list_class_that_is_not_a_file_name_is_refused(name):
    conf = copy.deepcopy(PAPER)
    conf["analysis_sets"]["coco"]["paper"]["files"][name] = "0" * 64
    with pytest.raises(WorkflowError, match="files"):
        validate(conf, str(SCHEMA))


@pytest.mark.parametrize("dest", ["../escaped.txt", "/tmp/abs.txt", "a/../../b.txt", ""])
def test_a_download_is_never_written_outside_its_folder(tmp_path, dest):
    source = tmp_path / "src.txt"
    source.write_text("x")
    with pytest.raises(ValueError, match="is not a path inside"):
        fetch_many([Download(str(source), dest)], tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src.txt"]


def with_layers(**model):
    conf = copy.deepcopy(TINY)
    conf["analysis"]["layers"] = {"enabled": True, "pooling": "auto"}
    conf["models"]["tinycnn"].update(model)
    return conf


def test_the_layer_profile_of_each_model_resolves_before_any_job():
    assert layer_problems(with_layers()) == []
    assert layer_problems(with_layers(layers=["layer4", "layer2"])) == []
    assert layer_problems({**with_layers(layers=["nope"]), "analysis": {"layers": {"enabled": False}}}) == []


@pytest.mark.parametrize(
    "model, message",
    [
        ({"layers": ["layer2", "layer9"]}, r"models\.tinycnn\.layers: model 'tinycnn': unknown layer\(s\) 'layer9'"),
        ({"source": "torchvision", "arch": "vgg11"}, r"models\.tinycnn\.layers: .*no default layer set for a VGG"),
        ({"layers": ["layer4"], "layer_pooling": "cls"}, r"models\.tinycnn\.layers: .*pool 'cls' needs tokens"),
    ],
)
def test_a_layer_that_does_not_resolve_is_named_at_config_time(model, message):
    (problem,) = layer_problems(with_layers(**model))
    assert re.match(message, problem), problem


def test_an_unknown_layer_stops_the_workflow_before_any_job(tmp_path):
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(with_layers(layers=["layer9"])))
    done = run_snakemake("-n", "--configfile", tmp_path / "c.yaml", cwd=tmp_path, check=False)
    assert done.returncode != 0 and "models.tinycnn.layers" in done.stdout + done.stderr
    assert "Job stats" not in done.stdout


def test_a_model_that_cannot_be_built_stops_the_workflow_before_any_job(tmp_path):
    """Without layer profiles (whose check builds every model), an unknown architecture was found only by
    the model's first job."""
    bad = {
        "models": {"no_such_timm": {"source": "timm", "arch": "resnet_nine_hundred"}},
        "analysis": {"layers": {"enabled": False}},
    }
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(bad))
    done = run_snakemake(
        "-n", "--configfile", ROOT / "config" / "config.yaml", tmp_path / "c.yaml", cwd=tmp_path, check=False
    )
    assert done.returncode != 0 and "Job stats" not in done.stdout
    assert "models.no_such_timm: timm has no model architecture 'resnet_nine_hundred'" in done.stdout + done.stderr


def test_a_full_disk_while_saving_the_resume_state_says_so_and_names_the_file(tmp_path, monkeypatch):
    import torch

    from biastransfer import atomic
    from biastransfer.train.config import TrainResult
    from biastransfer.train.loop import _save_resume

    def full_disk(prefix, suffix, dir):  # the temporary file lies on a full disk (/dev/full: ENOSPC on write)
        path = os.path.join(dir, f"{prefix}full{suffix}")
        os.symlink("/dev/full", path)
        return os.open(os.devnull, os.O_RDONLY), path

    monkeypatch.setattr(atomic.tempfile, "mkstemp", full_disk)
    model = torch.nn.Linear(256, 256)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    target = tmp_path / "seed0.resume.pt"
    with pytest.raises(OSError, match=r"no space left on device: '.*seed0\.resume\.pt'"):
        _save_resume(target, model, optimizer, None, 1, TrainResult("mAP", 1, 0.5), {})
    assert list(tmp_path.iterdir()) == []


def test_a_symlink_loop_in_a_class_folder_is_named_with_the_folder_s_other_problems(tmp_path):
    from PIL import Image

    from biastransfer.data.user import UserDataError, analysis_set_manifest

    for cls in ("a", "b"):
        (tmp_path / cls).mkdir()
        for i in range(2):
            Image.new("RGB", (8, 8), (40 * i, 100 * (cls == "b"), 0)).save(tmp_path / cls / f"{cls}{i}.png")
    (tmp_path / "a" / "loop.png").symlink_to("loop.png")
    (tmp_path / "a" / "d1").symlink_to("d2")
    (tmp_path / "a" / "d2").symlink_to("d1")
    (tmp_path / "b" / "notes.txt").write_text("x")
    with pytest.raises(UserDataError) as err:
        analysis_set_manifest(
            {"source": "folder", "root": str(tmp_path), "classes": ["a", "b"]}, tmp_path / "m.parquet"
        )
    lines = str(err.value).splitlines()[1:]
    assert [line.split(": ")[1] for line in lines] == ["cannot be read"] * 3 + ["not an image file"]
    assert all("Too many levels of symbolic links" in line for line in lines[:3])
    assert not (tmp_path / "m.parquet").exists()


@pytest.mark.parametrize("crop, ok", [(224, True), (64, False)])
def test_a_zoo_model_whose_forward_fails_at_its_crop_fails_its_check(tmp_path, monkeypatch, crop, ok):
    import json
    import runpy

    from biastransfer.models import weights

    monkeypatch.setattr(weights, "resolve_weights", lambda spec, cache_dir, mirror=None: None)  # random init
    monkeypatch.setattr(
        weights, "write_weights_record", lambda status, spec, path, params: open(status, "w").write("{}")
    )
    check = runpy.run_path(str(ROOT / "workflow" / "scripts" / "zoo_status.py"))["main"]
    entry = {"source": "timm", "arch": "vit_tiny_patch16_224", "preprocess": {"resize": crop, "crop": crop}}
    check(status=str(tmp_path / "s.json"), entry=entry, model="vit", cache_dir=str(tmp_path))
    record = json.loads((tmp_path / "s.json").read_text())
    assert ("error" not in record) if ok else ("224" in record["error"] and "64" in record["error"])
