"""benchmarks/gpu_check.py keeps working: its steps on CPU at tiny sizes (``--cpu``), as on a GPU."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest
import torch
from conftest import ROOT


def gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "benchmarks" / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # runs the benchmark script's measurements end to end, an input-pipeline subprocess included
def test_the_measurements_run_on_cpu_and_write_one_json_and_one_log(tmp_path):
    assert gpu_check().main([str(tmp_path), "--cpu", "--skip", "tests", "workflow"]) == 0
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert report["mode"] == "cpu" and report["ok"]
    steps = report["steps"]
    assert [steps[s]["status"] for s in ("tests", "workflow")] == ["skipped", "skipped"]
    embedding = steps["embedding"]["result"]["resnet18"]
    assert embedding["forward_img_s"] > 0 and embedding["end_to_end_img_s"] > 0 and embedding["amp"] is False
    train = steps["training_step"]["result"]
    assert (train["ours"]["batch_size"], train["authors"]["batch_size"]) == (8, 32)
    assert train["ours"]["img_s"] > 0 and train["authors"]["autocast"] is None
    assert steps["input_pipeline"]["status"] == "ok" and steps["input_pipeline"]["result"]["images"] == 4
    assert (
        steps["input_pipeline"]["result"]["demo"]["images"] == 8
        and steps["input_pipeline"]["result"]["demo"]["demo_uint8_img_s"] > 0
    )
    assert "training step" in (tmp_path / "gpu_check.log").read_text()


@pytest.mark.skipif(torch.cuda.is_available(), reason="there is a GPU here: the check would run in earnest")
def test_without_a_gpu_or_cpu_flag_it_says_what_to_do(tmp_path, capsys):
    assert gpu_check().main([str(tmp_path)]) == 2
    assert "no CUDA device" in (tmp_path / "gpu_check.log").read_text()


@pytest.mark.slow
def test_the_tests_and_workflow_steps_run_on_cpu(tmp_path):
    """The device tests are collected, the tiny workflow's device jobs run twice (eager and compile: true);
    the other steps run in the test above."""
    steps = ["embedding", "training_step", "input_pipeline"]
    done = subprocess.run(
        [sys.executable, ROOT / "benchmarks" / "gpu_check.py", tmp_path, "--cpu", "--skip", *steps],
        capture_output=True,
        text=True,
    )
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert done.returncode == 0 and report["ok"], (report["steps"], done.stdout[-3000:])
    assert "tests collected" in report["steps"]["tests"]["result"]["summary"]
    workflow = report["steps"]["workflow"]["result"]
    assert workflow["eager"]["embeddings"] == [["cpu", False, False]]
    assert {r["device"] for r in workflow["compiled"]["runtime"]} == {"cpu"}


def test_the_training_benchmark_stops_when_an_epoch_gives_no_batch():
    """bench_train's GPU defaults once were 96 images in batches of 128 with drop_last: no batch, for ever."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_train
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    from torch.utils.data import DataLoader

    from biastransfer.train.data import EpochSampler

    sampler = EpochSampler(3, seed=0)
    loader = DataLoader([torch.zeros(2)] * 3, batch_size=4, drop_last=True)
    with pytest.raises(ValueError, match="3 images give no batch of 4"):
        next(bench_train.batches_forever(loader, sampler))
