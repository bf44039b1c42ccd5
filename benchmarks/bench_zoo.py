"""Benchmark: the small model zoo of tests/test_zoo.py end to end, and what each model adds.

Runs the workflow (``snakemake --cores N``) on the small zoo (seven models from four sources with random
weights in their real formats, plus two broken ones; tests/zoo_toy.py) and, as the baseline in the same
run, on a zoo of one model (resnet18). Reports the median wall time of each, the marginal wall time per
model ((T_zoo - T_one) / (models - 1)), and from Snakemake's per-job benchmark files the job seconds of
every model (its check, embedding, similarity and iEAT jobs) and of every rule.

    .venv/bin/python benchmarks/bench_zoo.py [--repeats 1] [--cores 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import yaml
from render_benchmarks import snakemake_run  # benchmarks/

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "src")]

from zoo_toy import SMALL_ZOO, small_zoo_config  # noqa: E402  (from tests/, put on sys.path above)


def run_zoo(models: list[str], cores: int) -> tuple[float, dict[str, float], dict[str, float]]:
    """(wall seconds, job seconds per model, job seconds per rule) of one fresh run."""
    with tempfile.TemporaryDirectory(prefix="bench_zoo_") as tmp:
        root = Path(tmp)
        config = root / "zoo.yaml"
        config.write_text(yaml.safe_dump(small_zoo_config(root, models), sort_keys=False))
        (root / "work").mkdir()
        start = time.perf_counter()
        snakemake_run(root / "work", cores, "--configfile", str(config), text=True)
        wall = time.perf_counter() - start
        per_model, per_rule = defaultdict(float), defaultdict(float)
        bench = root / "work" / "results" / "benchmarks"
        for tsv in bench.rglob("*.tsv"):
            seconds = float(tsv.read_text().splitlines()[1].split("\t")[0])
            parts = tsv.relative_to(bench).with_suffix("").parts
            per_rule[parts[0]] += seconds
            for model in models:
                if model in parts:
                    per_model[model] += seconds
        return wall, dict(per_model), dict(per_rule)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args()
    zoo = list(SMALL_ZOO)
    walls, ones, models, rules = [], [], defaultdict(list), defaultdict(list)
    for _ in range(args.repeats):
        ones.append(run_zoo(["resnet18"], args.cores)[0])
        wall, per_model, per_rule = run_zoo(zoo, args.cores)
        walls.append(wall)
        for k, v in per_model.items():
            models[k].append(v)
        for k, v in per_rule.items():
            rules[k].append(v)
    t_zoo, t_one = statistics.median(walls), statistics.median(ones)
    print(f"small zoo ({len(zoo)} models, {args.cores} cores, {args.repeats} repeat(s)): median wall {t_zoo:.1f} s")
    print(f"baseline, a zoo of one model (resnet18): median wall {t_one:.1f} s; ratio {t_zoo / t_one:.2f}")
    print(f"marginal wall time per model: {(t_zoo - t_one) / (len(zoo) - 1):.1f} s")
    print("job seconds per model (check, embed, similarity, iEAT; median):")
    for k in zoo:
        print(f"  {k:34s} {statistics.median(models.get(k, [0.0])):6.1f}")
    print("job seconds per rule (all models; median):")
    for k, v in sorted(rules.items(), key=lambda kv: -statistics.median(kv[1])):
        print(f"  {k:34s} {statistics.median(v):6.1f}")


if __name__ == "__main__":
    main()
