"""Speed of the statistics core against the reference implementations' approaches (same process).

1. All 16 intra-class and 120 inter-class similarities for 16 classes x 150 embeddings x 2048 dims:
   exact O(k d) path vs the authors' approach (50 split-half / random-subset iterations, each over a full
   cosine matrix of row-normalised embeddings).
2. iEAT with |X| = |Y| = |A| = |B| = 150, d = 2048, 100,000 permutations: vectorised Monte Carlo vs a
   per-permutation Python loop (the reference's approach: shuffle, sum s over the first |X|, compare).
   The loop is timed on fewer permutations and scaled linearly (it is linear in the permutation count).
3. class_similarities (16 x 150 x 2048, every value and jackknife SE, inputs checked) against its floor:
   the float32 rows converted to float64 once, their norms, every row divided by its norm, the 16 class
   sums of unit rows and one (2400 x 2048) x (2048 x 16) product. The floor has no input checks and
   builds no results; class_similarities must stay within 2x of it (median ratio of alternating calls).
4. 2,000 bootstrap replicates of the iEAT effect size (150 per set, d = 2048) against the same replicates
   computed naively: resampled embeddings and a full iEAT effect size per replicate (timed on fewer
   replicates and scaled); and the interval (BCa at the expanded level, with its jackknife) against the
   former one (BC from the same replicates, no jackknife).

Prints medians over repeats and the two ratios; writes benchmarks/results/bench_stats.json.
The authors' approach dominates the run time (about 1-2.5 min per repeat on 2 shared cores).
Run: .venv/bin/python benchmarks/bench_stats.py [--repeats 3] [--loop-permutations 10000]
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import statistics
from pathlib import Path

import numpy as np
from render_benchmarks import median_time  # benchmarks/

from biastransfer.atomic import write_text
from biastransfer.stats.bootstrap import IEATBlocks, bias_corrected_interval, ieat_ci, ieat_replicates
from biastransfer.stats.ieat import association_scores, ieat
from biastransfer.stats.similarity import class_similarities, inter_class_similarity, intra_class_similarity

RESULTS = Path(__file__).resolve().parent / "results" / "bench_stats.json"
N_CLASSES, N_ROWS, DIMS, AUTHOR_ITERATIONS = 16, 150, 2048, 50


def _cosine_matrix(P: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """Full cosine matrix, normalising inside each call as sklearn's cosine_similarity does."""
    P = P / np.linalg.norm(P, axis=1, keepdims=True)
    Q = Q / np.linalg.norm(Q, axis=1, keepdims=True)
    return P @ Q.T


def authors_similarities(classes: list[np.ndarray], rng: np.random.Generator) -> tuple[list, list]:
    """Authors' approach: intra = mean over 50 random split-halves of the cross-half cosine matrix mean;
    inter = mean over 50 draws of random row subsets (sizes uniform on [5, N-1]) of the cosine matrix mean."""
    intra = []
    for Z in classes:
        half = len(Z) // 2
        means = []
        for _ in range(AUTHOR_ITERATIONS):
            order = rng.permutation(len(Z))
            means.append(_cosine_matrix(Z[order[:half]], Z[order[half:]]).mean())
        intra.append(float(np.mean(means)))
    inter = []
    for P, Q in itertools.combinations(classes, 2):
        means = []
        for _ in range(AUTHOR_ITERATIONS):
            rows_p = rng.choice(len(P), size=rng.integers(5, len(P)), replace=False)
            rows_q = rng.choice(len(Q), size=rng.integers(5, len(Q)), replace=False)
            means.append(_cosine_matrix(P[rows_p], Q[rows_q]).mean())
        inter.append(float(np.mean(means)))
    return intra, inter


def exact_similarities_per_call(classes: list[np.ndarray]) -> tuple[list, list]:
    """One public call per class and per pair (each call checks and normalises its inputs)."""
    intra = [intra_class_similarity(Z).value for Z in classes]
    inter = [inter_class_similarity(P, Q).value for P, Q in itertools.combinations(classes, 2)]
    return intra, inter


def exact_similarities_table(classes: list[np.ndarray]) -> tuple[list, list]:
    """One class_similarities call (each class checked and normalised once)."""
    intra, inter = class_similarities(dict(enumerate(classes)))
    return [r.value for r in intra.values()], [r.value for r in inter.values()]


def loop_ieat_pvalue(X, Y, A, B, permutations: int, rng: np.random.Generator) -> float:
    """Reference-style p-value: one shuffle and one fancy-index sum per permutation, in Python."""
    s = association_scores(X, Y, A, B)
    n_x = len(X)
    observed = s[:n_x].sum()
    index = np.arange(s.size)
    hits = 1  # the observed partition (the +1 correction)
    for _ in range(permutations - 1):
        rng.shuffle(index)
        hits += s[index[:n_x]].sum() >= observed
    return hits / permutations


def similarity_floor(classes: list[np.ndarray]) -> np.ndarray:
    """The least any exact table must do: rows to float64, normalise each, sum per class, one product.

    The class sums use a reshape (equal class sizes): np.add.reduceat along rows is several times
    slower than the whole rest of the floor and would flatter the ratio."""
    rows = np.concatenate(classes).astype(np.float64)
    units = rows / np.sqrt(np.einsum("ij,ij->i", rows, rows))[:, None]
    sums = units.reshape(len(classes), -1, units.shape[1]).sum(axis=1)
    return units @ sums.T


def naive_bootstrap(X, Y, A, B, replicates: int, rng: np.random.Generator) -> np.ndarray:
    """One resample of the embeddings and one effect size (association_scores) per replicate."""
    out = np.empty(replicates)
    for r in range(replicates):
        X_, Y_, A_, B_ = (Z[rng.integers(0, len(Z), len(Z))] for Z in (X, Y, A, B))
        s = association_scores(X_, Y_, A_, B_)
        out[r] = (s[: len(X_)].mean() - s[len(X_) :].mean()) / s.std(ddof=1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--loop-permutations", type=int, default=10_000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)

    centres = rng.standard_normal((N_CLASSES, DIMS))
    classes = [(rng.standard_normal((N_ROWS, DIMS)) + 0.5 * c).astype(np.float32) for c in centres]
    t_exact, (intra, inter) = median_time(lambda: exact_similarities_table(classes), args.repeats)
    t_calls, per_call = median_time(lambda: exact_similarities_per_call(classes), args.repeats)
    assert np.allclose(
        np.concatenate(per_call), np.concatenate((intra, inter)), rtol=1e-12, atol=0
    )  # equal to rounding
    t_authors, (intra_a, inter_a) = median_time(lambda: authors_similarities(classes, rng), args.repeats)
    deviation = max(np.max(np.abs(np.subtract(intra, intra_a))), np.max(np.abs(np.subtract(inter, inter_a))))
    print(f"similarities (16 intra + 120 inter, 16 x {N_ROWS} x {DIMS}):")
    print(f"  exact, class_similarities     median {t_exact:8.3f} s")
    print(f"  exact, 136 single calls       median {t_calls:8.3f} s")
    print(f"  authors' approach             median {t_authors:8.3f} s  (50 iterations over full cosine matrices)")
    print(f"  speed-up (class_similarities) {t_authors / t_exact:8.1f} x")
    print(f"  speed-up (single calls)       {t_authors / t_calls:8.1f} x")
    print(f"  max |authors' - exact| = {deviation:.2e} (the authors' Monte Carlo noise; exact has none)")

    X, Y, A, B = (rng.standard_normal((N_ROWS, DIMS)).astype(np.float32) for _ in range(4))
    A = A + 0.05 * X.mean(axis=0)
    permutations = 100_000
    t_vec, result = median_time(lambda: ieat(X, Y, A, B, permutations=permutations, seed=1, bootstrap=0), args.repeats)
    t_loop_part, loop_p = median_time(lambda: loop_ieat_pvalue(X, Y, A, B, args.loop_permutations, rng), args.repeats)
    t_loop = t_loop_part * permutations / args.loop_permutations
    print(f"iEAT (150/150/150/150, d={DIMS}, {permutations} permutations):")
    print(f"  vectorised           median {t_vec:8.3f} s  (p = {result.pvalue:.5f} +- {result.pvalue_se:.5f})")
    print(
        f"  per-permutation loop median {t_loop:8.3f} s  (timed on {args.loop_permutations} permutations, "
        f"scaled x{permutations / args.loop_permutations:g}; p = {loop_p:.4f})"
    )
    print(f"  speed-up             {t_loop / t_vec:8.1f} x")

    # alternating single calls, so that load from other processes hits both alike; median of the pair ratios
    pairs = [
        (
            median_time(lambda: class_similarities(dict(enumerate(classes))), 1)[0],
            median_time(lambda: similarity_floor(classes), 1)[0],
        )
        for _ in range(max(args.repeats, 5) * 3)
    ]
    t_table, t_floor = (statistics.median(p[k] for p in pairs) for k in (0, 1))
    floor_ratio = statistics.median(a / b for a, b in pairs)
    print(f"class_similarities (16 x {N_ROWS} x {DIMS}, 16 intra + 120 inter with SEs):")
    print(f"  class_similarities   median {t_table * 1e3:8.1f} ms")
    print(
        f"  floor                median {t_floor * 1e3:8.1f} ms  (float64, unit rows, class sums, one product; no checks)"
    )
    print(f"  ratio to the floor   {floor_ratio:8.2f} x  (median of {len(pairs)} alternating pairs)")

    replicates, naive_replicates = 2000, 100
    t_boot, ci = median_time(lambda: ieat_ci(X, Y, A, B, replicates=replicates, seed=1), args.repeats)
    t_naive_part, _ = median_time(lambda: naive_bootstrap(X, Y, A, B, naive_replicates, rng), args.repeats)
    t_naive = t_naive_part * replicates / naive_replicates
    print(f"iEAT bootstrap interval (150/150/150/150, d={DIMS}, {replicates} replicates):")
    print(
        f"  count vectors over cosine blocks median {t_boot:8.3f} s  (d = {ci.estimate:.3f}, "
        f"95% CI {ci.ci_low:.3f} to {ci.ci_high:.3f})"
    )
    print(
        f"  resampled embeddings per replicate median {t_naive:8.3f} s  (timed on {naive_replicates}, "
        f"scaled x{replicates / naive_replicates:g})"
    )
    print(f"  speed-up             {t_naive / t_boot:8.1f} x")

    def bc_interval():
        blocks = IEATBlocks(X, Y, A, B)
        return bias_corrected_interval(ieat_replicates([blocks], replicates, 1)[0], blocks.observed(), 0.95)

    t_bc, _ = median_time(bc_interval, args.repeats)
    print(f"  former BC interval (same replicates, no jackknife) median {t_bc:8.3f} s")
    print(f"  BCa / BC             {t_boot / t_bc:8.2f} x")

    report = {
        "similarities": {
            "exact_table_s": t_exact,
            "exact_single_calls_s": t_calls,
            "authors_s": t_authors,
            "ratio": t_authors / t_exact,
            "ratio_single_calls": t_authors / t_calls,
            "max_abs_deviation": float(deviation),
        },
        "ieat": {
            "vectorised_s": t_vec,
            "loop_s_scaled": t_loop,
            "loop_permutations_timed": args.loop_permutations,
            "ratio": t_loop / t_vec,
            "pvalue_vectorised": result.pvalue,
            "pvalue_loop": loop_p,
        },
        "class_similarities": {"table_s": t_table, "floor_s": t_floor, "ratio_to_floor": floor_ratio},
        "ieat_bootstrap": {
            "replicates": replicates,
            "count_vectors_s": t_boot,
            "naive_s_scaled": t_naive,
            "naive_replicates_timed": naive_replicates,
            "ratio": t_naive / t_boot,
            "bc_interval_s": t_bc,
            "bca_over_bc": t_boot / t_bc,
        },
        "repeats": args.repeats,
        "numpy": np.__version__,
        "machine": platform.machine(),
        "python": platform.python_version(),
    }
    write_text(RESULTS, json.dumps(report, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(Path.cwd()) if RESULTS.is_relative_to(Path.cwd()) else RESULTS}")


if __name__ == "__main__":
    main()
