"""Bootstrap of intra- and inter-class similarities over images, paired across networks.

Each replicate draws the images of every class with replacement, once, and evaluates every listed
similarity in every network (stage) on the same resampled images. A resample is a count vector ``w``
per class; with unit rows ``u_i`` (docs/statistics.md):

* intra: mean cosine over pairs of *different* images of the resample,
  ``(w' G w - sum_i w_i^2) / (k^2 - sum_i w_i^2)`` with the Gram matrix ``G = U U'``;
* inter: ``w_p' G_pq w_q / (k_p k_q)``.

With every ``w_i = 1`` these are the exact values of :mod:`biastransfer.stats.similarity`. From the
replicates follow a percentile interval for Spearman's rho between two networks' similarities (the BTS),
recomputing both rankings on the same images, and paired intervals for each similarity's change.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from biastransfer.stats._validation import as_embedding_sets, check_positive_int, check_seed
from biastransfer.stats.bootstrap import (
    BOOTSTRAP,
    BootstrapResult,
    ChangeResult,
    change_result,
    check_level,
    percentile_interval,
    resample_counts,
)
from biastransfer.stats.floors import check_replicates, too_few_to_resample


@dataclass(frozen=True)
class SimilarityReplicates:
    """``observed[stage]`` (one value per key) and ``replicates[stage]`` (replicates x keys).

    ``keys`` are the intra classes, then the inter pairs, in the order asked for; every stage's
    replicate r uses the same resampled images.
    """

    keys: tuple
    observed: dict
    replicates: dict
    seed: int
    sizes: dict  # images per class

    def too_few(self, keys: Sequence, level: float) -> bool:
        """Whether a class of ``keys`` has too few images for a ``level`` interval (floors.min_resampled_size)."""
        return too_few_to_resample([self.sizes[c] for k in keys for c in (k if isinstance(k, tuple) else (k,))], level)

    def column(self, key) -> int:
        return self.keys.index(key)


def similarity_replicates(
    stages: Mapping[Hashable, Mapping[Hashable, object]],
    intra: Sequence[Hashable],
    inter: Sequence[tuple[Hashable, Hashable]],
    replicates: int = BOOTSTRAP,
    seed: int | None = 0,
) -> SimilarityReplicates:
    """Observed and bootstrap values of the listed similarities in every stage.

    ``stages`` maps a stage (network) to ``{class: embeddings}``; each class must have the same number
    of rows in every stage (the same images, in the same order).
    """
    replicates, seed = check_positive_int(replicates, "replicates"), check_seed(seed)
    if not stages:
        raise ValueError("stages is empty")
    classes = list(dict.fromkeys([*intra, *(c for pair in inter for c in pair)]))
    units = {stage: _units(groups, classes, stage) for stage, groups in stages.items()}
    sizes = {c: len(u) for c, u in next(iter(units.values())).items()}
    for stage, groups in units.items():
        differ = [c for c in classes if len(groups[c]) != sizes[c]]
        if differ:
            raise ValueError(f"stage {stage!r}: classes {differ} have other row counts than in the first stage")
    rng = np.random.default_rng(seed)
    counts = {c: resample_counts(sizes[c], replicates, rng) for c in classes}
    ones = {c: np.ones((1, sizes[c])) for c in classes}
    keys = (*intra, *(tuple(pair) for pair in inter))
    observed, values = {}, {}
    for stage, groups in units.items():
        observed[stage] = np.array([_value(groups, key, ones)[0] for key in keys])
        values[stage] = np.column_stack([_value(groups, key, counts) for key in keys])
    return SimilarityReplicates(keys, observed, values, seed, sizes)


def rank_correlation_ci(
    reps: SimilarityReplicates, before: Hashable, after: Sequence[Hashable], keys: Sequence, level: float = 0.95
) -> BootstrapResult:
    """Percentile interval of Spearman's rho between ``before``'s values and the mean of the ``after``
    stages' values over ``keys``, both recomputed in every replicate."""
    level = check_level(level)
    check_replicates(len(reps.replicates[before]), level)
    cols = [reps.column(k) for k in keys]
    x = reps.replicates[before][:, cols]
    y = np.mean([reps.replicates[a][:, cols] for a in after], axis=0)
    rhos = _spearman_rows(x, y)
    observed = float(
        _spearman_rows(
            reps.observed[before][None, cols], np.mean([reps.observed[a][cols] for a in after], axis=0)[None]
        )[0]
    )
    if reps.too_few(keys, level):
        return BootstrapResult(observed, math.nan, math.nan, math.nan, level, rhos.size, reps.seed)
    low, high = percentile_interval(rhos, level)
    finite = rhos[np.isfinite(rhos)]
    se = float(finite.std(ddof=1)) if finite.size >= 2 else float("nan")
    return BootstrapResult(observed, low, high, se, level, rhos.size, reps.seed)


def similarity_changes(
    reps: SimilarityReplicates, before: Hashable, after: Hashable, level: float = 0.95
) -> dict[Hashable, ChangeResult]:
    """``after - before`` of every similarity, with paired percentile intervals and bootstrap p-values."""
    level = check_level(level)
    check_replicates(len(reps.replicates[before]), level)
    deltas = reps.replicates[after] - reps.replicates[before]
    changes = {}
    for i, key in enumerate(reps.keys):
        result = change_result(
            float(reps.observed[before][i]), float(reps.observed[after][i]), deltas[:, i], level, reps.seed
        )
        if reps.too_few([key], level):
            result = replace(result, se=math.nan, ci_low=math.nan, ci_high=math.nan, pvalue=math.nan)
        changes[key] = result
    return changes


def _units(groups: Mapping, classes: list, stage) -> dict[Hashable, np.ndarray]:
    missing = [c for c in classes if c not in groups]
    if missing:
        raise ValueError(f"stage {stage!r} has no embeddings of classes {missing}")
    checked = as_embedding_sets(
        {c: groups[c] for c in classes}, name=lambda c: f"stage {stage!r} class {c!r}", min_rows=2
    )
    return {c: rows * inv[:, None] for c, (rows, inv) in checked.items()}


def _value(units: Mapping, key, counts: Mapping) -> np.ndarray:
    """The similarity ``key`` (a class: intra; a pair: inter) for every row of the count matrices."""
    if isinstance(key, tuple):
        p, q = key
        return _bilinear(counts[p], units[p], counts[q], units[q]) / (units[p].shape[0] * units[q].shape[0])
    w, k = counts[key], units[key].shape[0]
    own = np.einsum("ij,ij->i", w, w)  # pairs of an image with itself (cosine 1), left out
    pairs = k * k - own  # zero only when a resample draws one image k times
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(pairs > 0, (_bilinear(w, units[key], w, units[key]) - own) / pairs, np.nan)


def _bilinear(wp: np.ndarray, up: np.ndarray, wq: np.ndarray, uq: np.ndarray) -> np.ndarray:
    """``wp[r] (Up Uq') wq[r]`` for every replicate r, through the Gram matrix or the weighted sums,
    whichever needs fewer operations."""
    kp, kq, dims = up.shape[0], uq.shape[0], up.shape[1]
    if kp * kq * (1 + len(wp)) <= len(wp) * (kp + kq) * dims:
        return np.einsum("ij,ij->i", wp @ (up @ uq.T), wq)
    return np.einsum("ij,ij->i", wp @ up, wq @ uq)


def _spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho of x[r] against y[r] for every row r (NaN where either row is all tied)."""
    from scipy import stats  # here, not at the top: the similarity jobs import this module without ranking

    rx = stats.rankdata(x, axis=1)
    ry = stats.rankdata(y, axis=1)
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    scale = np.sqrt(np.einsum("ij,ij->i", rx, rx) * np.einsum("ij,ij->i", ry, ry))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(scale > 0, np.einsum("ij,ij->i", rx, ry) / scale, np.nan)
