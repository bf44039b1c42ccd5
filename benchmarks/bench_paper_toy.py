"""Wall time of the paper's DAG on its toy mirror (what ``make paper-toy`` runs: the mirror and its overlay
built by workflow/scripts/build_toy_mirror.py, then ``snakemake --cores 2`` with config/paper.yaml and the
overlay, offline), each run in a fresh working directory, mirror and cache: the median of ``--repeats`` runs,
the job count, the jobs' summed CPU seconds and their wall seconds by rule (results/benchmarks/).

Run: python benchmarks/bench_paper_toy.py --repeats 1 [--out benchmarks/results/paper_toy.json]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_demo import by_rule, job_times
from render_benchmarks import machine, short_commit, snakemake_run, write_record

REPO = Path(__file__).resolve().parents[1]
PAPER = REPO / "config" / "paper.yaml"


def paper_toy(root: Path, cores: int) -> tuple[float, float, dict[str, tuple[float, float]]]:
    """(seconds to build the mirror, seconds of the workflow, its jobs' (CPU, wall) seconds) of one run in ``root``."""
    start = time.perf_counter()
    builder = REPO / "workflow" / "scripts" / "build_toy_mirror.py"
    overlay = root / "overlay.yaml"
    mirror = [sys.executable, str(builder), "--config", str(PAPER), "--mirror", str(root / "mirror"), "--overlay"]
    subprocess.run([*mirror, str(overlay)], cwd=REPO, check=True, capture_output=True)
    built = time.perf_counter() - start
    workdir = root / "run"
    workdir.mkdir()
    env = {**os.environ, "BIASTRANSFER_CACHE_DIR": str(root / "cache"), "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    snakemake_run(workdir, cores, "-q", "--configfile", str(PAPER), str(overlay), env=env)
    return built, time.perf_counter() - start, job_times(workdir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--out", default=None, help="write the figures as a benchmarks/results record")
    parser.add_argument("--keep", default=None, help="copy the last run's working directory here")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    builds, walls, cpus, rules = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            root = Path(tmp) / f"toy{i}"
            root.mkdir()
            built, wall, jobs = paper_toy(root, args.cores)
            builds.append(built)
            walls.append(wall)
            cpus.append(sum(c for c, _ in jobs.values()))
            rules.append(by_rule(jobs))
            print(f"paper toy {i}: mirror {built:.0f} s, workflow {wall:.0f} s wall, {cpus[-1]:.0f} s of job CPU")
        if args.keep:
            shutil.copytree(root / "run", args.keep, dirs_exist_ok=True, symlinks=True)
    figures = [
        ["workflow, median wall", f"{statistics.median(walls):.0f} s"],
        ["the mirror and overlay built first, median", f"{statistics.median(builds):.0f} s"],
        ["jobs; their CPU (median)", f"{sum(n for n, _ in rules[0].values())}; {statistics.median(cpus):.0f} s"],
        *(
            [
                f"rule {rule}: jobs, summed wall (median s)",
                f"{rules[0][rule][0]}, {statistics.median(r.get(rule, (0, 0.0))[1] for r in rules):.0f}",
            ]
            for rule in sorted(rules[0], key=lambda r: -rules[0][r][1])
        ),
        ["runs (workflow wall s)", ", ".join(f"{w:.0f}" for w in walls)],
    ]
    if args.out:
        record = {
            "title": "The paper's DAG on its toy mirror (make paper-toy), by rule",
            "command": f"python benchmarks/bench_paper_toy.py --repeats {args.repeats}",
            "commit": short_commit(),
            "machine": f"{machine(load_before, os.getloadavg()[0], pinned=False)}, snakemake --cores {args.cores}",
            "figures": figures,
        }
        write_record(record, Path(args.out))


if __name__ == "__main__":
    main()
