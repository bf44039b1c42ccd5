"""Speed of linear CKA with its jackknife interval over images on one core (threads pinned to 1 before numpy loads).

1. One network against the pretrained one: 150 images x 2,048 dims (target under 1 s), and 1,000 images.
2. A BTS job's share: the pretrained network against 5 finetuned seeds and their mean (150 x 2,048).
3. The closed-form leave-one-out values against n explicit CKAs of n - 1 images (150 x 2,048).

Medians of ``--repeats`` runs; the load average before and after says whether the CPU was shared.
Writes benchmarks/results/cka.json (a record; benchmarks/render_benchmarks.py renders it).
Run: PYTHONPATH=workflow/scripts .venv/bin/python benchmarks/bench_cka.py [--repeats 5]
"""

from __future__ import annotations

import os

from render_benchmarks import median_time, pin_threads, record_arguments, write_timed_record  # benchmarks/

pin_threads()

import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from biastransfer.stats.cka import linear_cka, paired_cka  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "cka.json"
TITLE = "Linear CKA with its jackknife interval over images, one core"
DIMS = 2048


def embeddings(n: int, networks: int = 1, seed: int = 0):
    """A pretrained embedding (decaying spectrum, as real ones) and ``networks`` perturbed copies of it."""
    rng = np.random.default_rng(seed)
    scale = 1 / np.arange(1, DIMS + 1) ** 0.4
    x = rng.standard_normal((n, DIMS)) * scale
    return x, [x + 0.5 * rng.standard_normal((n, DIMS)) * scale for _ in range(networks)]


def explicit_left_out(x, y) -> float:
    """Seconds for the n leave-one-out CKAs computed one at a time from the n - 1 remaining rows."""
    start = time.perf_counter()
    for i in range(len(x)):
        keep = np.arange(len(x)) != i
        a, b = x[keep] - x[keep].mean(axis=0), y[keep] - y[keep].mean(axis=0)
        np.sum((b.T @ a) ** 2) / (np.linalg.norm(a.T @ a) * np.linalg.norm(b.T @ b))
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    args = record_arguments(__doc__.splitlines()[0], RESULTS, argv)
    from threadpoolctl import threadpool_limits

    load_before = os.getloadavg()[0]
    x, (y,) = embeddings(150)
    big_x, (big_y,) = embeddings(1000, seed=1)
    five_x, five = embeddings(150, 5, seed=2)
    with threadpool_limits(1):
        one, result = median_time(lambda: linear_cka(x, y), args.repeats)
        big, _ = median_time(lambda: linear_cka(big_x, big_y), args.repeats)
        paired, (_, mean) = median_time(
            lambda: paired_cka(five_x, {f"seed{i}": e for i, e in enumerate(five)}), args.repeats
        )
        loop = explicit_left_out(x, y)
    figures = [
        ["CKA + 95% jackknife interval, 150 images x 2,048 dims, median", f"{one * 1000:.0f} ms"],
        ["the same, 1,000 images x 2,048 dims, median", f"{big:.2f} s"],
        ["pretrained against 5 seeds and their mean, 150 x 2,048, median", f"{paired * 1000:.0f} ms"],
        ["the 150 leave-one-out CKAs one at a time in feature space", f"{loop:.1f} s ({loop / one:.0f}x)"],
        [
            "estimate [95% interval] on the benchmark's data (one network / mean of 5)",
            f"{result.estimate:.3f} [{result.ci_low:.3f}, {result.ci_high:.3f}] / "
            f"{mean.estimate:.3f} [{mean.ci_low:.3f}, {mean.ci_high:.3f}]",
        ],
    ]
    write_timed_record(args, __file__, TITLE, figures, load_before)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
