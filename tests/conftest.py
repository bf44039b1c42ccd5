"""Shared fixtures: one complete run of the default demo workflow, used by the workflow and demo tests."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # no test may reach a model hub


def run_snakemake(*args, cwd, check=True, timeout=1500) -> subprocess.CompletedProcess:
    """Run the repository's workflow in ``cwd``; on failure (with ``check``) show its output."""
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and done.returncode != 0:
        raise AssertionError(
            f"snakemake {' '.join(map(str, args))} failed:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
        )
    return done


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory) -> Path:
    """A working directory in which the default config (the synthetic demo) ran to completion."""
    workdir = tmp_path_factory.mktemp("demo")
    run_snakemake("--cores", "2", cwd=workdir)
    return workdir


# Tests marked `device` run on BIASTRANSFER_TEST_DEVICE (default cpu); benchmarks/gpu_check.py runs them
# with cuda: `BIASTRANSFER_TEST_DEVICE=cuda pytest -m device`.
TEST_DEVICE = os.environ.get("BIASTRANSFER_TEST_DEVICE", "cpu")


@pytest.fixture
def device():
    """The torch device of a device-switch test; a clear failure where that device is missing."""
    import torch

    if TEST_DEVICE == "cuda" and not torch.cuda.is_available():
        pytest.fail("BIASTRANSFER_TEST_DEVICE=cuda but torch sees no CUDA device")
    return torch.device(TEST_DEVICE)
