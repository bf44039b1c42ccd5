"""The shipped SLURM profile (profiles/slurm) with Snakemake's SLURM executor plugin.

1. The sbatch arguments the plugin builds for the GPU rules from the profile (no cluster needed: a
   recording stand-in for sbatch and the other SLURM tools is put first on PATH).
2. The demo workflow (tests/configs/tiny.yaml) through ``--profile profiles/slurm`` on a real
   single-node SLURM cluster on localhost (tests/slurm_cluster.py; Debian packages installed by
   .ci/install-slurm.sh): every non-local job is a SLURM job with the resources Snakemake asked for, the
   results equal a local run's, a failing job fails the run, and the cluster is stopped afterwards.
3. A pretrained-only zoo of two models (one broken) through the profile: one SLURM job, with one GPU.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import scratch, snakemake_command
from slurm_cluster import local_slurm_cluster, missing_binaries
from zoo_toy import small_zoo_config

from biastransfer.provenance import RUN_DEPENDENT_FIELDS
from biastransfer.workflow.config import read_configs

pytestmark = pytest.mark.slurm

REPO = Path(__file__).resolve().parents[1]
PROFILE = REPO / "profiles" / "slurm"
TINY = REPO / "tests" / "configs" / "tiny.yaml"
# Options the tests add to the shipped profile for the local cluster: it has no accounting database, so
# job states come from squeue; the first status check comes after 1 s (default 10 s) and the next one 1 s
# after a check that saw a job end (default 40 s; the plugin adds 10 s after each check that saw none).
LOCAL_CLUSTER_OPTIONS = [
    "--slurm-status-command",
    "squeue",
    "--slurm-init-seconds-before-status-checks",
    "1",
    "--seconds-between-status-checks",
    "1",
]
# The GPU requests profiles/slurm/config.yaml makes for the first attempt: (cpus per GPU, MB, minutes);
# embed asks for its CPUs as threads (--cpus-per-task), so that a group holding it gets the group's CPUs.
PROFILE_GPU_RULES = {"finetune": (8, 32000, 720), "embed": (None, 16000, 120), "predict": (None, 16000, 120)}

SLURM_TOOLS = ("sbatch", "squeue", "sacct", "sacctmgr", "scontrol", "sinfo", "scancel", "srun")

RECORDING_TOOL = """#!{python}
import json, os, sys
name = os.path.basename(sys.argv[0])
with open(os.environ["FAKE_SLURM_LOG"], "a") as log:
    log.write(json.dumps([name, *sys.argv[1:]]) + "\\n")
if name == "sinfo":  # the plugin asks `sinfo -o %P` for the default partition (marked *)
    print("PARTITION\\nstandin*")
    sys.exit(0)
if name == "sbatch":
    print("sbatch: error: recording stand-in, nothing submitted", file=sys.stderr)
sys.exit(1)
"""

GPU_SNAKEFILE = """
rule all:
    input: "finetune.done", "embed.done"

rule finetune:
    output: "finetune.done"
    threads: 2
    shell: "touch {output}"

rule embed:
    output: "embed.done"
    threads: 2
    shell: "touch {output}"
"""


def _snakemake(
    workdir: Path, args: list[str | Path], *, env: dict[str, str], timeout_s: float = 300, snakefile: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run Snakemake on ``snakefile`` (default ``workdir/Snakefile``) from inside ``workdir``."""
    return subprocess.run(
        snakemake_command("--directory", workdir, *args, snakefile=snakefile or workdir / "Snakefile"),
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def _recorded_sbatch_calls(profile: Path, tmp_path: Path) -> dict[str, list[list[str]]]:
    """Run the GPU Snakefile through ``profile`` with recording SLURM tools; sbatch argv per rule, in order."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "recording-slurm-tool"
    tool.write_text(RECORDING_TOOL.format(python=sys.executable))
    tool.chmod(0o755)
    for name in SLURM_TOOLS:
        (bin_dir / name).symlink_to(tool)
    log = tmp_path / "calls.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env['PATH']}", FAKE_SLURM_LOG=str(log))
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "Snakefile").write_text(GPU_SNAKEFILE)
    result = _snakemake(
        workdir, ["--profile", str(profile), "--slurm-init-seconds-before-status-checks", "1"], env=env, timeout_s=120
    )
    assert result.returncode != 0, "sbatch always fails here, so the run must fail"
    calls: dict[str, list[list[str]]] = {}
    for line in log.read_text().splitlines():
        name, *argv = json.loads(line)
        if name == "sbatch":
            rule = argv[argv.index("--comment") + 1]
            calls.setdefault(rule, []).append(argv)
    assert calls, f"no sbatch call recorded:\n{result.stderr[-3000:]}"
    return calls


def _option(argv: list[str], flag: str) -> str | None:
    """Value of ``flag`` in ``argv``, given as ``flag value`` or ``flag=value``; None if absent."""
    for i, arg in enumerate(argv):
        if arg == flag:
            return argv[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def test_profile_gives_gpu_rules_gpus_cpus_memory_and_time(tmp_path):
    calls = _recorded_sbatch_calls(PROFILE, tmp_path)
    # retries: 1 in the profile -> each rule is submitted twice; the retry gets twice the memory and time.
    # finetune books CPUs per GPU (cpus_per_gpu), embed its threads (2 in GPU_SNAKEFILE).
    expected = {
        "rule_finetune": {"per_gpu": "8", "per_task": None, "mem": ["32000", "64000"], "time": ["720", "1440"]},
        "rule_embed": {"per_gpu": None, "per_task": "2", "mem": ["16000", "32000"], "time": ["120", "240"]},
    }
    assert set(calls) == set(expected)
    for rule, want in expected.items():
        assert len(calls[rule]) == 2, calls[rule]
        for attempt, argv in enumerate(calls[rule]):
            assert _option(argv, "--gpus") == "1", argv
            assert _option(argv, "--cpus-per-gpu") == want["per_gpu"], argv
            assert _option(argv, "--cpus-per-task") == want["per_task"], argv
            assert _option(argv, "--mem") == want["mem"][attempt], argv
            assert _option(argv, "-t") == want["time"][attempt], argv
            assert _option(argv, "-p") == "standin", argv
            assert _option(argv, "--gres") is None, argv


def test_gres_alternative_in_profile_becomes_gres_flag(tmp_path):
    """The README's recipe for clusters that want --gres: replace `gpu` by `gres` in set-resources."""
    config = yaml.safe_load((PROFILE / "config.yaml").read_text())
    for rule in ("finetune", "embed"):
        del config["set-resources"][rule]["gpu"]
        config["set-resources"][rule]["gres"] = "gpu:1"
    profile = tmp_path / "gres-profile"
    profile.mkdir()
    (profile / "config.yaml").write_text(yaml.safe_dump(config))
    calls = _recorded_sbatch_calls(profile, tmp_path)
    for rule, per_gpu, per_task in (("rule_finetune", "8", None), ("rule_embed", None, "2")):
        argv = calls[rule][0]
        assert _option(argv, "--gres") == "gpu:1", argv
        assert _option(argv, "--gpus") is None, argv
        assert (_option(argv, "--cpus-per-gpu"), _option(argv, "--cpus-per-task")) == (per_gpu, per_task), argv


# The rules that carry the per-model job group (MODEL_STATS_GROUP in rules/common.smk); embed and
# embed_layers join it only in a pretrained-only config (EMBEDDING_GROUP).
GROUPED_RULES = {"similarity", "ieat", "bts", "change", "trajectory", "layer_profile", "model_analyses"}


def _profile_group_components() -> dict[str, int]:
    entries = yaml.safe_load((PROFILE / "config.yaml").read_text())["group-components"]
    return {group: int(count) for group, count in (entry.split("=") for entry in entries)}


PAPER = REPO / "config" / "paper.yaml"


@pytest.mark.parametrize(
    "configfiles",
    [[TINY], [REPO / "config" / "config.yaml"], [PAPER], [PAPER, REPO / "config" / "claims.yaml"]],
    ids=["tiny", "demo", "paper", "claims"],
)
def test_profile_plans_one_analysis_job_per_model(configfiles, tmp_path):
    """A dry run through the profile (no cluster needed, no network): every job of a grouped rule is in its
    model's group, and the profile's group-components makes each model's group one job (one ``Group job`` per
    model). With finetuning the embeddings stay jobs of their own (without:
    test_zoo_model_is_one_slurm_job_on_one_gpu). The claims overlay's 20 models plan like the paper's six."""
    pattern = re.search(r'^MODEL_STATS_GROUP = "(.+)"$', (REPO / "rules" / "common.smk").read_text(), re.M).group(1)
    assert _profile_group_components() == {pattern: 1000}
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")} | {"HF_HUB_OFFLINE": "1"}
    dry_run = ["-n", "--configfile", *configfiles, "--profile", PROFILE]
    result = _snakemake(tmp_path, dry_run, env=env, timeout_s=600, snakefile=REPO / "Snakefile")
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-5000:]
    models = read_configs(configfiles)["models"]
    assert sorted(_GROUP_HEADER.findall(log)) == sorted(pattern.format(model=model) for model in models)
    jobs = _logged_jobs(log)
    members = [job for job in jobs if job.group is not None]
    assert {"similarity", "ieat", "bts", "change"} <= {job.rule for job in members} <= GROUPED_RULES
    assert not [job for job in jobs if job.rule in GROUPED_RULES and job.group is None]
    assert all(job.group == pattern.format(**job.wildcards) for job in members)
    assert "embed" in {job.rule for job in jobs if job.group is None and not job.local}


# --- the demo workflow through the profile on a real local cluster ---------------------------------


def _alive(pid: int) -> bool:
    """True if ``pid`` is a live (not zombie) process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.fixture(scope="module")
def slurm_cluster():
    missing = missing_binaries()
    if missing:
        pytest.skip(f"SLURM binaries missing: {', '.join(missing)} (CI installs them with .ci/install-slurm.sh)")
    # Sized like a 4-GPU node, so that the profile's GPU requests (up to 8 CPUs and 32 GB per GPU) of the
    # demo's two finetune jobs and an embed job are scheduled side by side, as on a real cluster.
    with local_slurm_cluster(cpus=32, memory_mb=262144, gpus=4) as cluster:
        pids = cluster.daemon_pids()
        assert set(pids) == {"munged", "slurmctld", "slurmd"}
        yield cluster
    assert not [name for name, pid in pids.items() if _alive(pid)], "daemons left running after the cluster stopped"


def _snakemake_command(workdir: Path, *args: str, configfile: Path = TINY) -> list[str]:
    """The workflow on ``configfile`` (the tiny demo by default) in ``workdir``, with ``args``."""
    return snakemake_command("--configfile", configfile, "--directory", workdir, *args)


@contextlib.contextmanager
def _started(command: list[str], workdir: Path, env: dict[str, str], log: Path) -> Iterator[subprocess.Popen]:
    """Run ``command`` in the background (output to ``log``); kill its process group if still running at exit."""
    with open(log, "w") as out:
        process = subprocess.Popen(
            command, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@dataclass(frozen=True)
class DemoRuns:
    """The tiny demo run locally and through the profile on the local cluster, and a run made to fail."""

    local_dir: Path
    local_log: str
    slurm_dir: Path
    slurm_log: str
    failing_dir: Path
    failing_log: str
    failing_returncode: int
    broken_image: str
    failing_target: str


@dataclass(frozen=True)
class BackgroundRun:
    """A Snakemake run started in the background; ``finish`` waits for it."""

    workdir: Path
    process: subprocess.Popen
    log_path: Path

    def finish(self, timeout_s: float = 900) -> tuple[int, str]:
        return self.process.wait(timeout=timeout_s), self.log_path.read_text()


@pytest.fixture(scope="module")
def zoo_run(slurm_cluster, tmp_path_factory):
    """A pretrained-only audit through the profile: two models of the small zoo (tests/zoo_toy.py), one of
    them broken, on two analysis sets. Started in the background by demo_runs, which asks for it first, so
    that both runs share the wait for their jobs."""
    with scratch(tmp_path_factory, "zoo") as root:
        config = small_zoo_config(root, models=["resnet18", "broken_tag"])
        config["analysis_sets"]["synthetic2"] = {**config["analysis_sets"]["synthetic"], "seed": 15}
        configfile = root / "zoo.yaml"
        configfile.write_text(yaml.safe_dump(config, sort_keys=False))
        workdir = root / "run"
        workdir.mkdir()
        command = _snakemake_command(
            workdir,
            "--profile",
            str(PROFILE),
            *LOCAL_CLUSTER_OPTIONS,
            "--slurm-keep-successful-logs",
            configfile=configfile,
        )
        env = {**slurm_cluster.env, "HF_HUB_OFFLINE": "1"}
        with _started(command, workdir, env, root / "zoo.log") as process:
            yield BackgroundRun(workdir, process, root / "zoo.log")


def _run_id(snakemake_log: str) -> str:
    """The SLURM run ID under which the plugin submitted one Snakemake run's jobs (their job name)."""
    match = re.search(r"SLURM run ID: (\S+)", snakemake_log)
    assert match, f"no SLURM run ID in the Snakemake log: was the slurm executor used?\n{snakemake_log[-3000:]}"
    return match.group(1)


@pytest.fixture(scope="module")
def demo_runs(slurm_cluster, zoo_run, tmp_path_factory):
    """Three runs of the tiny demo, overlapped to save time (the SLURM run mostly waits for its jobs):

    the whole demo through the profile on the cluster; meanwhile the same demo locally (the reference);
    once that is done, and still during the SLURM run, a copy of the local results with one analysis
    image corrupted, where one embed job is forced to run again through the profile and must fail.
    Asking for ``zoo_run`` starts that run first, so that it too overlaps these.
    """
    root = tmp_path_factory.mktemp("demo")
    local_dir, slurm_dir, failing_dir = root / "local", root / "slurm", root / "failing"
    for workdir in (local_dir, slurm_dir, failing_dir):
        workdir.mkdir()
    env = {**slurm_cluster.env, "HF_HUB_OFFLINE": "1"}
    slurm_command = _snakemake_command(
        slurm_dir, "--profile", str(PROFILE), *LOCAL_CLUSTER_OPTIONS, "--slurm-keep-successful-logs"
    )
    start = time.monotonic()
    with (
        _started(slurm_command, slurm_dir, env, root / "slurm.log") as slurm,
        _started(_snakemake_command(local_dir, "--cores", "all"), local_dir, env, root / "local.log") as local,
    ):
        assert local.wait(timeout=900) == 0, f"local run failed:\n{(root / 'local.log').read_text()[-5000:]}"
        local_s = time.monotonic() - start

        shutil.copytree(local_dir / "results", failing_dir / "results")  # keeps mtimes: nothing upstream reruns
        manifest = pd.read_parquet(failing_dir / "results" / "analysis_sets" / "synthetic" / "manifest.parquet")
        broken_image = manifest["path"].iloc[0]
        (failing_dir / broken_image).write_bytes(b"not an image")
        target = "results/embeddings/synthetic/tinycnn/pretrained.parquet"
        # The target comes first: `--forcerun` takes every following word as a rule name.
        failing = subprocess.run(
            _snakemake_command(
                failing_dir, target, "--profile", str(PROFILE), *LOCAL_CLUSTER_OPTIONS, "--forcerun", "embed"
            ),
            cwd=failing_dir,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        slurm_rc = slurm.wait(timeout=900)
        slurm_s = time.monotonic() - start
    slurm_log = (root / "slurm.log").read_text()
    print(f"tiny demo side by side: SLURM {slurm_s:.0f} s, local {local_s:.0f} s")
    assert slurm_rc == 0, f"SLURM run failed:\n{slurm_log[-8000:]}\n{slurm_cluster.log_tail()}"
    return DemoRuns(
        local_dir,
        (root / "local.log").read_text(),
        slurm_dir,
        slurm_log,
        failing_dir,
        failing.stdout + failing.stderr,
        failing.returncode,
        broken_image,
        target,
    )


@dataclass(frozen=True)
class LoggedJob:
    """One job block of a Snakemake log: ``rule NAME:`` (remote) or ``localrule NAME:`` (run in place).

    A member of a group job is printed indented under its group's ``Group job ID`` header: ``group`` is ID.
    """

    rule: str
    jobid: int
    local: bool
    mem_mb: int | None
    runtime: int | None
    threads: int
    wildcards: dict[str, str]
    group: str | None


_GROUP_HEADER = re.compile(r"^\[[^\]\n]*\] Group job (\S+) \(jobs in lexicogr\. order\):$", re.M)
_JOB_BLOCK = re.compile(r"^(?P<indent>(?:    )?)(localrule|rule) (\w+):\n((?:(?P=indent)    .*\n)+)", re.M)


def _logged_jobs(log: str) -> list[LoggedJob]:
    headers = [(match.start(), match.group(1)) for match in _GROUP_HEADER.finditer(log)]
    jobs = []
    for match in _JOB_BLOCK.finditer(log):
        indent, kind, rule, body = match.groups()
        resources = dict(re.findall(r"\b(mem_mb|runtime)=(\d+)", body))
        wildcards = re.search(r"^\s+wildcards: (.*)$", body, re.M)
        threads = re.search(r"^\s+threads: (\d+)$", body, re.M)  # printed only when more than 1
        jobs.append(
            LoggedJob(
                rule=rule,
                jobid=int(re.search(r"^\s+jobid: (\d+)$", body, re.M).group(1)),
                local=kind == "localrule",
                mem_mb=int(resources["mem_mb"]) if "mem_mb" in resources else None,
                runtime=int(resources["runtime"]) if "runtime" in resources else None,
                threads=int(threads.group(1)) if threads else 1,
                wildcards=dict(item.split("=", 1) for item in wildcards.group(1).split(", ")) if wildcards else {},
                group=[name for start, name in headers if start < match.start()][-1] if indent else None,
            )
        )
    return jobs


def _submissions(log: str) -> dict[str, int]:
    """Snakemake job id (a number; a UUID for a group job) -> SLURM job id, from the submission messages."""
    pairs = re.findall(r"^Job (\S+) has been submitted with SLURM jobid (\d+)", log, re.M)
    submitted = [job for job, _ in pairs]
    assert len(submitted) == len(set(submitted)), f"a job was submitted twice: {sorted(submitted)}"
    return {job: int(slurm_id) for job, slurm_id in pairs}


def _rule_of(job) -> str:
    """Rule name from the plugin's job comment (``rule_<name>`` or ``rule_<name>_wildcards_<...>``)."""
    return job.comment.removeprefix("rule_").split("_wildcards_")[0]


def _slurm_time(minutes: int) -> str:
    """A time limit as ``scontrol`` prints it: ``HH:MM:SS``, or ``D-HH:MM:SS`` from one day on."""
    days, rest = divmod(minutes, 24 * 60)
    clock = f"{rest // 60:02d}:{rest % 60:02d}:00"
    return f"{days}-{clock}" if days else clock


def test_every_nonlocal_demo_job_ran_as_a_slurm_job_with_its_resources(demo_runs, slurm_cluster):
    logged = _logged_jobs(demo_runs.slurm_log)
    # Same DAG as the local run (there, every job is a `localrule` block).
    assert Counter(job.rule for job in logged) == Counter(job.rule for job in _logged_jobs(demo_runs.local_log))
    remote = {job.jobid: job for job in logged if not job.local and job.group is None}
    assert {"pretrain", "finetune", "embed"} <= {job.rule for job in remote.values()}
    assert "all" in {job.rule for job in logged if job.local}
    submitted = _submissions(demo_runs.slurm_log)
    singles = {int(job): slurm_id for job, slurm_id in submitted.items() if job.isdigit()}
    assert set(singles) == set(remote), "local jobs were submitted, or remote ones were not"

    records = {job.job_id: job for job in slurm_cluster.jobs() if job.name == _run_id(demo_runs.slurm_log)}
    assert set(records) == set(submitted.values()), "the cluster ran jobs Snakemake did not report, or lost some"
    for jobid, slurm_id in singles.items():
        want, got = remote[jobid], records[slurm_id]
        assert _rule_of(got) == want.rule and got.work_dir == str(demo_runs.slurm_dir), got
        assert got.state == "COMPLETED" and got.exit_code == "0:0", got
        assert (got.min_memory, got.time_limit) == (f"{want.mem_mb}M", _slurm_time(want.runtime)), (want, got)
        if want.rule in PROFILE_GPU_RULES:  # the profile's set-resources, not the rule's own resources
            cpus_per_gpu, mem_mb, minutes = PROFILE_GPU_RULES[want.rule]
            assert (want.mem_mb, want.runtime) == (mem_mb, minutes), want
            assert got.tres_per_job == "gres:gpu:1", got
            if cpus_per_gpu is None:
                assert (got.cpus_per_tres, got.num_cpus) == ("", want.threads), (want, got)
            else:
                assert got.cpus_per_tres == f"gres:gpu:{cpus_per_gpu}", got
        else:
            assert got.tres_per_job == "", got


def test_each_models_small_analyses_ran_as_one_slurm_job(demo_runs, slurm_cluster):
    """The profile's group-components: similarity, ieat, bts and change of the model are one SLURM job,
    joined by model_analyses into one connected set that the job runs side by side."""
    logged = _logged_jobs(demo_runs.slurm_log)
    members = [job for job in logged if job.group is not None]
    assert Counter(job.rule for job in members) == {
        "similarity": 1,
        "ieat": 1,
        "bts": 1,
        "change": 1,
        "model_analyses": 1,
    }
    assert {job.group for job in members} == {"stats_tinycnn"}
    assert {job.wildcards["model"] for job in members} == {"tinycnn"}
    local = _logged_jobs(demo_runs.local_log)  # a local run ignores groups: every job on its own
    assert not _GROUP_HEADER.search(demo_runs.local_log) and all(job.local and job.group is None for job in local)
    submitted = _submissions(demo_runs.slurm_log)
    groups = [job for job in submitted if not job.isdigit()]
    singles = [job for job in logged if not job.local and job.group is None]
    # 6 submissions (pretrain, 2 finetune, one embed for the 3 networks, predict, the group) instead of the
    # 9 the same jobs took one by one.
    assert (len(groups), len(submitted)) == (1, len(singles) + 1) == (1, 6)
    assert Counter(job.rule for job in singles) == {"pretrain": 1, "finetune": 2, "embed": 1, "predict": 1}

    record = next(job for job in slurm_cluster.jobs() if job.job_id == submitted[groups[0]])
    assert record.comment == "rule_stats_tinycnn_bts_change_ieat_model_analyses_similarity", record
    assert record.state == "COMPLETED" and record.exit_code == "0:0", record
    # Three waves: all but bts and the marker side by side (similarity, ieat and change: 3 jobs, within the
    # profile's `cores: 8`), then bts, which reads the similarity tables, then the marker. The group asks for
    # the first wave's CPUs and memory and the waves' time.
    waves = (
        [job for job in members if job.rule not in ("bts", "model_analyses")],
        [job for job in members if job.rule == "bts"],
        [job for job in members if job.rule == "model_analyses"],
    )
    assert record.num_cpus == len(waves[0]) == 3, record
    assert record.min_memory == f"{sum(job.mem_mb for job in waves[0])}M", record
    assert record.time_limit == _slurm_time(sum(max(j.runtime for j in wave) for wave in waves)), record
    # One job step ran the whole group (unconnected parts would each be a step, one after another).
    job_log = _job_log(demo_runs.slurm_log, groups[0])
    assert len(_GROUP_HEADER.findall(job_log)) == 1, job_log[-3000:]


def _job_log(snakemake_log: str, job: str) -> str:
    """The SLURM job log of one submitted job (kept with --slurm-keep-successful-logs)."""
    path = re.search(rf"^Job {job} has been submitted .*\(log: (\S+)\)\.?$", snakemake_log, re.M).group(1)
    return Path(path).read_text()


def test_zoo_model_is_one_slurm_job_on_one_gpu(zoo_run, slurm_cluster):
    """Without finetuning a model's embed jobs join its analysis group: the whole model is one SLURM job,
    which asks for one GPU (the workflow's `gpu` resource of local scope, rules/common.smk) and runs its two
    embed jobs in turn. The broken model fails its check on the submit host and submits nothing."""
    returncode, log = zoo_run.finish()
    assert returncode == 0, f"{log[-5000:]}\n{slurm_cluster.log_tail()}"
    submitted = _submissions(log)
    assert len(submitted) == 1 and not next(iter(submitted)).isdigit(), submitted
    members = [job for job in _logged_jobs(log) if job.group is not None]
    assert {job.group for job in members} == {"stats_resnet18"}
    assert Counter(job.rule for job in members) == {"embed": 2, "similarity": 2, "ieat": 2, "model_analyses": 1}
    record = next(job for job in slurm_cluster.jobs() if job.job_id == next(iter(submitted.values())))
    assert record.comment == "rule_stats_resnet18_embed_ieat_model_analyses_similarity", record
    assert (record.state, record.exit_code, record.tres_per_job) == ("COMPLETED", "0:0", "gres:gpu:1"), record
    # One job step ran the group; in it (its jobs print as `localrule`, until the marker finishes) the
    # second embed started after the first had finished.
    job_log = _job_log(log, next(iter(submitted)))
    assert len(_GROUP_HEADER.findall(job_log)) == 1, job_log[-3000:]
    step = re.search(r"^localrule .*?^Finished jobid: \d+ \(Rule: model_analyses\)$", job_log, re.M | re.S).group(0)
    events = re.findall(r"^localrule (embed):$|^Finished jobid: \d+ \(Rule: (embed)\)$", step, re.M)
    assert [("start" if start else "end") for start, _ in events] == ["start", "end", "start", "end"], step
    status = pd.read_csv(zoo_run.workdir / "results" / "zoo" / "status.csv", keep_default_na=False, na_values=[""])
    assert status.set_index("model")["ok"].to_dict() == {"resnet18": True, "broken_tag": False}
    assert set(pd.read_csv(zoo_run.workdir / "results" / "zoo" / "ranking.csv")["model"]) == {"resnet18"}


def _summary_tables(run_dir: Path) -> dict[str, pd.DataFrame]:
    """The run's summary tables without the fields two runs may differ in (timings, the workflow's commit)."""
    return {
        p.name: pd.read_csv(p, keep_default_na=False).drop(columns=sorted(RUN_DEPENDENT_FIELDS), errors="ignore")
        for p in sorted((run_dir / "results" / "summary").glob("*.csv"))
    }


def test_demo_results_on_slurm_equal_the_local_run(demo_runs):
    # Training and embedding on CPU are deterministic for a given seed and thread count. Each SLURM job
    # step runs Snakemake with `--cores all` (all of this machine's CPUs: no cgroups confine it), like the
    # local run, so every job gets the same `threads` (torch.set_num_threads) on both sides and the
    # numbers must agree exactly, not within a tolerance.
    local, slurm = _summary_tables(demo_runs.local_dir), _summary_tables(demo_runs.slurm_dir)
    assert set(local) >= {"similarity.csv", "bts.csv", "ieat.csv", "finetune_metrics.csv"}
    assert set(slurm) == set(local)
    for name, table in local.items():
        pd.testing.assert_frame_equal(slurm[name], table, check_exact=True, obj=name)

    embeddings = sorted(
        p.relative_to(demo_runs.local_dir) for p in (demo_runs.local_dir / "results" / "embeddings").rglob("*.parquet")
    )
    assert len(embeddings) == 3
    for path in embeddings:
        ours, theirs = pq.read_table(demo_runs.slurm_dir / path), pq.read_table(demo_runs.local_dir / path)
        assert ours.column("image_id").equals(theirs.column("image_id")), path
        vectors = [np.asarray(t.column("embedding").combine_chunks().flatten()) for t in (ours, theirs)]
        assert vectors[0].dtype == vectors[1].dtype and np.array_equal(vectors[0], vectors[1]), path


def test_a_failing_demo_job_is_reported_and_fails_the_run(demo_runs, slurm_cluster):
    """An unreadable analysis image: the embed job fails on SLURM (twice: retries 1), naming the file."""
    log = demo_runs.failing_log
    assert demo_runs.failing_returncode != 0, log[-5000:]
    assert "Error in rule embed" in log, log[-5000:]
    assert re.search(r"SLURM-job '\d+' failed, SLURM status is: 'FAILED'", log), log[-5000:]
    job_log = demo_runs.failing_dir / "logs" / "embed" / "synthetic" / "tinycnn.log"
    assert Path(demo_runs.broken_image).name in job_log.read_text()
    assert not (demo_runs.failing_dir / demo_runs.failing_target).exists()

    jobs = [job for job in slurm_cluster.jobs() if job.name == _run_id(log)]
    assert {job.work_dir for job in jobs} == {str(demo_runs.failing_dir)}
    # retries: 1 in the profile: the job is submitted again with twice the memory and time.
    assert [(_rule_of(job), job.state, job.min_memory, job.time_limit) for job in jobs] == [
        ("embed", "FAILED", "16000M", "02:00:00"),
        ("embed", "FAILED", "32000M", "04:00:00"),
    ]


def test_cluster_is_stopped_when_the_body_raises():
    if missing_binaries():
        pytest.skip(
            f"SLURM binaries missing: {', '.join(missing_binaries())} (CI installs them with .ci/install-slurm.sh)"
        )
    with pytest.raises(RuntimeError, match="failure inside the cluster context"):
        with local_slurm_cluster() as cluster:
            pids = cluster.daemon_pids()
            root = cluster.root
            raise RuntimeError("failure inside the cluster context")
    assert len(pids) == 3 and not [pid for pid in pids.values() if _alive(pid)]
    assert not root.exists(), "the cluster's temporary directory was left behind"


# --- `snakemake --profile slurm` as written, from the repository root -------------------------------

#: What a checkout holds that a run needs (the root's `slurm` is a link to profiles/slurm).
CHECKOUT_PARTS = (
    "Snakefile",
    "CITATION.cff",
    "rules",
    "workflow",
    "config",
    "envs",
    "resources",
    "profiles",
    "slurm",
    "tests/configs",
)


def _checkout_copy(dest: Path) -> Path:
    """A copy of the repository's run-time files, links kept as links (the root's ``slurm``)."""
    for part in CHECKOUT_PARTS:
        source, target = REPO / part, dest / part
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        elif source.is_dir():
            shutil.copytree(source, target, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target)
    return dest


def _profile_slurm(checkout: Path, args: list[str], env: dict[str, str], timeout_s: float):
    """``snakemake --profile slurm ARGS`` exactly so, run in ``checkout`` (no --snakefile, no --directory)."""
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--profile", "slurm", *args],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def test_the_named_profile_resolves_from_the_repository_root(tmp_path):
    """Snakemake looks for a named profile in the working directory first (then ~/.config/snakemake,
    /etc/xdg/snakemake): the root's ``slurm`` links to profiles/slurm, so the command works as written."""
    assert (REPO / "slurm").is_symlink() and (REPO / "slurm").resolve() == PROFILE.resolve()
    checkout = _checkout_copy(tmp_path / "checkout")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")} | {"HF_HUB_OFFLINE": "1"}
    done = _profile_slurm(checkout, ["-n"], env, timeout_s=300)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-5000:]
    assert "Using profile slurm for setting default command line arguments" in log
    assert "This was a dry-run" in log and "no profile.yaml (or config.yaml) found" not in log


def test_the_named_profile_runs_a_job_on_the_cluster(slurm_cluster, tmp_path):
    """One real job (the tiny demo's pretraining) through ``snakemake --profile slurm`` from a checkout."""
    checkout = _checkout_copy(tmp_path / "checkout")
    target = "results/pretrain/tinycnn/model.safetensors"
    env = {**slurm_cluster.env, "HF_HUB_OFFLINE": "1"}
    done = _profile_slurm(
        checkout, ["--configfile", "tests/configs/tiny.yaml", *LOCAL_CLUSTER_OPTIONS, target], env, timeout_s=600
    )
    assert done.returncode == 0, f"{(done.stdout + done.stderr)[-8000:]}\n{slurm_cluster.log_tail()}"
    assert (checkout / target).is_file()
    ran = [job for job in slurm_cluster.jobs() if job.work_dir == str(checkout)]
    assert [_rule_of(job) for job in ran] == ["pretrain"] and ran[0].state == "COMPLETED", ran
