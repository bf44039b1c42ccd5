"""CPU time of a dry run (``snakemake -n``) of a config, the cost every Snakemake call and every cluster job's
parse of the Snakefile pays before it does anything: this checkout with an empty check cache (a first call),
with a warm one (every later call), and a baseline checkout (``--baseline REF``, a git worktree made for the
run) measured in the same run. Medians of ``--repeats``; user + system CPU seconds of the whole process.

Run: python benchmarks/bench_dry_run.py --baseline b435d4c --repeats 3 [--configfile config/config.yaml]
     [--out benchmarks/results/dry_run.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def dry_run_cpu(snakefile: Path, configfile: Path, workdir: Path, cache: Path) -> float:
    """User + system CPU seconds of one ``snakemake -n`` (the child process alone)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {
        **os.environ,
        "BIASTRANSFER_CACHE_DIR": str(cache),
        "PYTHONPATH": str(snakefile.parent / "src"),
    }
    subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--snakefile",
            str(snakefile),
            "-n",
            "--cores",
            "1",
            "-q",
            "--configfile",
            str(configfile),
        ],
        cwd=workdir,
        env=env,
        check=True,
        capture_output=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="git ref of the checkout to compare with")
    parser.add_argument("--configfile", default="config/config.yaml")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=None, help="write the figures as a benchmarks/results record")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        baseline = tmp / "baseline"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", str(baseline), args.baseline], check=True
        )
        try:
            runs = {"baseline": [], "first call (empty check cache)": [], "later calls (warm check cache)": []}
            for i in range(args.repeats):
                work = tmp / f"work{i}"
                work.mkdir()
                cache = tmp / f"cache{i}"
                runs["baseline"].append(dry_run_cpu(baseline / "Snakefile", REPO / args.configfile, work, cache))
                runs["first call (empty check cache)"].append(
                    dry_run_cpu(REPO / "Snakefile", REPO / args.configfile, work, cache)
                )
                runs["later calls (warm check cache)"].append(
                    dry_run_cpu(REPO / "Snakefile", REPO / args.configfile, work, cache)
                )
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(baseline)], check=True)
    medians = {k: statistics.median(v) for k, v in runs.items()}
    base = medians["baseline"]
    figures = [
        [f"{k}, median CPU", f"{v:.2f} s ({v / base:.2f}x the baseline)" if k != "baseline" else f"{v:.2f} s"]
        for k, v in medians.items()
    ]
    for what, value in figures:
        print(f"{what}: {value}")
    if args.out:
        commit = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        record = {
            "title": f"A dry run (snakemake -n) of {args.configfile}: the CPU every Snakemake call pays first",
            "command": f"python benchmarks/bench_dry_run.py --baseline {args.baseline} --repeats {args.repeats} "
            f"--configfile {args.configfile} --out {args.out}",
            "commit": commit,
            "machine": f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end (CPU time, not wall)",
            "figures": [[f"baseline ({args.baseline}), median CPU", figures[0][1]], *figures[1:]],
        }
        Path(args.out).write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
