"""The CUDA paths, checked without a GPU (issue 31): bf16 autocast only where the GPU computes it natively;
a GPU booked whenever a job uses one and a GPU of its own per local job; resume keyed to the device and
precision in use and loaded to the CPU; loader workers sized to the booking; the trajectory writer leaves
the training model's memory format alone; embeddings record ``amp`` and ``channels_last`` and the config
turns autocast off. Tests marked ``device`` run on BIASTRANSFER_TEST_DEVICE (cpu unless set; the GPU check
runs them on cuda)."""

from __future__ import annotations

import copy
import fcntl
import multiprocessing
import os
import threading

import numpy as np
import pytest
import torch
import yaml
from conftest import ROOT, Killed, die_after_resume_save, run_snakemake
from fake_datasets import coco_splits, write_image_manifest
from PIL import Image
from report_site import script as _script
from snakemake.utils import validate
from test_resume import ENTRY, pretrained
from test_trajectory import _writer

from biastransfer import gpus
from biastransfer.data.splits import read_split
from biastransfer.embeddings import epoch_file, read_metadata
from biastransfer.models import features
from biastransfer.models.device import native_bf16
from biastransfer.models.extractors import create_classifier
from biastransfer.models.features import embedding_runtime, extract_features
from biastransfer.models.layers import layer_extractor
from biastransfer.models.resolve import resolve_spec
from biastransfer.train import loop as tr
from biastransfer.train import trajectory
from biastransfer.train.config import TrainConfig
from biastransfer.train.data import ImageLabelDataset
from biastransfer.train.loop import Runtime, train_classifier
from biastransfer.train.run import loader_workers
from biastransfer.workflow.rules.inference import EmbedSettings

CUDA = torch.device("cuda")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return coco_splits(tmp_path_factory.mktemp("data"))


def tiny_sets(data, layer="penultimate"):
    spec = resolve_spec("tiny", {**ENTRY, "layer": layer})
    train, val = (read_split(p) for p in data)
    return (
        spec,
        ImageLabelDataset(train, spec.preprocess.transform(train=True)),
        ImageLabelDataset(val, spec.preprocess.transform(train=False)),
    )


def classifier(spec, seed=0):
    torch.manual_seed(seed)
    return create_classifier(spec, 4, None)


def test_bf16_autocast_only_where_the_gpu_computes_it_natively(monkeypatch):
    assert [native_bf16(c) for c in [(6, 1), (7, 0), (7, 5), (8, 0), (8, 9), (9, 0)]] == [False] * 3 + [True] * 3
    auto, fp32 = TrainConfig(epochs=1, lr=0.1), TrainConfig(epochs=1, lr=0.1, precision="fp32")
    for capability, dtype, amp in [((7, 0), None, False), ((7, 5), None, False), ((9, 0), torch.bfloat16, True)]:
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None, c=capability: c)
        assert Runtime.resolve(auto, CUDA).autocast == dtype, capability  # V100, T4: fp32, not emulated bf16
        assert Runtime.resolve(fp32, CUDA).autocast is None
        assert embedding_runtime(CUDA) == {"amp": amp, "channels_last": True}
        assert embedding_runtime(CUDA, amp=False) == {"amp": False, "channels_last": True}
    assert embedding_runtime("cpu") == {"amp": False, "channels_last": False}


def test_a_job_books_a_gpu_whenever_it_will_run_on_one(tmp_path):
    for name in ("nvidia10", "nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "null"):
        (tmp_path / name).touch()
    assert gpus.visible_gpus({}, tmp_path) == ["nvidia0", "nvidia1", "nvidia10"]
    assert gpus.visible_gpus({"CUDA_VISIBLE_DEVICES": "2,3"}, tmp_path) == ["2", "3"]
    assert gpus.visible_gpus({"CUDA_VISIBLE_DEVICES": "1,-1,2"}, tmp_path) == ["1"]
    assert gpus.visible_gpus({"CUDA_VISIBLE_DEVICES": ""}, tmp_path) == []
    assert gpus.visible_gpus({}, tmp_path / "no-such-folder") == []
    assert [gpus.books_gpu(d, {}, tmp_path) for d in ("auto", "cuda", "cpu")] == [1, 1, 0]
    hidden = {"CUDA_VISIBLE_DEVICES": ""}
    assert [gpus.books_gpu(d, hidden, tmp_path) for d in ("auto", "cuda", "cpu")] == [0, 1, 0]


def test_each_local_gpu_job_takes_a_gpu_that_no_other_job_holds(tmp_path):
    names = ["0", "1", "2"]
    assert gpus.claim_gpu(["0"], tmp_path) == 0 and not list(tmp_path.iterdir())  # one GPU: nothing to share
    others = []  # locks held through other open files stand in for other jobs' processes
    for name in ("0", "1"):
        others.append(open(tmp_path / f"gpu-{name}.lock", "a"))  # noqa: SIM115
        fcntl.flock(others[-1], fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        assert gpus.claim_gpu(names, tmp_path) == 2
        assert gpus.claim_gpu(names, tmp_path) == 2  # a process keeps the GPU it took
        gpus.release_gpus()
        third = open(tmp_path / "gpu-2.lock", "a")  # noqa: SIM115
        fcntl.flock(third, fcntl.LOCK_EX | fcntl.LOCK_NB)
        said, got = [], []
        waiter = threading.Thread(
            target=lambda: got.append(gpus.claim_gpu(names, tmp_path, wait_s=0.01, log=said.append))
        )
        waiter.start()
        while not said:  # every GPU is held: the job waits and says so
            waiter.join(0.01)
        others[1].close()  # the job on GPU 1 ends
        waiter.join()
        assert got == [1] and "all 3 visible GPUs are in use" in said[0]
        third.close()
    finally:
        for handle in others:
            handle.close()
        gpus.release_gpus()


@pytest.mark.slow
def test_the_rules_book_a_gpu_for_device_auto_where_one_is_visible(tmp_path, monkeypatch):
    """A dry run of the tiny config with ``device: auto`` (its default), with and without a visible GPU."""
    booked = {}
    for visible in ("0", ""):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
        done = run_snakemake(
            "-n", "--configfile", ROOT / "tests" / "configs" / "tiny.yaml", "--cores", "2", cwd=tmp_path
        )
        jobs = done.stdout.split("\nrule ")
        booked[visible] = {
            j.split(":")[0]: "gpu=1" in j for j in jobs if j.split(":")[0] in ("finetune", "embed", "pretrain")
        }
    assert booked["0"] == {"finetune": True, "embed": True, "pretrain": True}, booked
    assert booked[""] == {"finetune": False, "embed": False, "pretrain": False}, booked


def test_a_run_resumed_with_another_precision_in_use_starts_over(data, tmp_path, monkeypatch):
    """``precision: auto`` was bf16 on the GPU that wrote the state and is fp32 on the CPU that resumes."""
    spec, train, val = tiny_sets(data)
    cfg = TrainConfig(epochs=1, lr=0.05, batch_size=8)
    on_gpu = Runtime(CUDA, torch.bfloat16, True, False).describe()  # what auto gave there
    monkeypatch.setattr(tr.Runtime, "describe", lambda self: on_gpu)
    save = die_after_resume_save(monkeypatch)
    with pytest.raises(Killed):
        train_classifier(classifier(spec), train, val, cfg, resume_path=tmp_path / "r.pt", log=lambda m: None)
    monkeypatch.undo()
    assert tr._save_resume is save
    logs = []
    result = train_classifier(classifier(spec), train, val, cfg, resume_path=tmp_path / "r.pt", log=logs.append)
    assert any("written with another device or precision in use; discarding it" in m for m in logs), logs
    assert not any("resumed from" in m for m in logs) and [r.epoch for r in result.history] == [1]
    saved = torch.load(tmp_path / "r.pt", weights_only=True)["key"]["runtime"]
    assert saved == {"device": "cpu", "autocast": None, "channels_last": False, "compile": False}


def test_a_resume_state_is_loaded_to_the_cpu(tmp_path, monkeypatch):
    key = tr.resume_key(TrainConfig(epochs=1, lr=0.1), ["a"], runtime=Runtime(CUDA, torch.bfloat16, True, False))
    assert key["runtime"] == {"device": "cuda", "autocast": "bfloat16", "channels_last": True, "compile": False}
    torch.save({"key": key, "best_state": {"w": torch.ones(2)}}, tmp_path / "r.pt")
    load, where = torch.load, []
    monkeypatch.setattr(torch, "load", lambda *a, **k: where.append(k.get("map_location")) or load(*a, **k))
    state = tr._load_resume(tmp_path / "r.pt", key, print)
    assert where == ["cpu"] and state["best_state"]["w"].device.type == "cpu"


def test_validation_workers_live_only_while_validation_runs(data):
    """With num_workers 1: one persistent training worker; no second, long-lived one for validation."""
    spec, train, val = tiny_sets(data)
    cfg = TrainConfig(epochs=1, lr=0.05, batch_size=8, num_workers=1)
    alive = []
    train_classifier(
        classifier(spec),
        train,
        val,
        cfg,
        log=lambda m: None,
        after_epoch=lambda e, m: alive.append(len(multiprocessing.active_children())),
    )
    assert alive == [1]


def test_loader_workers_leave_one_cpu_of_the_allocation_to_training(monkeypatch):
    for cpus, requested, workers in [(8, 8, 7), (8, 3, 3), (1, 4, 0), (9, 8, 8)]:
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid, n=cpus: set(range(n)))
        assert loader_workers(requested) == workers, (cpus, requested)


def test_the_trajectory_writer_embeds_the_model_in_the_runs_memory_format(tmp_path, monkeypatch):
    """On CUDA extraction defaults to channels_last; the writer must not convert a model trained without it."""
    monkeypatch.setattr(trajectory, "embedding_runtime", lambda device, amp: {"amp": False, "channels_last": True})
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())
    for channels_last in (False, True):
        folder = tmp_path / str(channels_last)
        folder.mkdir()
        _writer(folder, [1], channels_last=channels_last)(1, model)
        weight = model[0].weight
        assert weight.is_contiguous(memory_format=torch.channels_last) == channels_last
        assert weight.is_contiguous() != channels_last
        meta = read_metadata(folder / "staging" / "s" / epoch_file(1))
        assert (meta["amp"], meta["channels_last"]) == (False, channels_last)


def test_embeddings_record_amp_and_channels_last_and_the_config_turns_autocast_off(tmp_path, monkeypatch):
    demo = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    validate(conf := copy.deepcopy(demo), schema=str(ROOT / "workflow" / "schemas" / "config.schema.yaml"))
    assert conf["analysis"]["embed"]["amp"] is True
    weights = pretrained(tmp_path / "pre.safetensors", seed=0)
    images = []
    for i, cls in enumerate(["man", "man", "woman", "woman"]):
        path = tmp_path / f"{i}.png"
        Image.new("RGB", (40, 40), (90 * i, 30, 200)).save(path)
        images.append((path, cls))
    write_image_manifest(tmp_path / "manifest.parquet", images)
    monkeypatch.setattr(features, "bf16_autocast", lambda device: True)  # as on a GPU with native bf16
    embed, got = _script("embed"), {}
    for amp in (True, False):
        out = tmp_path / f"amp{amp}.parquet"
        inference = {"batch_size": 2, "num_workers": 0, "device": "cpu", "amp": amp}
        embed.main(
            manifest=str(tmp_path / "manifest.parquet"),
            weights=[str(weights)],
            embeddings=[str(out)],
            settings=EmbedSettings.from_mapping({"stages": ["pretrained"], "entry": ENTRY, "inference": inference}),
            model="tiny",
        )
        meta = read_metadata(out)
        got[amp] = (meta["amp"], meta["channels_last"])
    assert got == {True: (True, False), False: (False, False)}


# --------------------------------------------------------------------------------------------
# On BIASTRANSFER_TEST_DEVICE (the GPU check runs these on cuda)
# --------------------------------------------------------------------------------------------


@pytest.mark.device
def test_training_resumes_on_the_device_and_keeps_the_best_state_on_the_cpu(device, data, tmp_path, monkeypatch):
    spec, train, val = tiny_sets(data)
    cfg = TrainConfig(epochs=2, lr=0.05, batch_size=8, num_workers=1)
    die_after_resume_save(monkeypatch)
    with pytest.raises(Killed):
        train_classifier(classifier(spec), train, val, cfg, resume_path=tmp_path / "r.pt", device=device)
    monkeypatch.undo()
    logs = []
    result = train_classifier(
        classifier(spec), train, val, cfg, resume_path=tmp_path / "r.pt", device=device, log=logs.append
    )
    assert any("resumed from" in m for m in logs) and [r.epoch for r in result.history] == [1, 2]
    assert all(np.isfinite([r.train_loss, r.val_loss, r.metric]).all() for r in result.history)
    assert {v.device.type for v in result.best_state.values()} == {"cpu"}
    saved = torch.load(tmp_path / "r.pt", weights_only=True)  # where each tensor was when it was saved
    assert {v.device.type for v in saved["best_state"].values()} == {"cpu"}
    assert saved["key"]["runtime"] == Runtime.resolve(cfg, device).describe()


@pytest.mark.device
def test_compiled_training_through_a_hooked_layer_with_inference_mode_validation(device, data):
    """``compile: true`` (used on CUDA only) with the layer extractor's stop exception in the forward pass."""
    spec, train, val = tiny_sets(data, layer="layer3")
    cfg = TrainConfig(epochs=1, lr=0.05, batch_size=8, compile=True)
    result = train_classifier(classifier(spec), train, val, cfg, device=device, log=lambda m: None)
    assert np.isfinite([result.history[0].train_loss, result.history[0].val_loss]).all()


@pytest.mark.device
def test_features_and_layer_features_on_the_device_match_the_cpu(device, tmp_path):
    rng = np.random.default_rng(0)
    paths = []
    for i in range(6):
        paths.append(tmp_path / f"{i}.png")
        Image.fromarray(rng.integers(0, 256, size=(40, 40, 3), dtype=np.uint8)).save(paths[-1])
    spec = resolve_spec("tiny", ENTRY)
    torch.manual_seed(0)
    for model in (classifier(spec).backbone, layer_extractor(spec, None)):  # the penultimate layer; hooks
        cpu = extract_features(model, paths, spec.preprocess, batch_size=4)
        there = extract_features(model, paths, spec.preprocess, batch_size=4, device=device)
        cosine = (cpu * there).sum(1) / np.linalg.norm(cpu, axis=1) / np.linalg.norm(there, axis=1)
        assert cosine.min() > 0.99, cosine  # bf16 autocast on a GPU: close to, not equal to, fp32
