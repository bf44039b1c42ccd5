"""Speed of the meta-regression across models on one core (threads pinned to 1 before numpy loads).

The zoo's question: 67 models x 10 iEATs (670 observations) against the objective (three levels), log10
pretraining images and log10 parameters (4 coefficients), with 2,000 cluster-bootstrap replicates
(:func:`biastransfer.stats.factors.meta_regression`: one REML fit of the mixed model with crossed test and
model intercepts, then the replicates in one batched least squares of the unit means; target under 10 s),
against refitting the mixed model in every replicate (5 refits timed and scaled to 2,000).

Medians of ``--repeats`` runs; the load average before and after says whether the CPU was shared.
Writes benchmarks/results/factors.json (a record; benchmarks/render_benchmarks.py renders it).
Run: PYTHONPATH=workflow/scripts .venv/bin/python benchmarks/bench_factors.py [--repeats 3]
"""

from __future__ import annotations

import os

from render_benchmarks import median_time, pin_threads, record_arguments, write_timed_record  # benchmarks/

pin_threads()

import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from biastransfer.stats.bootstrap import resample_counts  # noqa: E402
from biastransfer.stats.factors import design, meta_regression, mixed_fit  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "factors.json"
TITLE = "Meta-regression across models: 67 models x 10 iEATs, 2,000 cluster-bootstrap replicates, one core"
MODELS, TESTS, REPLICATES = 67, 10, 2000
TERMS = ["objective", "log10 pretraining_images", "log10 parameters"]


def data(seed: int = 0) -> tuple[pd.DataFrame, dict]:
    """A zoo of ``MODELS`` models: three objectives, log10 images in 6-9.4, log10 parameters in 6.6-8.5, and a
    pretrained d per iEAT with crossed test and model effects."""
    rng = np.random.default_rng(seed)
    objectives = np.array(["supervised", "self-supervised", "contrastive image-text"])[rng.integers(0, 3, MODELS)]
    images, params = rng.uniform(6, 9.4, MODELS), rng.uniform(6.6, 8.5, MODELS)
    covariates = {f"m{i}": {TERMS[0]: objectives[i], TERMS[1]: images[i], TERMS[2]: params[i]} for i in range(MODELS)}
    test_effect, model_effect = rng.normal(0, 0.4, TESTS), rng.normal(0, 0.2, MODELS)
    rows = [
        {
            "model": f"m{i}",
            "test": f"t{j}",
            "value": 0.1 * images[i]
            + (objectives[i] == "self-supervised") * -0.2
            + test_effect[j]
            + model_effect[i]
            + rng.normal(0, 0.2),
        }
        for i in range(MODELS)
        for j in range(TESTS)
    ]
    return pd.DataFrame(rows), covariates


def refit_baseline(observations: pd.DataFrame, covariates: dict, refits: int) -> float:
    """Seconds for ``refits`` cluster-bootstrap replicates that refit the mixed model each time."""
    counts = resample_counts(MODELS, refits, np.random.default_rng(0)).astype(int)
    models = list(covariates)
    start = time.perf_counter()
    for row in counts:
        drawn = [
            observations[observations["model"] == m].assign(model=f"{m}#{k}")
            for m, n in zip(models, row)
            for k in range(n)
        ]
        resample = pd.concat(drawn, ignore_index=True)
        frame, columns = design(
            resample, {f"{m}#{k}": covariates[m] for m, n in zip(models, row) for k in range(n)}, TERMS
        )
        mixed_fit(frame, columns)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    args = record_arguments(__doc__.splitlines()[0], RESULTS, argv)
    load_before = os.getloadavg()[0]
    observations, covariates = data()
    seconds, result = median_time(
        lambda: meta_regression(observations, covariates, TERMS, replicates=REPLICATES, seed=0), args.repeats
    )
    refits = refit_baseline(observations, covariates, 5) * REPLICATES / 5
    images = next(c for c in result.coefficients if c.term == TERMS[1])
    figures = [
        [
            "meta-regression (mixed model + 2,000 replicates, 670 observations, 4 coefficients), median",
            f"{seconds:.2f} s",
        ],
        ["refitting the mixed model in each replicate (5 timed, scaled)", f"{refits:.0f} s ({refits / seconds:.0f}x)"],
        [
            "log10 pretraining images: planted 0.1, unit-mean estimate [95% interval] / mixed model",
            f"{images.estimate:.3f} [{images.ci_low:.3f}, {images.ci_high:.3f}] / {images.estimate_mixed:.3f}",
        ],
        [
            "models, units, residual df, replicates used",
            f"{result.n_models}, {result.n_units}, {result.df_resid}, {result.replicates_used}",
        ],
    ]
    write_timed_record(args, __file__, TITLE, figures, load_before)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
