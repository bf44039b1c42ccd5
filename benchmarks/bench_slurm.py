"""The workflow through profiles/slurm on a local one-node SLURM cluster, against the same run locally.

Starts the test cluster of tests/slurm_cluster.py (Debian packages from .ci/install-slurm.sh; a node sized
like a 4-GPU node, nothing enforced) and runs, one after another in fresh directories, each repeat:

1. the tiny demo (tests/configs/tiny.yaml) locally with ``--cores all`` (the baseline);
2. the same through ``--profile profiles/slurm`` with the profile's job groups (one job per model for
   the small per-model analyses: rules/analysis.smk, MODEL_STATS_GROUP);
3. the same through the profile with every analysis job submitted on its own (``--groups`` gives each
   grouped rule a group whose jobs never connect: one submission per job, as before grouping);
4. a several-model version of the tiny demo (``--models``, one finetuning seed) locally and through the
   profile with groups: the scheduling overhead per model is (SLURM wall - local wall) / models.

The cluster has no accounting database, so the runs add the options the tests add
(tests/test_slurm.py, LOCAL_CLUSTER_OPTIONS). Prints, per setting, the median wall time, the ratio to the
local run of the same repeat, and the number of sbatch submissions (from Snakemake's log, checked
against the jobs the cluster ran under that run's ID); writes benchmarks/results/bench_slurm.json.
About 10 minutes per repeat on 2 idle cores.

    .venv/bin/python benchmarks/bench_slurm.py [--repeats 1] [--models 4]   # --models 0: the tiny demo only
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
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from slurm_cluster import SlurmCluster, local_slurm_cluster
from test_slurm import LOCAL_CLUSTER_OPTIONS, PROFILE, TINY

RESULTS = REPO / "benchmarks" / "results" / "bench_slurm.json"
# Every grouped rule in a group of its own name: its jobs never depend on each other, so each is one job.
UNGROUPED = ["--groups", *(f"{rule}=single_{rule}" for rule in ("similarity", "ieat", "bts", "change"))]


def models_config(n_models: int, root: Path) -> Path:
    """The tiny demo with ``n_models`` copies of its model (distinct pretraining seeds) and one finetuning seed."""
    config = yaml.safe_load(TINY.read_text())
    (name, model), = config["models"].items()
    config["models"] = {
        f"{name}{i}": {**model, "pretrain": {**model["pretrain"], "seed": i}} for i in range(n_models)
    }
    config["finetune"]["seeds"] = [0]
    path = root / f"models{n_models}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def run_workflow(config: Path, workdir: Path, env: dict[str, str], args: list[str]) -> tuple[float, str]:
    """Run the workflow on ``config`` in ``workdir``; wall seconds and the log. Raises naming the log's tail."""
    workdir.mkdir(parents=True)
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--configfile",
               str(config), "--directory", str(workdir), *args]
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


def one_repeat(cluster: SlurmCluster, root: Path, models_yaml: Path, n_models: int) -> dict[str, dict]:
    env = {**cluster.env, "HF_HUB_OFFLINE": "1"}
    profile = ["--profile", str(PROFILE), *LOCAL_CLUSTER_OPTIONS]
    settings = {
        "tiny_local": (TINY, ["--cores", "all"]),
        "tiny_slurm_grouped": (TINY, profile),
        "tiny_slurm_ungrouped": (TINY, [*profile, *UNGROUPED]),
    }
    if n_models:
        settings |= {"models_local": (models_yaml, ["--cores", "all"]), "models_slurm_grouped": (models_yaml, profile)}
    out = {}
    for name, (config, args) in settings.items():
        wall, log = run_workflow(config, root / name, env, args)
        out[name] = {"wall_s": wall, "sbatch": submissions(log, cluster) if "slurm" in name else 0}
        print(f"  {name}: {wall:.1f} s, {out[name]['sbatch']} sbatch submissions", flush=True)
    if n_models:
        out["overhead_per_model_s"] = (out["models_slurm_grouped"]["wall_s"] - out["models_local"]["wall_s"]) / n_models
    return out


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))  # stop the cluster on `kill`, too
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--models", type=int, default=4, help="models in the several-model config (0: skip it)")
    args = parser.parse_args()
    repeats = []
    with tempfile.TemporaryDirectory(prefix="bench-slurm-") as tmp, \
            local_slurm_cluster(cpus=32, memory_mb=262144, gpus=4) as cluster:
        models_yaml = models_config(args.models, Path(tmp))
        for repeat in range(args.repeats):
            print(f"repeat {repeat + 1}/{args.repeats}", flush=True)
            repeats.append(one_repeat(cluster, Path(tmp) / f"r{repeat}", models_yaml, args.models))

    def median(key: str, field: str = "wall_s") -> float:
        return statistics.median(r[key][field] for r in repeats)

    summary = {name: {"wall_s": median(name), "sbatch": median(name, "sbatch")}
               for name in repeats[0] if name != "overhead_per_model_s"}
    for name in ("tiny_slurm_grouped", "tiny_slurm_ungrouped"):
        summary[name]["ratio_to_local"] = statistics.median(r[name]["wall_s"] / r["tiny_local"]["wall_s"] for r in repeats)
    if args.models:
        summary["models_slurm_grouped"]["ratio_to_local"] = statistics.median(
            r["models_slurm_grouped"]["wall_s"] / r["models_local"]["wall_s"] for r in repeats)
        summary["overhead_per_model_s"] = statistics.median(r["overhead_per_model_s"] for r in repeats)

    print(f"medians over {args.repeats} repeat(s), {os.cpu_count()} CPUs:")
    for name, row in summary.items():
        if name == "overhead_per_model_s":
            continue
        ratio = f", {row['ratio_to_local']:.2f}x local" if "ratio_to_local" in row else ""
        print(f"  {name:22s} {row['wall_s']:7.1f} s{ratio}, {row['sbatch']:.0f} sbatch submissions")
    if args.models:
        print(f"  scheduling overhead per model ({args.models} models): {summary['overhead_per_model_s']:.1f} s")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"machine": platform.node(), "cpus": os.cpu_count(), "repeats": repeats,
                                   "models": args.models, "median": summary}, indent=2) + "\n")


if __name__ == "__main__":
    main()
