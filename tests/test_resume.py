"""Finetune resume state keyed to everything that shapes the result; the digests it started from in
every output; temporary files of killed writers removed by the next run (issue 17, defects 1 and 4)."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import in_small_file_system
from fake_datasets import coco_splits
from PIL import Image

from biastransfer.atomic import atomic_path, remove_stale_temporaries, write_text
from biastransfer.data.manifest import write_manifest
from biastransfer.embeddings import read_metadata, write_embeddings
from biastransfer.hashing import file_digest
from biastransfer.models.checkpoints import finetune_origin, save_checkpoint
from biastransfer.models.extractors import create_classifier
from biastransfer.models.resolve import resolve_spec
from biastransfer.provenance import workflow_provenance
from biastransfer.train import loop as tr
from biastransfer.workflow.rules.inference import EmbedSettings
from biastransfer.workflow.rules.report import ProvenanceSettings

ROOT = Path(__file__).resolve().parents[1]
PRE = {"resize": 32, "crop": 32, "interpolation": "bilinear", "mean": [0.5] * 3, "std": [0.25] * 3}
ENTRY = {"source": "timm", "arch": "resnet10t", "weights": None, "preprocess": PRE}
HYPER = {"epochs": 2, "lr": 0.05, "batch_size": 8}


def _script(name):
    spec = importlib.util.spec_from_file_location(f"script_{name}", ROOT / "workflow" / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def splits(tmp_path_factory):
    return coco_splits(tmp_path_factory.mktemp("data"))


def pretrained(path: Path, seed: int) -> Path:
    """A 'pretrained' classifier checkpoint with seeded weights (what the demo's pretrain rule writes)."""
    spec = resolve_spec("tiny", ENTRY)
    torch.manual_seed(seed)
    save_checkpoint(create_classifier(spec, 3, None), path, spec=spec, class_names=["a", "b", "c"])
    return path


class Killed(Exception):
    """Stands in for SIGKILL right after the first epoch's resume state was saved."""


def finetune(
    splits, weights, out: Path, resume: Path, logs: list, *, hyper=HYPER, die_after_save=False, monkeypatch=None
):
    if die_after_save:
        save = tr._save_resume

        def save_then_die(*args, **kwargs):
            save(*args, **kwargs)
            raise Killed

        monkeypatch.setattr(tr, "_save_resume", save_then_die)
    script = _script("finetune")
    script.progress_log.addHandler(handler := _ListHandler(logs))
    level = script.progress_log.level
    script.progress_log.setLevel(logging.INFO)
    try:
        script.main(
            weights=str(weights),
            train=str(splits[0]),
            val=str(splits[1]),
            trained=str(out / "model.safetensors"),
            metrics=str(out / "metrics.json"),
            curve=str(out / "curve.csv"),
            entry=ENTRY,
            hyper=hyper,
            model="tiny",
            seed=1,
            resume=str(resume),
            device="cpu",
            num_workers=0,
        )
    finally:
        script.progress_log.removeHandler(handler)
        script.progress_log.setLevel(level)
        if die_after_save:
            monkeypatch.undo()


class _ListHandler(logging.Handler):
    """A logging handler that appends messages to a list."""

    def __init__(self, sink):
        super().__init__()
        self.sink = sink

    def emit(self, record):
        self.sink.append(record.getMessage())


def test_changed_initial_weights_discard_the_resume_state_and_say_why(splits, tmp_path, monkeypatch):
    weights, resume = tmp_path / "pre.safetensors", tmp_path / "seed1.resume.pt"
    pretrained(weights, seed=0)
    with pytest.raises(Killed):
        finetune(splits, weights, tmp_path / "cut", resume, [], die_after_save=True, monkeypatch=monkeypatch)
    assert resume.is_file()
    pretrained(weights, seed=7)  # the pretraining changed while the finetune was down
    logs = []
    finetune(splits, weights, tmp_path / "rerun", resume, logs)
    assert not any("resumed from" in m for m in logs), logs
    assert any("another initial weights (sha256)" in m and "starting over" in m for m in logs), logs
    finetune(splits, weights, tmp_path / "clean", tmp_path / "clean.resume.pt", [])
    assert file_digest(tmp_path / "rerun" / "model.safetensors") == file_digest(
        tmp_path / "clean" / "model.safetensors"
    )
    # the finetuned model, its metrics and its curve record what it started from
    origin = {
        "init_weights_sha256": file_digest(weights),
        "train_sha256": file_digest(splits[0]),
        "val_sha256": file_digest(splits[1]),
    }
    assert finetune_origin(tmp_path / "rerun" / "model.safetensors") == origin
    metrics = json.loads((tmp_path / "rerun" / "metrics.json").read_text())
    assert {k: metrics[k] for k in origin} == origin


def test_unchanged_inputs_resume_and_other_hyper_parameters_or_splits_restart(splits, tmp_path, monkeypatch):
    weights, resume = pretrained(tmp_path / "pre.safetensors", seed=0), tmp_path / "r.pt"
    with pytest.raises(Killed):
        finetune(splits, weights, tmp_path / "a", resume, [], die_after_save=True, monkeypatch=monkeypatch)
    logs = []
    finetune(splits, weights, tmp_path / "a", resume, logs)
    assert any("resumed from" in m and "after epoch 1" in m for m in logs), logs
    assert not resume.exists()

    with pytest.raises(Killed):
        finetune(splits, weights, tmp_path / "b", resume, [], die_after_save=True, monkeypatch=monkeypatch)
    logs = []
    finetune(splits, weights, tmp_path / "b", resume, logs, hyper={**HYPER, "lr": 0.02})
    assert any("another hyper-parameters" in m for m in logs) and not any("resumed" in m for m in logs)

    with pytest.raises(Killed):
        finetune(splits, weights, tmp_path / "c", resume, [], die_after_save=True, monkeypatch=monkeypatch)
    logs = []
    finetune(splits[::-1], weights, tmp_path / "c", resume, logs)  # train and validation swapped
    assert any("another training split (sha256), validation split (sha256)" in m for m in logs), logs


def test_a_resume_state_from_before_keys_or_a_truncated_one_is_discarded(tmp_path):
    key = tr.resume_key(tr.TrainConfig(epochs=1, lr=0.1), ["a"], {"init_weights_sha256": "0" * 64})
    old = tmp_path / "old.pt"
    torch.save({"config": {"epochs": 1}, "classes": ["a"]}, old)
    logs = []
    assert tr._load_resume(old, key, logs.append) is None
    assert "another hyper-parameters, class list, initial weights (sha256);" in logs[0]
    assert not old.exists()
    cut = tmp_path / "cut.pt"
    cut.write_bytes(b"PK\x03\x04 truncated")
    assert tr._load_resume(cut, key, logs.append) is None
    assert "is not a readable resume state" in logs[1] and not cut.exists()


def test_embeddings_and_the_provenance_table_show_what_a_finetuned_model_started_from(splits, tmp_path, caplog):
    """Also defect 7: a degenerate (1x1) analysis image is embedded with a warning naming it."""
    weights = pretrained(tmp_path / "pre.safetensors", seed=0)
    finetune(splits, weights, tmp_path / "ft", tmp_path / "r.pt", [], hyper={**HYPER, "epochs": 1})
    rows = []
    for i, (cls, size) in enumerate([("man", 32), ("man", 1), ("woman", 32), ("woman", 40)]):
        path = tmp_path / "img" / f"{i}.png"
        path.parent.mkdir(exist_ok=True)
        Image.new("RGB", (size, size), (40 * i, 90, 200)).save(path)
        rows.append(
            {
                "image_id": f"i{i}",
                "class": cls,
                "path": str(path),
                "sha256": file_digest(path),
                "source_split": "val",
                "source": "test",
                "reason": "",
            }
        )
    write_manifest(tmp_path / "manifest.parquet", pd.DataFrame(rows))
    embed = _script("embed")
    out = {stage: tmp_path / f"{stage}.parquet" for stage in ("pretrained", "ft-coco-seed1")}
    inference = {"batch_size": 2, "num_workers": 0, "device": "cpu", "amp": True}
    with caplog.at_level(logging.INFO):  # both networks in one job, as rule embed runs them
        embed.main(
            manifest=str(tmp_path / "manifest.parquet"),
            weights=[str(weights), str(tmp_path / "ft" / "model.safetensors")],
            embeddings=[str(p) for p in out.values()],
            settings=EmbedSettings.from_mapping({"stages": list(out), "entry": ENTRY, "inference": inference}),
            model="tiny",
        )
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("1 of 4 images are smaller than the 32-pixel crop" in m and "1.png (1x1)" in m for m in warned), warned
    assert any(
        "embedding" in r.getMessage() and "4/4 images" in r.getMessage()
        for r in caplog.records
        if r.name == "biastransfer.progress"
    )
    meta = read_metadata(out["ft-coco-seed1"])
    assert meta["init_weights_sha256"] == file_digest(weights)
    assert (meta["train_sha256"], meta["val_sha256"]) == (file_digest(splits[0]), file_digest(splits[1]))
    _script("provenance").main(
        embeddings=[str(out["pretrained"]), str(out["ft-coco-seed1"])],
        table=str(tmp_path / "p.csv"),
        html=str(tmp_path / "p.html"),
        settings=ProvenanceSettings(models=[]),
    )
    table = pd.read_csv(tmp_path / "p.csv").set_index("stage")
    assert table.loc["ft-coco-seed1", "init_weights_sha256"] == file_digest(weights)
    assert table.loc["ft-coco-seed1", "train_sha256"] == file_digest(splits[0])
    assert pd.isna(table.loc["pretrained", "init_weights_sha256"])
    assert (table["git_commit"].astype(str) == workflow_provenance()["git_commit"]).all()
    assert "<dt>git commit</dt>" in (tmp_path / "p.html").read_text()


def test_the_provenance_rule_names_a_truncated_embeddings_file(tmp_path):
    """Defect 6."""
    good = tmp_path / "good.parquet"
    write_embeddings(good, ["a", "b"], ["x", "x"], np.ones((2, 3)), {"model": "m"})
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(ValueError, match=f"{cut}: not a readable Parquet file"):
        _script("provenance").main(
            embeddings=[str(good), str(cut)],
            table=str(tmp_path / "p.csv"),
            html=str(tmp_path / "p.html"),
            settings=ProvenanceSettings(models=[]),
        )
    assert not (tmp_path / "p.csv").exists()


# ----------------------------------------------------------------------------------------------
# defect 4: temporary files of killed writers
# ----------------------------------------------------------------------------------------------

KILLED_WRITER = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, {scripts!r})
    from biastransfer.atomic import atomic_path
    with atomic_path({target!r}) as tmp:
        tmp.write_bytes(b"half an epoch state")
        print(tmp, flush=True)
        time.sleep(60)
""")


def test_a_save_killed_with_sigkill_leaves_a_temporary_file_that_the_next_write_removes(tmp_path):
    target = tmp_path / "seed0.resume.pt"
    code = KILLED_WRITER.format(scripts=str(ROOT / "src"), target=str(target))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    tmp = Path(proc.stdout.readline().strip())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    assert tmp.is_file() and tmp.name.startswith(".seed0.resume.pt.") and not target.exists()
    legacy = tmp_path / ".seed0.resume.pt.k2j4_x9a.partial"  # the name before this fix
    legacy.write_bytes(b"x")
    download = tmp_path / "seed0.resume.pt.partial"  # a resumable download keeps its partial file
    download.write_bytes(b"x")
    other = tmp_path / ".seed0.resume.pt.gz.host.1.abcdefgh.partial"  # another target's temporary file
    other.write_bytes(b"x")
    mine = []
    with atomic_path(target) as live:  # a live writer's temporary file is never taken for a leftover
        mine.append(live)
        live.write_bytes(b"new")
        assert remove_stale_temporaries(target) == []
    assert target.read_bytes() == b"new"
    assert not tmp.exists() and not legacy.exists() and not mine[0].exists()
    assert download.exists() and other.exists()


def test_a_finetune_rerun_removes_the_resume_temporaries_of_a_killed_run(splits, tmp_path):
    weights, resume = pretrained(tmp_path / "pre.safetensors", seed=0), tmp_path / "seed1.resume.pt"
    leftover = tmp_path / ".seed1.resume.pt.abcd1234.partial"
    leftover.write_bytes(b"killed mid-save")
    write_text(tmp_path / "unrelated.txt", "kept")
    finetune(splits, weights, tmp_path / "out", resume, [], hyper={**HYPER, "epochs": 1})
    assert not leftover.exists() and not resume.exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_a_folder_is_swept_once_per_process_so_many_writes_stay_linear(tmp_path, monkeypatch):
    import biastransfer.atomic as atomic

    scans = []
    real = os.scandir
    monkeypatch.setattr(atomic.os, "scandir", lambda folder: scans.append(folder) or real(folder))
    left = tmp_path / ".img0.jpg.k2j4_x9a.partial"
    left.write_bytes(b"x")
    for k in range(20):
        write_text(tmp_path / f"img{k}.jpg", "x")
    assert len(scans) == 1 and not left.exists()


# ----------------------------------------------------------------------------------------------
# a full disk during the resume save (issue 41)
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["resume", "trained"])
def test_a_full_disk_during_a_save_is_named_with_the_file(splits, tmp_path, where):
    """The resume state (a resnet10t's 20 MB, three times over: torch.save) or the finetuned checkpoint
    (safetensors) on a real 1 MB file system, not a mock."""
    weights, small = pretrained(tmp_path / "pre.safetensors", seed=0), tmp_path / "small"
    small.mkdir()
    resume = (small if where == "resume" else tmp_path) / "seed1.resume.pt"
    out = small if where == "trained" else tmp_path / "out"
    args = {
        "weights": weights,
        "train": splits[0],
        "val": splits[1],
        "trained": out / "model.safetensors",
        "metrics": out / "metrics.json",
        "curve": out / "curve.csv",
        "entry": json.dumps(ENTRY),
        "hyper": json.dumps({**HYPER, "epochs": 1}),
        "model": "tiny",
        "seed": 1,
        "resume": resume,
        "device": "cpu",
        "num_workers": 0,
    }
    done = subprocess.run(
        [
            *in_small_file_system(small),
            sys.executable,
            str(ROOT / "workflow" / "scripts" / "finetune.py"),
            *(a for k, v in args.items() for a in (f"--{k}", str(v))),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    full = resume if where == "resume" else out / "model.safetensors"
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last == f"OSError: [Errno 28] no space left on device: '{full}'", done.stderr[-3000:]
    assert "unexpected pos" not in done.stderr and "enforce fail" not in done.stderr
    if where == "resume":  # it stopped at the first epoch's save, before any output
        assert not out.exists() or not any(out.iterdir())
