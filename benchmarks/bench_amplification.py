"""Speed of the prediction-level bias statistics on one core (threads pinned to 1 before numpy loads).

1. Both bias amplification measures (directional BiasAmp_{A->T} and Zhao et al.'s) with their bootstrap
   intervals, per measure and per term, for 5,000 images x 80 classes x 2 attributes x 2,000 replicates
   (:func:`biastransfer.stats.bias_amplifications`, inputs checked; target under 3 s), against a per-replicate
   loop that indexes the images of each resample and sums them (timed on 100 replicates and scaled).
2. Cross-fitted leakage (5 folds of logistic regression) with its 2,000-replicate bootstrap for 5,000
   images x 80 features, and leakage amplification at matched F1 (two attackers, paired bootstrap).

Medians of ``--repeats`` runs; the load average before and after says whether the CPU was shared.
Writes benchmarks/results/amplification.json (a record; benchmarks/render_benchmarks.py renders it).
Run: PYTHONPATH=workflow/scripts .venv/bin/python benchmarks/bench_amplification.py [--repeats 3]
"""

from __future__ import annotations

import os

from render_benchmarks import median_time, pin_threads, record_arguments, write_timed_record  # benchmarks/

pin_threads()

import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from biastransfer.stats import bias_amplifications  # noqa: E402
from biastransfer.stats.amplification import design, measure_terms, resample_indices  # noqa: E402
from biastransfer.stats.leakage import leakage, leakage_amplification  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "amplification.json"
TITLE = "Prediction-level bias: bias amplification and leakage with bootstrap intervals, one core"
N, CLASSES, REPLICATES = 5000, 80, 2000


def data(seed: int = 0):
    rng = np.random.default_rng(seed)
    A = np.eye(2)[rng.integers(0, 2, N)]
    rates = rng.uniform(0.02, 0.3, (2, CLASSES))
    T = (rng.random((N, CLASSES)) < A @ rates).astype(np.int8)
    P = (T ^ (rng.random((N, CLASSES)) < 0.05)).astype(np.int8)
    scores = np.clip(P + rng.normal(0, 0.3, P.shape), 0, 1)
    return A, T, P, scores


def loop_baseline(A, T, P, replicates: int) -> float:
    """Seconds for ``replicates`` resamples done one at a time: index the images, sum, both measures."""
    X = design(A.astype(float), T.astype(float), P[None].astype(float))
    indices = resample_indices(N, replicates, 0)
    observed = X.sum(axis=0, keepdims=True)
    present = T.sum(axis=0) > 0
    selected = {m: measure_terms(m, observed, 2, CLASSES, 1, present)[0] for m in ("directional", "zhao")}
    start = time.perf_counter()
    for row in indices:
        sums = X[row].sum(axis=0, keepdims=True)
        for m in ("directional", "zhao"):
            measure_terms(m, sums, 2, CLASSES, 1, present, selected[m])
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    args = record_arguments(__doc__.splitlines()[0], RESULTS, argv)
    from threadpoolctl import threadpool_limits

    load_before = os.getloadavg()[0]
    A, T, P, scores = data()
    with threadpool_limits(1):
        amp, result = median_time(lambda: bias_amplifications(A, T, P, replicates=REPLICATES, seed=0), args.repeats)
        loop = loop_baseline(A, T, P, 100) * REPLICATES / 100
        leak, leak_result = median_time(lambda: leakage(scores, A, replicates=REPLICATES, seed=0), args.repeats)
        amp_leak, amp_leak_result = median_time(
            lambda: leakage_amplification(A, T, P, model_features=scores, replicates=REPLICATES, seed=0),
            args.repeats,
        )
    d, z = result["directional"], result["zhao"]
    figures = [
        ["both bias amplification measures + intervals (5,000 x 80 x 2, 2,000 replicates), median", f"{amp:.2f} s"],
        ["the same replicates one resample at a time (100 timed, scaled)", f"{loop:.1f} s ({loop / amp:.0f}x)"],
        [
            "directional estimate [95% interval] on the benchmark's data",
            f"{d.estimate:.4f} [{d.ci_low:.4f}, {d.ci_high:.4f}]",
        ],
        ["Zhao estimate [95% interval]", f"{z.estimate:.4f} [{z.ci_low:.4f}, {z.ci_high:.4f}]"],
        ["leakage, 5-fold cross-fitted + 2,000-replicate bootstrap (5,000 x 80 scores), median", f"{leak:.2f} s"],
        ["leakage amplification at matched F1 (two attackers, paired bootstrap), median", f"{amp_leak:.2f} s"],
        [
            "model leakage (scores) / dataset leakage (matched labels), balanced accuracy",
            f"{amp_leak_result.model.estimate:.3f} / {amp_leak_result.dataset.estimate:.3f}",
        ],
    ]
    write_timed_record(args, __file__, TITLE, figures, load_before)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
