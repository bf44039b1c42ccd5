"""Wall time of the offline demo (``snakemake --cores 2`` with the default config, each run in a fresh working
directory and cache, as in a fresh clone) against the same demo with a part turned off by a config overlay
(``--baseline``, JSON merged into the config), run alternately so both see the same machine. Medians of
``--repeats``; also the jobs' summed CPU seconds (``results/benchmarks/``) and the jobs only the full demo runs.

Run: python benchmarks/bench_demo.py --repeats 2 --label "the prediction-level measures (issue 27)"
     --baseline '{"datasets": {"synthetic_target": {"n_test": 0}}}' [--out benchmarks/results/demo_parts.json]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from render_benchmarks import machine, short_commit, write_record

REPO = Path(__file__).resolve().parents[1]


def job_cpu(workdir: Path) -> dict[str, float]:
    """CPU seconds of each job of a finished run, keyed by its benchmark file."""
    out = {}
    for tsv in sorted((workdir / "results" / "benchmarks").rglob("*.tsv")):
        with tsv.open() as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
        out[str(tsv.relative_to(workdir / "results" / "benchmarks"))] = float(rows[-1]["cpu_time"])
    return out


def demo(workdir: Path, cores: int, overlay: Path | None) -> tuple[float, dict[str, float]]:
    """Wall seconds of one demo run in ``workdir`` and its jobs' CPU seconds."""
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
    return time.perf_counter() - start, job_cpu(workdir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="JSON overlay that turns the measured part off")
    parser.add_argument("--label", required=True, help="what the overlay turns off, for the record")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--out", default=None, help="write the figures as a benchmarks/results record")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    walls: dict[str, list[float]] = {"baseline": [], "demo": []}
    cpus: dict[str, list[float]] = {"baseline": [], "demo": []}
    added: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        overlay = tmp / "baseline.yaml"
        overlay.write_text(json.dumps(json.loads(args.baseline)))  # JSON is YAML
        for i in range(args.repeats):
            for name, extra in (
                (("baseline", overlay), ("demo", None)) if i % 2 == 0 else (("demo", None), ("baseline", overlay))
            ):
                wall, jobs = demo(tmp / f"{name}{i}", args.cores, extra)
                walls[name].append(wall)
                cpus[name].append(sum(jobs.values()))
                if name == "demo":
                    added |= set(jobs)
                else:
                    added -= set(jobs)
                print(f"{name} {i}: {wall:.0f} s wall, {sum(jobs.values()):.0f} s of job CPU", flush=True)
    median = {k: statistics.median(v) for k, v in walls.items()}
    ratio = median["demo"] / median["baseline"]
    print(
        f"median wall: demo {median['demo']:.0f} s, without {args.label} {median['baseline']:.0f} s; ratio {ratio:.3f}"
    )
    if args.out:
        record = {
            "title": f"The demo's wall time with and without {args.label}",
            "command": f"python benchmarks/bench_demo.py --repeats {args.repeats} --baseline '{args.baseline}'",
            "commit": short_commit(),
            "machine": f"{machine(load_before, os.getloadavg()[0], pinned=False)}, snakemake --cores {args.cores}; "
            "runs alternated",
            "figures": [
                ["demo, median wall", f"{median['demo']:.0f} s"],
                [f"without {args.label}, median wall", f"{median['baseline']:.0f} s"],
                ["ratio", f"{ratio:.3f}"],
                [
                    "job CPU, demo / without (medians)",
                    f"{statistics.median(cpus['demo']):.0f} s / {statistics.median(cpus['baseline']):.0f} s",
                ],
                ["jobs only the demo runs", ", ".join(sorted(a.removesuffix(".tsv") for a in added))],
                ["runs (wall s)", "; ".join(f"{k}: {', '.join(f'{w:.0f}' for w in v)}" for k, v in walls.items())],
            ],
        }
        write_record(record, Path(args.out))


if __name__ == "__main__":
    main()
