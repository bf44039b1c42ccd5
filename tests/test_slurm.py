"""The shipped SLURM profile (profiles/slurm) with Snakemake's SLURM executor plugin.

1. The sbatch arguments the plugin builds for the GPU rules from the profile (no cluster needed: a
   recording stand-in for sbatch and the other SLURM tools is put first on PATH).
2. A workflow run through ``--profile profiles/slurm`` on a real single-node SLURM cluster on localhost
   (tests/slurm_cluster.py; Debian packages installed by .ci/install-slurm.sh).
"""

from __future__ import annotations

import json
import os
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
