"""The shipped SLURM profile (profiles/slurm) with Snakemake's SLURM executor plugin.

1. The sbatch arguments the plugin builds for the GPU rules from the profile (no cluster needed: a
   recording stand-in for sbatch and the other SLURM tools is put first on PATH).
2. A workflow run through ``--profile profiles/slurm`` on a real single-node SLURM cluster on localhost
   (tests/slurm_cluster.py; Debian packages installed by .ci/install-slurm.sh).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from slurm_cluster import local_slurm_cluster, missing_binaries

pytestmark = pytest.mark.slurm

REPO = Path(__file__).resolve().parents[1]
PROFILE = REPO / "profiles" / "slurm"
# Options the tests add to the shipped profile for the local cluster (no accounting database there, so
# job states come from squeue; short first status check).
LOCAL_CLUSTER_OPTIONS = ["--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "2"]

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


def _snakemake(workdir: Path, args: list[str], *, env: dict[str, str], timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
    """Run Snakemake on ``workdir/Snakefile`` from inside ``workdir``."""
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(workdir / "Snakefile"), "--directory", str(workdir), *args],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout_s,
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


def test_profile_gives_gpu_rules_gpus_cpus_per_gpu_memory_and_time(tmp_path):
    calls = _recorded_sbatch_calls(PROFILE, tmp_path)
    # retries: 1 in the profile -> each rule is submitted twice; the retry gets twice the memory and time.
    expected = {
        "rule_finetune": {"cpus": "8", "mem": ["32000", "64000"], "time": ["720", "1440"]},
        "rule_embed": {"cpus": "4", "mem": ["16000", "32000"], "time": ["120", "240"]},
    }
    assert set(calls) == set(expected)
    for rule, want in expected.items():
        assert len(calls[rule]) == 2, calls[rule]
        for attempt, argv in enumerate(calls[rule]):
            assert _option(argv, "--gpus") == "1", argv
            assert _option(argv, "--cpus-per-gpu") == want["cpus"], argv
            assert _option(argv, "--mem") == want["mem"][attempt], argv
            assert _option(argv, "-t") == want["time"][attempt], argv
            assert _option(argv, "-p") == "standin", argv
            assert _option(argv, "--cpus-per-task") is None and _option(argv, "--gres") is None, argv


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
    for rule, cpus in (("rule_finetune", "8"), ("rule_embed", "4")):
        argv = calls[rule][0]
        assert _option(argv, "--gres") == "gpu:1", argv
        assert _option(argv, "--gpus") is None, argv
        assert _option(argv, "--cpus-per-gpu") == cpus, argv


# --- a workflow through the profile on a real local cluster ------------------------------------------

CLUSTER_SNAKEFILE = """
PARTS = [0, 1]

rule all:
    input: "results/total.txt", "results/plot.txt", "results/never.txt"

rule download_numbers:
    localrule: True
    output: "data/numbers.txt"
    shell: "seq 1 6 > {output}"

rule square:
    input: "data/numbers.txt"
    output: "results/squares_{part}.txt"
    resources: mem_mb=200, runtime=5
    shell: "awk 'NR % 2 == {wildcards.part} {{print $1 * $1}}' {input} > {output}"

# Named like the workflow's GPU rule, so the profile gives it a GPU (the test cluster has one).
rule embed:
    input: expand("results/squares_{part}.txt", part=PARTS)
    output: "results/total.txt"
    shell: "cat {input} | awk '{{s += $1}} END {{print s}}' > {output}"

rule plot_total:
    localrule: True
    input: "results/total.txt"
    output: "results/plot.txt"
    shell: "echo total=$(cat {input}) > {output}"

rule fail_on_purpose:
    input: "data/numbers.txt"
    output: "results/never.txt"
    shell: "echo failing on purpose >&2; exit 3"
"""


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
    # Sized like a small GPU node so that the shipped profile's GPU requests (8 CPUs per GPU, 32 GB) fit.
    with local_slurm_cluster(cpus=8, memory_mb=65536) as cluster:
        pids = cluster.daemon_pids()
        assert set(pids) == {"munged", "slurmctld", "slurmd"}
        yield cluster
    assert not [name for name, pid in pids.items() if _alive(pid)], "daemons left running after the cluster stopped"


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _rule_of(job) -> str:
    """Rule name from the plugin's job comment (``rule_<name>`` or ``rule_<name>_wildcards_<...>``)."""
    return job.comment.removeprefix("rule_").split("_wildcards_")[0]


def _jobs_of_run(cluster, snakemake_log: str) -> list:
    """The cluster's jobs submitted by one Snakemake run (the plugin names them by its run ID)."""
    match = re.search(r"SLURM run ID: (\S+)", snakemake_log)
    assert match, "no SLURM run ID in the Snakemake log: was the slurm executor used?"
    return [job for job in cluster.jobs() if job.name == match.group(1)]


def test_workflow_through_profile_runs_every_nonlocal_job_on_slurm(slurm_cluster, tmp_path):
    local_dir, slurm_dir = tmp_path / "local", tmp_path / "slurm"
    for workdir in (local_dir, slurm_dir):
        workdir.mkdir()
        (workdir / "Snakefile").write_text(CLUSTER_SNAKEFILE)

    start = time.monotonic()
    local = _snakemake(local_dir, ["--cores", "2", "--keep-going"], env=dict(os.environ), timeout_s=120)
    local_s = time.monotonic() - start
    start = time.monotonic()
    slurm = _snakemake(slurm_dir, ["--profile", str(PROFILE), *LOCAL_CLUSTER_OPTIONS], env=slurm_cluster.env, timeout_s=240)
    slurm_s = time.monotonic() - start
    print(f"mini workflow wall time: local {local_s:.1f} s, SLURM {slurm_s:.1f} s")

    # The deliberately failing job fails the run in both modes; everything else completes (keep-going).
    assert local.returncode != 0 and slurm.returncode != 0, slurm.stderr[-3000:]
    assert "failing on purpose" in slurm.stderr
    assert "SLURM-job" in slurm.stderr and "FAILED" in slurm.stderr, slurm.stderr[-3000:]
    local_results, slurm_results = _files(local_dir / "results"), _files(slurm_dir / "results")
    assert set(local_results) == {"squares_0.txt", "squares_1.txt", "total.txt", "plot.txt"}
    assert local_results["plot.txt"] == b"total=91\n"
    assert slurm_results == local_results
    assert _files(slurm_dir / "data") == _files(local_dir / "data")

    # Every non-local job, and no local one, ran as a SLURM job of this run with the profile's resources.
    jobs = _jobs_of_run(slurm_cluster, slurm.stderr)
    assert {job.work_dir for job in jobs} == {str(slurm_dir)}
    by_rule: dict[str, list] = {}
    for job in jobs:
        by_rule.setdefault(_rule_of(job), []).append(job)
    # retries: 1 in the profile -> the failing job is submitted twice
    assert {rule: len(found) for rule, found in by_rule.items()} == {"square": 2, "embed": 1, "fail_on_purpose": 2}
    assert {job.state for rule in ("square", "embed") for job in by_rule[rule]} == {"COMPLETED"}
    assert {job.state for job in by_rule["fail_on_purpose"]} == {"FAILED"}
    assert {(job.time_limit, job.min_memory) for job in by_rule["square"]} == {("00:05:00", "200M")}
    assert {(job.time_limit, job.min_memory) for job in by_rule["fail_on_purpose"]} == {("01:00:00", "4000M")}
    # The GPU rule got the profile's GPU request; CPU rules asked for none.
    (embed,) = by_rule["embed"]
    assert (embed.tres_per_job, embed.cpus_per_tres) == ("gres:gpu:1", "gres:gpu:4")
    assert (embed.time_limit, embed.min_memory) == ("02:00:00", "16000M")
    assert {job.tres_per_job for rule in ("square", "fail_on_purpose") for job in by_rule[rule]} == {""}
    assert slurm.stderr.count("has been submitted with SLURM jobid") == len(jobs) == 5


def test_cluster_is_stopped_when_the_body_raises():
    if missing_binaries():
        pytest.skip(f"SLURM binaries missing: {', '.join(missing_binaries())} (CI installs them with .ci/install-slurm.sh)")
    with pytest.raises(RuntimeError, match="failure inside the cluster context"):
        with local_slurm_cluster() as cluster:
            pids = cluster.daemon_pids()
            root = cluster.root
            raise RuntimeError("failure inside the cluster context")
    assert len(pids) == 3 and not [pid for pid in pids.values() if _alive(pid)]
    assert not root.exists(), "the cluster's temporary directory was left behind"
