"""Calibration of the meta-regression's cluster-bootstrap interval (``unit_regression``) on simulated models.

Each data set holds ``n`` models x 10 iEAT tests: a covariate x per model (standard normal), a test
intercept (SD 0.8), a model intercept (SD 0.5) and noise (SD 0.5); the value is ``slope * x`` plus those.
For 10, 20, 30 and 67 models it counts how often the 95% interval covers a planted slope of 0.5, and how
often it excludes 0 for a null slope (``--datasets`` data sets each, ``--replicates`` per interval).
Writes benchmarks/results/factors_coverage.json (a record; benchmarks/render_benchmarks.py renders it).
Run: PYTHONPATH=workflow/scripts .venv/bin/python benchmarks/calibrate_factors.py [--datasets 300]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from render_benchmarks import machine, pin_threads, short_commit, write_record  # benchmarks/

pin_threads()

import os  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from biastransfer.stats.factors import unit_regression  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "factors_coverage.json"
MODELS, TESTS = (10, 20, 30, 67), 10


def simulated(rng: np.random.Generator, n_models: int, slope: float) -> tuple[pd.DataFrame, dict]:
    x = rng.normal(size=n_models)
    values = (
        slope * x[:, None]
        + rng.normal(size=(n_models, 1)) * 0.5
        + rng.normal(size=(1, TESTS)) * 0.8
        + rng.normal(size=(n_models, TESTS)) * 0.5
    )
    models = [f"m{i}" for i in range(n_models)]
    observations = pd.DataFrame(
        {
            "model": np.repeat(models, TESTS),
            "test": np.tile([f"t{j}" for j in range(TESTS)], n_models),
            "value": values.ravel(),
        }
    )
    return observations, {m: {"x": float(v)} for m, v in zip(models, x)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=300)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--json", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    figures = []
    for n_models in MODELS:
        rng, covered, rejected = np.random.default_rng(1), 0, 0
        for seed in range(args.datasets):
            fit = unit_regression(*simulated(rng, n_models, 0.5), ["x"], replicates=args.replicates, seed=seed)
            covered += fit.ci_low[1] <= 0.5 <= fit.ci_high[1]
            fit = unit_regression(*simulated(rng, n_models, 0.0), ["x"], replicates=args.replicates, seed=seed)
            rejected += not fit.ci_low[1] <= 0 <= fit.ci_high[1]
        figures.append(
            [
                f"{n_models} models: planted slope covered / null slope's interval excludes 0",
                f"{covered / args.datasets:.1%} / {rejected / args.datasets:.1%}",
            ]
        )
    record = {
        "title": "Meta-regression across models: coverage of the cluster-bootstrap interval (95%), simulated models",
        "command": f"PYTHONPATH=workflow/scripts python benchmarks/calibrate_factors.py --datasets {args.datasets} "
        f"--replicates {args.replicates}",
        "commit": short_commit(),
        "machine": machine(load_before, os.getloadavg()[0]),
        "figures": figures,
    }
    write_record(record, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
