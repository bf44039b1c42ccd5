"""Intra- and inter-class cosine similarity of row-wise embeddings (paper §4.1-4.2, Algorithms 1-2).

``method="exact"`` returns the expectation of the paper's sampling algorithms in O(k d), without the
k x k cosine matrix:

* intra-class: mean cosine over all unordered pairs i != j of a class,
  ``(||sum_i u_i||^2 - k) / (k (k - 1))`` with ``u_i`` the unit-normalised rows;
* inter-class: mean cosine over all cross pairs, ``mean(U_p) . mean(U_q)``.

Its ``se`` is the delete-one jackknife standard error of that U-statistic (one-sample for intra,
two-sample for inter), also computed in O(k d). ``method="sampled"`` runs Algorithm 1 / 2 as the
paper writes them, seeded; its ``se`` is the Monte Carlo standard error of the mean of the draws.
See docs/statistics.md.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from biastransfer.stats._validation import (
    Result,
    as_embedding_sets,
    as_embeddings,
    check_choice,
    check_positive_int,
    check_seed,
)

METHODS = ("exact", "sampled")
_CHUNK = 1024  # sampled iterations per vectorised block; fixed, so a seed always gives the same draws


@dataclass(frozen=True)
class SimilarityResult(Result):
    """Mean cosine similarity within a class (``kind="intra"``) or between two classes (``"inter"``).

    ``n`` is the number of pairs averaged (exact) or of sampling iterations (sampled); ``size_q`` is
    ``None`` for intra-class results; ``iterations`` and ``seed`` are ``None`` for exact results.
    """

    value: float
    se: float
    n: int
    method: str
    kind: str
    size_p: int
    size_q: int | None
    iterations: int | None
    seed: int | None


def intra_class_similarity(
    Z, method: str = "exact", iterations: int = 10_000, seed: int | None = 0
) -> SimilarityResult:
    """Mean cosine similarity between distinct embeddings of one class (rows of ``Z``, k >= 2)."""
    check_choice(method, "method", METHODS)
    prepared = _Prepared(*as_embeddings(Z, "Z", min_rows=2))
    if method == "exact":
        return _intra_exact(prepared)
    iterations = check_positive_int(iterations, "iterations")
    seed = check_seed(seed)
    sims = _algorithm1(prepared.units(), iterations, np.random.default_rng(seed))
    return _sampled_result(sims, "intra", prepared.k, None, seed)


def inter_class_similarity(
    Zp, Zq, method: str = "exact", iterations: int = 10_000, seed: int | None = 0
) -> SimilarityResult:
    """Mean cosine similarity between the embeddings of two classes (rows of ``Zp`` and ``Zq``)."""
    check_choice(method, "method", METHODS)
    p, q = (_Prepared(*checked) for checked in as_embedding_sets({"Zp": Zp, "Zq": Zq}).values())
    if method == "exact":
        return _inter_exact(p, q)
    iterations = check_positive_int(iterations, "iterations")
    seed = check_seed(seed)
    sims = _algorithm2(p.units(), q.units(), iterations, np.random.default_rng(seed))
    return _sampled_result(sims, "inter", p.k, q.k, seed)


def class_similarities(
    classes: Mapping[Hashable, object], pairs: Iterable[tuple[Hashable, Hashable]] | None = None
) -> tuple[dict[Hashable, SimilarityResult], dict[tuple[Hashable, Hashable], SimilarityResult]]:
    """Exact intra-class similarity of every class and inter-class similarity of every pair.

    ``classes`` maps a class name to its embeddings (k >= 2 rows each); ``pairs`` defaults to all
    unordered pairs in the mapping's order. Every row is checked and its norm taken once, and one
    product of each class's rows with all class sums of unit rows gives every value and jackknife SE,
    so a whole table costs little more than reading the embeddings. Results equal the single-call functions' to rounding.
    """
    if not classes:
        raise ValueError("classes is empty")
    checked = as_embedding_sets(classes, name=lambda key: f"classes[{key!r}]", min_rows=2)
    pairs = list(itertools.combinations(checked, 2) if pairs is None else pairs)
    unknown = sorted({repr(k) for pair in pairs for k in pair if k not in checked})
    if unknown:
        raise ValueError(f"pairs name classes that are not in classes: {', '.join(unknown)}")
    # The class sums of unit rows t_c = inv_c @ rows_c (no unit-row copy), then one product of all rows
    # with all sums, scaled by the rows' inverse norms: dots[i, c] = u_i . t_c. One large product, not
    # one per class: many small products are slow in a multi-threaded BLAS on a busy machine.
    keys = list(checked)
    sums = np.stack([inv @ rows for rows, inv in checked.values()])
    sizes = np.array([len(rows) for rows, _ in checked.values()])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    dots = np.concatenate([rows for rows, _ in checked.values()]) @ sums.T
    dots *= np.concatenate([inv for _, inv in checked.values()])[:, None]
    column = {key: i for i, key in enumerate(keys)}

    def block(row_class, col_class) -> np.ndarray:
        i, j = column[row_class], column[col_class]
        return dots[starts[i] : starts[i] + sizes[i], j]

    intra = {key: _intra_from_dots(block(key, key)) for key in keys}
    inter = {(a, b): _inter_from_dots(block(a, b), block(b, a)) for a, b in pairs}
    return intra, inter


class _Prepared:
    """A checked float64 embedding array with 1 / row norms and the (lazily computed) sum of unit rows."""

    def __init__(self, rows: np.ndarray, inv_norm: np.ndarray):
        self.rows, self.inv_norm, self.k = rows, inv_norm, rows.shape[0]
        self._unit_sum = None

    def unit_sum(self) -> np.ndarray:
        if self._unit_sum is None:
            self._unit_sum = self.inv_norm @ self.rows
        return self._unit_sum

    def dots(self, vector: np.ndarray) -> np.ndarray:
        """u_i . vector for every unit row u_i."""
        return (self.rows @ vector) * self.inv_norm

    def units(self) -> np.ndarray:
        return self.rows * self.inv_norm[:, None]


def _intra_exact(p: _Prepared) -> SimilarityResult:
    return _intra_from_dots(p.dots(p.unit_sum()))


def _inter_exact(p: _Prepared, q: _Prepared) -> SimilarityResult:
    return _inter_from_dots(p.dots(q.unit_sum()), q.dots(p.unit_sum()))


def _intra_from_dots(g: np.ndarray) -> SimilarityResult:
    """Intra-class result from ``g_i = u_i . t`` (t the sum of the class's unit rows; sum g = |t|^2)."""
    k = g.size
    value = (g.sum() - k) / (k * (k - 1))
    if k >= 3:
        # Leave-one-out estimates differ only through g_i (see docs/statistics.md).
        var = (k - 1) / k * 4.0 / ((k - 1) ** 2 * (k - 2) ** 2) * np.sum((g - g.mean()) ** 2)
        se = float(np.sqrt(var))
    else:
        se = float("nan")
    return SimilarityResult(float(value), se, k * (k - 1) // 2, "exact", "intra", k, None, None, None)


def _inter_from_dots(hp: np.ndarray, hq: np.ndarray) -> SimilarityResult:
    """Inter-class result from ``hp_i = u_i . t_q`` (rows of p) and ``hq_j = u_j . t_p`` (rows of q)."""
    kp, kq = hp.size, hq.size
    value = hp.sum() / (kp * kq)
    if kp >= 2 and kq >= 2:
        # Two-sample jackknife: delete one row of Zp (then of Zq) and add the two variances.
        var_p = np.sum((hp - hp.mean()) ** 2) / (kp * (kp - 1) * kq**2)
        var_q = np.sum((hq - hq.mean()) ** 2) / (kq * (kq - 1) * kp**2)
        se = float(np.sqrt(var_p + var_q))
    else:
        se = float("nan")
    return SimilarityResult(float(value), se, kp * kq, "exact", "inter", kp, kq, None, None)


def _algorithm1(U: np.ndarray, iterations: int, rng: np.random.Generator) -> np.ndarray:
    """Paper's Algorithm 1: permute, split at k//2, draw one row from each half, take the cosine."""
    k = U.shape[0]
    half = k // 2
    order = np.broadcast_to(np.arange(k), (min(_CHUNK, iterations), k))
    sims = np.empty(iterations)
    for start in range(0, iterations, _CHUNK):
        count = min(_CHUNK, iterations - start)
        permuted = rng.permuted(order[:count], axis=1)
        rows = np.arange(count)
        first = permuted[rows, rng.integers(0, half, size=count)]
        second = permuted[rows, half + rng.integers(0, k - half, size=count)]
        sims[start : start + count] = np.einsum("ij,ij->i", U[first], U[second])
    return sims


def _algorithm2(Up: np.ndarray, Uq: np.ndarray, iterations: int, rng: np.random.Generator) -> np.ndarray:
    """Paper's Algorithm 2: draw one row of each class, take the cosine; repeat."""
    sims = np.empty(iterations)
    for start in range(0, iterations, _CHUNK):
        count = min(_CHUNK, iterations - start)
        first = rng.integers(0, Up.shape[0], size=count)
        second = rng.integers(0, Uq.shape[0], size=count)
        sims[start : start + count] = np.einsum("ij,ij->i", Up[first], Uq[second])
    return sims


def _sampled_result(sims: np.ndarray, kind: str, size_p: int, size_q: int | None, seed: int) -> SimilarityResult:
    m = sims.size
    se = float(sims.std(ddof=1) / np.sqrt(m)) if m >= 2 else float("nan")
    return SimilarityResult(float(sims.mean()), se, m, "sampled", kind, size_p, size_q, m, seed)
