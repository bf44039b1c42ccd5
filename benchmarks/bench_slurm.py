"""The workflow through profiles/slurm on a local one-node SLURM cluster, against the same run locally.

Starts the test cluster of tests/slurm_cluster.py (Debian packages from .ci/install-slurm.sh; a node sized
like an 8-GPU node, nothing enforced) and runs, one after another in fresh directories, each repeat:

1. the tiny demo (tests/configs/tiny.yaml) locally with ``--cores all`` (the baseline);
2. the same through ``--profile profiles/slurm`` with the profile's job groups (one job per model for
   the small per-model analyses: rules/common.smk, MODEL_STATS_GROUP; in a pretrained-only config such
   as the zoo below, the model's embeddings too: EMBEDDING_GROUP);
3. the same through the profile with every analysis job submitted on its own (``--groups`` gives each
   grouped rule a group whose jobs never connect: one submission per job, as before grouping);
4. a several-model version of the tiny demo (``--models``, one finetuning seed) locally and through the
   profile with groups (wall times and their ratio);
5. the small model zoo of tests/test_zoo.py (tests/zoo_toy.py: seven working models, two broken ones)
   locally and through the profile with groups. Its **scheduling overhead per model** is what the
   cluster adds to the work itself: over the run's SLURM jobs, the sum of (end - submission), that is
   queueing plus each job's own Snakemake start-up and file checks plus the rules' work, minus the
   rules' work (the seconds of their ``benchmark:`` files), divided by the working models. Split into
   queueing (start - submission) and in-job overhead. The run through the profile keeps at most as many
   SLURM jobs at once as the machine has CPUs (``--jobs``), as the local run does with ``--cores all``,
   so that both share the CPUs alike, and the node has 8 GPUs, so that no job waits for a free one.
   Snakemake's status polling comes on top: the plugin polls 1 s after a poll that saw a job end, then
   10 s later each time (profiles/slurm/README.md), which delays the run, not the job.

The cluster has no accounting database, so the runs add the options the tests add
(tests/test_slurm.py, LOCAL_CLUSTER_OPTIONS). Prints, per setting, the median wall time, the ratio to the
local run of the same repeat, and the number of sbatch submissions (from Snakemake's log, checked
against the jobs the cluster ran under that run's ID); writes benchmarks/results/bench_slurm.json.
About 7 minutes per repeat with ``--models 0`` on 2 idle cores.

    .venv/bin/python benchmarks/bench_slurm.py [--repeats 1] [--models 4] [--no-zoo] [--no-tiny]   # --models 0: no several-model run
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "src")]

from conftest import snakemake_command  # noqa: E402  (from tests/, put on sys.path above)
from slurm_cluster import SlurmCluster, local_slurm_cluster  # noqa: E402  (from tests/, put on sys.path above)
from test_slurm import LOCAL_CLUSTER_OPTIONS, PROFILE, TINY  # noqa: E402
from zoo_toy import BROKEN, SMALL_ZOO, small_zoo_config  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "bench_slurm.json"
# Every grouped rule in a group of its own name: its jobs never depend on each other, so each is one job.
UNGROUPED = [
    "--groups",
    *(f"{rule}=single_{rule}" for rule in ("similarity", "ieat", "bts", "change", "model_analyses")),
]


def models_config(n_models: int, root: Path) -> Path:
    """The tiny demo with ``n_models`` copies of its model (distinct pretraining seeds) and one finetuning seed."""
    config = yaml.safe_load(TINY.read_text())
    ((name, model),) = config["models"].items()
    config["models"] = {f"{name}{i}": {**model, "pretrain": {**model["pretrain"], "seed": i}} for i in range(n_models)}
    config["finetune"]["seeds"] = [0]
    path = root / f"models{n_models}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def run_workflow(config: Path, workdir: Path, env: dict[str, str], args: list[str]) -> tuple[float, str]:
    """Run the workflow on ``config`` in ``workdir``; wall seconds and the log. Raises naming the log's tail."""
    workdir.mkdir(parents=True)
    command = snakemake_command("--configfile", config, "--directory", workdir, *args)
    start = time.monotonic()
    result = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=3600, check=False)
    wall = time.monotonic() - start
    log = result.stdout + result.stderr
    (workdir / "snakemake.log").write_text(log)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({result.returncode}):\n{log[-6000:]}")
    return wall, log


def submissions(log: str, cluster: SlurmCluster) -> int:
    """Number of sbatch submissions of one run, checked against the jobs the cluster ran under its run ID."""
    # A single job is "Job 12 has been submitted ...", a group job "Job <uuid> has been submitted ...".
    submitted = re.findall(r"^Job \S+ has been submitted with SLURM jobid (\d+)", log, re.MULTILINE)
    run_id = re.search(r"SLURM run ID: (\S+)", log).group(1)
    ran = [job for job in cluster.jobs() if job.name == run_id]
    if sorted(int(j) for j in submitted) != [job.job_id for job in ran]:
        raise RuntimeError(f"Snakemake reported SLURM jobs {submitted}, the cluster ran {[j.job_id for j in ran]}")
    if any(job.state != "COMPLETED" for job in ran):
        raise RuntimeError(f"jobs not COMPLETED: {[(job.job_id, job.state) for job in ran]}")
    return len(submitted)


def rule_seconds(workdir: Path, rules: set[str]) -> float:
    """Seconds of work of ``rules`` in a run: the sum of their benchmark files' ``s`` column."""
    total = 0.0
    for tsv in (workdir / "results" / "benchmarks").rglob("*.tsv"):
        if tsv.relative_to(workdir / "results" / "benchmarks").parts[0] in rules:
            total += float(tsv.read_text().splitlines()[1].split("\t")[0])
    return total


def zoo_overhead(log: str, workdir: Path, cluster: SlurmCluster) -> dict[str, float]:
    """Scheduling overhead of a zoo run through the profile (see the module's docstring), in seconds."""
    run_id = re.search(r"SLURM run ID: (\S+)", log).group(1)
    jobs = [job for job in cluster.jobs() if job.name == run_id]
    when = datetime.fromisoformat
    queued = sum((when(j.start_time) - when(j.submit_time)).total_seconds() for j in jobs)
    elapsed = sum((when(j.end_time) - when(j.start_time)).total_seconds() for j in jobs)
    # rules submitted to the cluster: printed as "rule X:" (local ones as "localrule X:"), alone or in a group
    remote = set(re.findall(r"^\s*rule (\w+):", log, re.MULTILINE))
    work = rule_seconds(workdir, remote)
    models = len(SMALL_ZOO) - len(BROKEN)
    return {
        "jobs": len(jobs),
        "models": models,
        "rules": sorted(remote),
        "work_s": work,
        "queued_s": queued,
        "in_job_s": elapsed - work,
        "per_model_s": (queued + elapsed - work) / models,
        "per_job": [
            {
                "comment": j.comment,
                "queued_s": (when(j.start_time) - when(j.submit_time)).total_seconds(),
                "run_s": (when(j.end_time) - when(j.start_time)).total_seconds(),
            }
            for j in jobs
        ],
    }


def one_repeat(
    cluster: SlurmCluster, root: Path, models_yaml: Path, n_models: int, zoo_yaml: Path | None, no_tiny: bool = False
) -> dict[str, dict]:
    env = {**cluster.env, "HF_HUB_OFFLINE": "1"}
    profile = ["--profile", str(PROFILE), *LOCAL_CLUSTER_OPTIONS]
    settings = (
        {}
        if no_tiny
        else {
            "tiny_local": (TINY, ["--cores", "all"]),
            "tiny_slurm_grouped": (TINY, profile),
            "tiny_slurm_ungrouped": (TINY, [*profile, *UNGROUPED]),
        }
    )
    if n_models:
        settings |= {"models_local": (models_yaml, ["--cores", "all"]), "models_slurm_grouped": (models_yaml, profile)}
    if zoo_yaml:
        settings |= {
            "zoo_local": (zoo_yaml, ["--cores", "all", "--keep-going"]),
            "zoo_slurm_grouped": (zoo_yaml, [*profile, "--jobs", str(os.cpu_count())]),
        }
    out = {}
    for name, (config, args) in settings.items():
        wall, log = run_workflow(config, root / name, env, args)
        out[name] = {"wall_s": wall, "sbatch": submissions(log, cluster) if "slurm" in name else 0}
        print(f"  {name}: {wall:.1f} s, {out[name]['sbatch']} sbatch submissions", flush=True)
        if name == "zoo_slurm_grouped":
            out["zoo_overhead"] = zoo_overhead(log, root / name, cluster)
            print(
                f"  zoo scheduling overhead: { {k: v for k, v in out['zoo_overhead'].items() if k != 'per_job'} }",
                flush=True,
            )
    return out


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))  # stop the cluster on `kill`, too
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--models", type=int, default=4, help="models in the several-model config (0: skip it)")
    parser.add_argument("--no-zoo", action="store_true", help="skip the small zoo")
    parser.add_argument("--no-tiny", action="store_true", help="skip the tiny demo")
    args = parser.parse_args()
    repeats = []
    with (
        tempfile.TemporaryDirectory(prefix="bench-slurm-") as tmp,
        local_slurm_cluster(cpus=32, memory_mb=262144, gpus=8) as cluster,
    ):
        models_yaml = models_config(args.models, Path(tmp))
        zoo_yaml = None
        if not args.no_zoo:
            zoo_yaml = Path(tmp) / "zoo.yaml"
            zoo_yaml.write_text(yaml.safe_dump(small_zoo_config(Path(tmp)), sort_keys=False))
        for repeat in range(args.repeats):
            print(f"repeat {repeat + 1}/{args.repeats}", flush=True)
            repeats.append(
                one_repeat(cluster, Path(tmp) / f"r{repeat}", models_yaml, args.models, zoo_yaml, args.no_tiny)
            )

    def median(key: str, field: str = "wall_s") -> float:
        return statistics.median(r[key][field] for r in repeats)

    summary = {
        name: {"wall_s": median(name), "sbatch": median(name, "sbatch")}
        for name in repeats[0]
        if name != "zoo_overhead"
    }
    for name in () if args.no_tiny else ("tiny_slurm_grouped", "tiny_slurm_ungrouped"):
        summary[name]["ratio_to_local"] = statistics.median(
            r[name]["wall_s"] / r["tiny_local"]["wall_s"] for r in repeats
        )
    for kind in ("models", "zoo"):
        if f"{kind}_local" in summary:
            summary[f"{kind}_slurm_grouped"]["ratio_to_local"] = statistics.median(
                r[f"{kind}_slurm_grouped"]["wall_s"] / r[f"{kind}_local"]["wall_s"] for r in repeats
            )
    if not args.no_zoo:
        summary["zoo_overhead"] = {
            key: statistics.median(r["zoo_overhead"][key] for r in repeats)
            for key in ("jobs", "work_s", "queued_s", "in_job_s", "per_model_s")
        }

    print(f"medians over {args.repeats} repeat(s), {os.cpu_count()} CPUs:")
    for name, row in summary.items():
        if name == "zoo_overhead":
            continue
        ratio = f", {row['ratio_to_local']:.2f}x local" if "ratio_to_local" in row else ""
        print(f"  {name:22s} {row['wall_s']:7.1f} s{ratio}, {row['sbatch']:.0f} sbatch submissions")
    if not args.no_zoo:
        z = summary["zoo_overhead"]
        models = len(SMALL_ZOO) - len(BROKEN)
        print(
            f"  zoo scheduling overhead per model ({models} models, {z['jobs']:.0f} SLURM jobs): "
            f"{z['per_model_s']:.1f} s (queueing {z['queued_s']:.0f} s + in-job {z['in_job_s']:.0f} s in all, "
            f"beside {z['work_s']:.0f} s of the rules' own work; target <= 5 s)"
        )
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "machine": platform.node(),
                "cpus": os.cpu_count(),
                "repeats": repeats,
                "models": args.models,
                "median": summary,
            },
            indent=2,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
