"""Wall time of the offline demo (``snakemake --cores 2`` with the default config, each run in a fresh working
directory and cache, as in a fresh clone): the median of ``--repeats`` runs, the jobs' summed CPU seconds
(``results/benchmarks/``) and their wall seconds by rule, so that a change shows which jobs gained what.
With ``--baseline`` (JSON merged into the config), the same demo with a part turned off runs alternately
with the full one, so both see the same machine, and the record gives their ratio.

Run: python benchmarks/bench_demo.py --repeats 3 [--out benchmarks/results/demo.json]
     python benchmarks/bench_demo.py --repeats 2 --label "the prediction-level measures (issue 27)"
         --baseline '{"datasets": {"synthetic_target": {"n_test": 0}}}' [--out benchmarks/results/demo_parts.json]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from render_benchmarks import machine, short_commit, write_record

REPO = Path(__file__).resolve().parents[1]


def job_times(workdir: Path) -> dict[str, tuple[float, float]]:
    """(CPU seconds, wall seconds) of each job of a finished run, keyed by its benchmark file."""
    out = {}
    for tsv in sorted((workdir / "results" / "benchmarks").rglob("*.tsv")):
        with tsv.open() as f:
            row = list(csv.DictReader(f, delimiter="\t"))[-1]
        out[str(tsv.relative_to(workdir / "results" / "benchmarks"))] = (float(row["cpu_time"]), float(row["s"]))
    return out


def by_rule(jobs: dict[str, tuple[float, float]]) -> dict[str, tuple[int, float]]:
    """Jobs and their summed wall seconds per rule (a benchmark file's first folder, or its name)."""
    out: dict[str, tuple[int, float]] = {}
    for name, (_, wall) in jobs.items():
        rule = name.split("/")[0].removesuffix(".tsv")
        n, total = out.get(rule, (0, 0.0))
        out[rule] = (n + 1, total + wall)
    return out


def demo(workdir: Path, cores: int, overlay: Path | None) -> tuple[float, dict[str, tuple[float, float]]]:
    """Wall seconds of one demo run in ``workdir`` and its jobs' (CPU, wall) seconds."""
    workdir.mkdir(parents=True)
    env = {**os.environ, "BIASTRANSFER_CACHE_DIR": str(workdir / "cache"), "HF_HUB_OFFLINE": "1"}
    extra = ["--configfile", str(REPO / "config" / "config.yaml"), str(overlay)] if overlay else []
    start = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--snakefile",
            str(REPO / "Snakefile"),
            "--cores",
            str(cores),
            "-q",
            *extra,
        ],
        cwd=workdir,
        env=env,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - start, job_times(workdir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=None, help="JSON overlay that turns the measured part off")
    parser.add_argument("--label", default=None, help="what the overlay turns off, for the record")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--out", default=None, help="write the figures as a benchmarks/results record")
    parser.add_argument("--keep", default=None, help="copy the last demo run's results folder here")
    args = parser.parse_args()
    if (args.baseline is None) != (args.label is None):
        parser.error("--baseline and --label go together")
    names = ("demo",) if args.baseline is None else ("baseline", "demo")
    load_before = os.getloadavg()[0]
    walls: dict[str, list[float]] = {n: [] for n in names}
    cpus: dict[str, list[float]] = {n: [] for n in names}
    rules: list[dict[str, tuple[int, float]]] = []
    added: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        overlay = tmp / "baseline.yaml"
        if args.baseline is not None:
            overlay.write_text(json.dumps(json.loads(args.baseline)))  # JSON is YAML
        for i in range(args.repeats):
            for name in names if i % 2 == 0 else names[::-1]:
                wall, jobs = demo(tmp / f"{name}{i}", args.cores, overlay if name == "baseline" else None)
                walls[name].append(wall)
                cpus[name].append(sum(c for c, _ in jobs.values()))
                if name == "demo":
                    added |= set(jobs)
                    rules.append(by_rule(jobs))
                else:
                    added -= set(jobs)
                print(f"{name} {i}: {wall:.0f} s wall, {cpus[name][-1]:.0f} s of job CPU", flush=True)
        if args.keep:
            shutil.copytree(tmp / f"demo{args.repeats - 1}" / "results", args.keep, dirs_exist_ok=True)
    median = {k: statistics.median(v) for k, v in walls.items()}
    figures = [
        ["demo, median wall", f"{median['demo']:.0f} s"],
        [
            "demo jobs; their CPU (median)",
            f"{sum(n for n, _ in rules[0].values())}; {statistics.median(cpus['demo']):.0f} s",
        ],
        *(
            [
                f"rule {rule}: jobs, summed wall (median s)",
                f"{rules[0][rule][0]}, {statistics.median(r.get(rule, (0, 0.0))[1] for r in rules):.0f}",
            ]
            for rule in sorted(rules[0], key=lambda r: -rules[0][r][1])
        ),
    ]
    if args.baseline is not None:
        ratio = median["demo"] / median["baseline"]
        print(f"median wall: demo {median['demo']:.0f} s, without {args.label} {median['baseline']:.0f} s")
        figures[1:1] = [
            [f"without {args.label}, median wall", f"{median['baseline']:.0f} s"],
            ["ratio", f"{ratio:.3f}"],
            ["job CPU, without (median)", f"{statistics.median(cpus['baseline']):.0f} s"],
        ]
        figures.append(["jobs only the demo runs", ", ".join(sorted(a.removesuffix(".tsv") for a in added))])
    figures.append(["runs (wall s)", "; ".join(f"{k}: {', '.join(f'{w:.0f}' for w in v)}" for k, v in walls.items())])
    print(f"median wall: demo {median['demo']:.0f} s")
    if args.out:
        command = f"python benchmarks/bench_demo.py --repeats {args.repeats}"
        if args.baseline is not None:
            command += f" --label '{args.label}' --baseline '{args.baseline}'"
        record = {
            "title": "The demo's wall time"
            + (f" with and without {args.label}" if args.baseline is not None else ", by rule"),
            "command": command,
            "commit": short_commit(),
            "machine": f"{machine(load_before, os.getloadavg()[0], pinned=False)}, snakemake --cores {args.cores}"
            + ("; runs alternated" if args.baseline is not None else ""),
            "figures": figures,
        }
        write_record(record, Path(args.out))


if __name__ == "__main__":
    main()
