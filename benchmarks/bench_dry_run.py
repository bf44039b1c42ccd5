"""CPU time of a dry run (``snakemake -n``) of a config, the cost every Snakemake call and every cluster job's
parse of the Snakefile pays before it does anything: a first call (an empty check cache: the config checks
that build networks run, biastransfer.check_cache) and every later call (a warm one), of this checkout and of a
baseline checkout (``--baseline REF``, a git worktree made for the run, with a check cache of its own),
measured in the same run. Medians of ``--repeats``; user + system CPU seconds of the whole process.

Run: python benchmarks/bench_dry_run.py --baseline b435d4c --repeats 3 [--configfile config/paper.yaml
     config/claims.yaml] [--out benchmarks/results/dry_run.json]
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
CALLS = ("first call (empty check cache)", "later calls (warm check cache)")


def dry_run_cpu(snakefile: Path, configfiles: list[Path], workdir: Path, cache: Path) -> float:
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
            *map(str, configfiles),
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
    parser.add_argument(
        "--configfile", nargs="+", default=["config/config.yaml"], help="merged in order; each checkout's own files"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=None, help="write the figures as a benchmarks/results record")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        baseline = tmp / "baseline"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", str(baseline), args.baseline], check=True
        )
        checkouts = {"baseline": baseline, "this checkout": REPO}
        runs = {(who, call): [] for who in checkouts for call in CALLS}
        try:
            for i in range(args.repeats):
                work = tmp / f"work{i}"
                work.mkdir()
                for who, checkout in checkouts.items():
                    cache = tmp / f"cache{i}-{who.replace(' ', '_')}"
                    configfiles = [checkout / c for c in args.configfile]
                    for call in CALLS:  # the first fills the cache that the second reads
                        runs[who, call].append(dry_run_cpu(checkout / "Snakefile", configfiles, work, cache))
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(baseline)], check=True)
    medians = {k: statistics.median(v) for k, v in runs.items()}
    figures = [
        [f"baseline ({args.baseline}), {call}, median CPU", f"{medians['baseline', call]:.2f} s"] for call in CALLS
    ]
    figures += [
        [
            f"{call}, median CPU",
            f"{medians['this checkout', call]:.2f} s ({medians['this checkout', call] / medians['baseline', call]:.2f}x "
            "the baseline)",
        ]
        for call in CALLS
    ]
    for what, value in figures:
        print(f"{what}: {value}")
    if args.out:
        commit = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        record = {
            "title": f"A dry run (snakemake -n) of {' + '.join(args.configfile)}: the CPU every Snakemake call pays "
            "first",
            "command": f"python benchmarks/bench_dry_run.py --baseline {args.baseline} --repeats {args.repeats} "
            f"--configfile {' '.join(args.configfile)} --out {args.out}",
            "commit": commit,
            "machine": f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end (CPU time, not wall)",
            "figures": figures,
        }
        Path(args.out).write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
