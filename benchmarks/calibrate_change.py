"""Calibration of the paired change test of the iEAT effect size (``ieat_change``), on synthetic data.

Each dataset holds the same images (X, Y, A, B; ``--n`` rows each) embedded by two networks: a shared
content part in ``--dims`` dimensions (X near e1, Y near e2, A near 1.5 e1, B near 1.5 e2, unit
noise) and ``--noise`` further dimensions of independent noise per network, so the two networks see
the same images differently but, without a shift, hold the same association. ``--shift`` moves X toward
B in the second network by that many SDs (a planted change).

For each setting it prints the sampling SD of ``delta_d`` over the datasets, the mean standard error
of the corrected test (``ieat_change``) and the SD of the plain paired bootstrap (targets and
attributes resampled together), and the share of datasets each rejects at 0.05 (the plain one by its
percentile p-value). Run:
    .venv/bin/python benchmarks/calibrate_change.py [--datasets 1000] [--replicates 400]
"""

from __future__ import annotations

import argparse

import numpy as np

from biastransfer.stats.bootstrap import IEATBlocks, bootstrap_pvalue, ieat_change, ieat_replicates

SETTINGS = [  # (rows per set, noise dims, shift)
    (25, 3, 0.0),
    (25, 10, 0.0),
    (50, 3, 0.0),
    (10, 3, 0.0),
    (25, 3, 1.0),
]


def networks(rng: np.random.Generator, n: int, dims: int, noise: int, shift: float) -> tuple[list, list]:
    """One dataset: the four sets as the first and the second network embed them."""
    e = np.eye(dims)
    centres = {"X": 0.6 * e[0], "Y": 0.6 * e[1], "A": 1.5 * e[0], "B": 1.5 * e[1]}
    first, second = [], []
    for name, centre in centres.items():
        content = centre + rng.normal(size=(n, dims))
        moved = content + (shift * e[1] if name == "X" else 0.0)
        first.append(np.hstack([content, rng.normal(size=(n, noise))]))
        second.append(np.hstack([moved, rng.normal(size=(n, noise))]))
    return first, second


def calibrate(n: int, noise: int, shift: float, datasets: int, replicates: int, dims: int) -> dict:
    deltas, ses, plain_sds, corrected, plain = [], [], [], 0, 0
    for i in range(datasets):
        first, second = networks(np.random.default_rng(i), n, dims, noise, shift)
        res = ieat_change(first, second, replicates=replicates, seed=i)
        reps = ieat_replicates([IEATBlocks(*first), IEATBlocks(*second)], replicates, i)
        deltas.append(res.delta)
        ses.append(res.se)
        plain_sds.append(np.std(reps[1] - reps[0], ddof=1))
        corrected += res.pvalue < 0.05
        plain += bootstrap_pvalue(reps[1] - reps[0]) < 0.05
    return {
        "sd": float(np.std(deltas, ddof=1)),
        "se": float(np.mean(ses)),
        "plain_sd": float(np.mean(plain_sds)),
        "corrected": corrected / datasets,
        "plain": plain / datasets,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", type=int, default=1000)
    parser.add_argument("--replicates", type=int, default=400)
    parser.add_argument("--dims", type=int, default=6)
    args = parser.parse_args()
    print(f"{args.datasets} datasets per setting, {args.replicates} bootstrap replicates, {args.dims} shared dims")
    print(" n  noise  shift | SD of delta  mean SE (corrected)  SD (plain) | rejects at 0.05: corrected  plain")
    for n, noise, shift in SETTINGS:
        r = calibrate(n, noise, shift, args.datasets, args.replicates, args.dims)
        print(
            f"{n:3d} {noise:5d} {shift:6.1f} | {r['sd']:11.3f} {r['se']:20.3f} {r['plain_sd']:11.3f} | "
            f"{r['corrected']:26.3f} {r['plain']:6.3f}"
        )


if __name__ == "__main__":
    main()
