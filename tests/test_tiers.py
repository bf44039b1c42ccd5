"""The test tiers of tests/conftest.py: tests that run Snakemake are marked slow from their code, and the
fast tier (``make test-fast``) refuses a Snakemake subprocess that a test still starts; the threads a test
process runs."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

SAMPLE = """
import subprocess, sys
import pytest
from conftest import run_snakemake, snakemake_command


def _helper(tmp_path):
    return run_snakemake("--version", cwd=tmp_path)


def test_calls_run_snakemake(tmp_path):
    _helper(tmp_path)


@pytest.fixture
def workflow_ran(tmp_path):
    subprocess.run([sys.executable, "-m", "snakemake", "--version"], check=True)


def test_uses_a_fixture_that_runs_it(workflow_ran):
    pass


def _started(command):
    return subprocess.Popen(command)


def test_starts_the_command_it_builds(tmp_path):
    _started(snakemake_command("--version")).wait()


def test_hides_its_call():
    subprocess.run([sys.executable, "-m", "-".join(["snake", "make"]).replace("-", ""), "--version"], check=True)


def test_plain():
    assert subprocess.run([sys.executable, "-c", "pass"]).returncode == 0
"""


def _pytest(folder: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.stdout + done.stderr


def test_slow_tests_are_found_and_an_unmarked_one_fails_in_the_fast_tier(tmp_path):
    shutil.copy(TESTS / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: s\n    slurm: s\n")
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    slow = _pytest(tmp_path, "--collect-only", "-m", "slow")
    assert "test_calls_run_snakemake" in slow and "test_uses_a_fixture_that_runs_it" in slow
    assert "test_starts_the_command_it_builds" in slow
    assert "test_hides_its_call" not in slow and "test_plain" not in slow
    fast = _pytest(tmp_path, "-m", "not slow and not slurm")
    assert "1 failed, 1 passed, 3 deselected" in fast, fast
    assert "test_hides_its_call" in fast and "starts Snakemake in the fast tier: mark it @pytest.mark.slow" in fast


class _Config:
    def __init__(self, markexpr):
        self.markexpr = markexpr

    def getoption(self, name):
        return self.markexpr

    def getini(self, name):
        return ["slow: s", "slurm(reason): s", "skipif(condition): s"]


def test_the_fast_tier_is_any_selection_that_leaves_out_every_slow_test():
    from conftest import _fast_tier

    for markexpr in ("not slow and not slurm", "not slow", "not (slow or slurm)"):
        assert _fast_tier(_Config(markexpr)), markexpr
    for markexpr in ("", "slow", "not slurm", "slurm", "slow or not slow"):
        assert not _fast_tier(_Config(markexpr)), markexpr


def test_a_test_process_runs_the_blas_and_openmp_threads_its_environment_gives():
    """tests/conftest.py gives one unless the caller set them: numpy's BLAS and torch run that many."""
    import numpy  # noqa: F401  (loads its BLAS)
    import torch
    from conftest import THREAD_VARIABLES
    from threadpoolctl import threadpool_info

    wanted = {v: int(os.environ[v]) for v in THREAD_VARIABLES}
    pools = {p["internal_api"]: p["num_threads"] for p in threadpool_info()}
    assert pools.get("openblas", wanted["OPENBLAS_NUM_THREADS"]) == wanted["OPENBLAS_NUM_THREADS"], pools
    assert torch.get_num_threads() == wanted["OMP_NUM_THREADS"]
