"""Shared fixtures: one complete run of the default demo workflow, used by the workflow and demo tests.

The test tiers. Every test that runs Snakemake (``run_snakemake``, a ``snakemake_command`` it starts, any
other subprocess of snakemake, or a fixture that does, such as ``demo_run``) is marked ``slow`` here, found
from the code it reaches, not from a list. ``make test-fast`` deselects them (``-m "not slow and not slurm"``); in that tier a
Snakemake subprocess that a test still starts is an error naming the test, so the tier cannot grow slow.

Parallel runs (``make test``: pytest-xdist, ``-n 2``): each module is one work unit, run by one worker, so
that its module fixtures run once; the modules that use the session's demo run are one unit.
"""

import contextlib
import inspect
import itertools
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # no test may reach a model hub
# One BLAS and OpenMP thread in a test process and the scripts it starts (before numpy or torch is imported;
# a Snakemake job gets its rule's threads): on 2 shared cores, OpenBLAS's threads on the tests' small
# matrices took 3 to 5 times the CPU and the wall time (tests/test_bootstrap.py: 74 s, 22 s with one).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
for _variable in THREAD_VARIABLES:
    os.environ.setdefault(_variable, "1")
SUBPROCESS_NAMES = {"subprocess", "Popen", "run", "check_call", "check_output", "call"}


def snakemake_command(*args, snakefile: Path = ROOT / "Snakefile") -> list[str]:
    """The command that runs Snakemake on ``snakefile`` (the repository's workflow) with ``args``; a test that
    names it counts as running Snakemake (:func:`runs_snakemake`)."""
    return [sys.executable, "-m", "snakemake", "--snakefile", str(snakefile), *map(str, args)]


def run_snakemake(*args, cwd, check=True, timeout=1500) -> subprocess.CompletedProcess:
    """Run the repository's workflow in ``cwd``; on failure (with ``check``) show its output."""
    done = subprocess.run(
        snakemake_command(*args),
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


def in_small_file_system(folder: Path) -> list[str]:
    """The command prefix that runs a command with a 1 MB tmpfs mounted on ``folder``, in a user and mount
    namespace of its own (nothing outside it sees the mount); the test is skipped where there is none."""
    mount = ["unshare", "--map-root-user", "--mount", "sh", "-c", 'mount -t tmpfs -o size=1m tmpfs "$0" && exec "$@"']
    try:
        probe = subprocess.run([*mount, str(folder), "true"], capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        pytest.skip("no unshare here: a 1 MB file system cannot be mounted")
    if probe.returncode != 0:
        pytest.skip(f"no user and mount namespace here ({probe.stderr.strip()})")
    return [*mount, str(folder)]


def planned_dag(configfiles: list[Path], workdir: Path, cores: int = 1) -> tuple[list, list]:
    """Every job of the workflow's DAG for ``configfiles`` on ``cores`` (built with Snakemake's API; nothing
    runs), and every rule of the workflow."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, DAGSettings, OutputSettings, ResourceSettings

    with SnakemakeApi(OutputSettings()) as api:
        workflow_api = api.workflow(
            resource_settings=ResourceSettings(cores=cores),
            config_settings=ConfigSettings(configfiles=configfiles),
            snakefile=ROOT / "Snakefile",
            workdir=workdir,
        )
        workflow_api.dag(dag_settings=DAGSettings(forceall=True))
        workflow = workflow_api._workflow
        workflow._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True, nolock=True)
        workflow._build_dag()
        return list(workflow.dag.jobs), list(workflow.rules)


class Killed(Exception):
    """Stands in for a training job killed right after it saved an epoch's resume state."""


def die_after_resume_save(monkeypatch):
    """Make the training raise :class:`Killed` right after each resume state it saves; returns the saving
    function it replaced (``monkeypatch.setattr(loop, "_save_resume", save)`` restores it)."""
    from biastransfer.train import loop

    save = loop._save_resume

    def save_then_die(*args, **kwargs):
        save(*args, **kwargs)
        raise Killed

    monkeypatch.setattr(loop, "_save_resume", save_then_die)
    return save


@contextlib.contextmanager
def scratch(tmp_path_factory, name: str):
    """A folder for a module fixture's run, removed when the fixture ends: the paper toy run (4 GB) and the
    zoo (1 GB) would otherwise fill a small disk for the rest of the session."""
    root = tmp_path_factory.mktemp(name)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory) -> Path:
    """A working directory in which the default config (the synthetic demo) ran to completion."""
    workdir = tmp_path_factory.mktemp("demo")
    run_snakemake("--cores", "2", cwd=workdir)
    return workdir


def runs_snakemake(func, seen: set | None = None) -> bool:
    """Whether ``func`` (a test, fixture or helper) calls ``run_snakemake``, builds ``snakemake_command`` or starts
    a snakemake subprocess, itself or through the functions of the test modules it names (followed transitively)."""
    seen = set() if seen is None else seen
    func = inspect.unwrap(func)
    code = getattr(func, "__code__", None)
    if code is None or code in seen:
        return False
    seen.add(code)
    namespace = getattr(func, "__globals__", {})
    codes = [code]
    while codes:
        current = codes.pop()
        codes.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
        if "snakemake" in current.co_consts and SUBPROCESS_NAMES & set(current.co_names):
            return True
        for name in current.co_names:
            target = namespace.get(name)
            if target is run_snakemake or target is snakemake_command:
                return True
            if inspect.isfunction(target) and Path(inspect.getfile(target)).resolve().parent == TESTS:
                if runs_snakemake(target, seen):
                    return True
    return False


def _fast_tier(config) -> bool:
    """True when the ``-m`` expression deselects every slow test, whatever other marks it has."""
    markexpr = config.getoption("markexpr")
    if not markexpr:
        return False
    expression = Expression.compile(markexpr)
    others = sorted({line.split(":")[0].split("(")[0].strip() for line in config.getini("markers")} - {"slow"})
    return not any(
        expression.evaluate(lambda name, /, chosen=chosen, **kw: name in chosen)
        for chosen in ({"slow", *c} for r in range(len(others) + 1) for c in itertools.combinations(others, r))
    )


#: The modules that use the session's demo run (:func:`demo_run`): one xdist work unit, so that the demo runs
#: once (collection fails if a module missing here uses it).
DEMO_MODULES = ("test_demo.py", "test_workflow.py")
DEMO_GROUP = "demo_run"
#: The test modules with the longest fixtures (the ten slowest that every `make test` prints), longest
#: first; they start first on the xdist workers, so that no long run starts last. Order only: a module
#: missing here runs after them.
LONGEST_FIRST = (
    "test_paper_toy",
    DEMO_GROUP,
    "test_slurm",
    "test_scale_mirror",
    "test_reruns",
    "test_zoo",
    "test_gpu_check",
    "test_user_data",
    "test_trajectory",
)


def work_unit(nodeid: str) -> str:
    """The xdist work unit of a test: its module, so that a module's fixtures run once; the demo's modules
    share one."""
    module = nodeid.split("::", 1)[0]
    return DEMO_GROUP if Path(module).name in DEMO_MODULES else Path(module).stem


@pytest.hookimpl(optionalhook=True)  # an xdist hook: unknown to a run without pytest-xdist
def pytest_xdist_make_scheduler(config, log):
    """Parallel runs (``make test``: ``-n 2``) hand each worker whole work units (:func:`work_unit`)."""
    from xdist.scheduler import LoadScopeScheduling

    class WorkUnits(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return WorkUnits(config, log)


@pytest.hookimpl(tryfirst=True)  # before -m deselects by mark
def pytest_collection_modifyitems(config, items):
    for item in items:
        if DEMO_GROUP in item.fixturenames and item.path.name not in DEMO_MODULES:
            raise pytest.UsageError(f"{item.nodeid} uses {DEMO_GROUP}: add {item.path.name} to DEMO_MODULES")
        if item.get_closest_marker("slow"):
            continue
        fixtures = [defs[-1].func for defs in item._fixtureinfo.name2fixturedefs.values() if defs]
        if any(runs_snakemake(f) for f in [getattr(item, "obj", None), *fixtures] if f is not None):
            item.add_marker(pytest.mark.slow)
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(work_unit(item.nodeid), len(rank)))  # stable: a module keeps its order


class _FastTierPopen(subprocess.Popen):
    """subprocess.Popen that refuses to start Snakemake (the fast tier)."""

    def __init__(self, args, *rest, **kwargs):
        argv = os.fsdecode(args).split() if isinstance(args, (str, bytes, os.PathLike)) else list(args)
        if any(Path(os.fsdecode(a)).name == "snakemake" for a in argv):
            raise RuntimeError(
                f"{os.environ.get('PYTEST_CURRENT_TEST', 'a test')} starts Snakemake in the fast tier: "
                "mark it @pytest.mark.slow (tests/conftest.py did not find the call)"
            )
        super().__init__(args, *rest, **kwargs)


def pytest_configure(config):
    if _fast_tier(config):
        subprocess.Popen = _FastTierPopen


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
