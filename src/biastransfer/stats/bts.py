"""Bias Transfer Score (paper §4.3): Spearman's rho between similarities before and after finetuning.

The two mappings go from a key (a class name, or a pair of classes) to a similarity, and are aligned
by key. The default p-value is scipy.stats.spearmanr's (Student t with n - 2 degrees of freedom),
which reproduces every (rho, p) pair of the paper's Tables 3 and 4; ``pvalue="permutation"`` gives a
permutation p-value (exact over all n! orderings when there are at most ``permutations`` of them).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass

import numpy as np

from biastransfer.stats._validation import Result, check_choice, check_positive_int, check_seed
from biastransfer.stats.bootstrap import check_level, percentile_interval

PVALUE_METHODS = ("asymptotic", "permutation")
ALTERNATIVES = ("two-sided", "greater", "less")


@dataclass(frozen=True)
class BTSResult(Result):
    """Spearman's rho (``statistic``) over ``n`` keys, in the order of ``keys`` (that of ``before``).

    ``permutations`` is the size of the permutation null distribution (n! when exact) and ``seed``
    the seed of its random draws; both are ``None`` for the asymptotic p-value (and ``seed`` when exact).
    ``pvalue_floor`` is the smallest p the permutation method can give (one-sided ``1 / n!`` exact or
    ``1 / permutations`` Monte Carlo, twice that two-sided; 0 for the asymptotic one): a p at the
    floor is a bound.
    """

    statistic: float
    pvalue: float
    n: int
    keys: tuple
    pvalue_method: str
    alternative: str
    permutations: int | None
    seed: int | None
    pvalue_floor: float = 0.0


def bias_transfer_score(
    before: Mapping[Hashable, float],
    after: Mapping[Hashable, float],
    pvalue: str = "asymptotic",
    alternative: str = "two-sided",
    permutations: int = 100_000,
    seed: int | None = 0,
) -> BTSResult:
    """Spearman's rho between ``before[key]`` and ``after[key]`` over their common keys.

    Values are numbers or objects with a ``.value`` (e.g. :class:`~biastransfer.stats.similarity.SimilarityResult`).
    Raises ValueError if the key sets differ (naming the keys), if fewer than 3 keys are given, if a
    value is not finite, or if either side has all values tied (rho is undefined).
    """
    check_choice(pvalue, "pvalue", PVALUE_METHODS)
    check_choice(alternative, "alternative", ALTERNATIVES)
    keys = tuple(before)
    only_before = [k for k in keys if k not in after]
    only_after = [k for k in after if k not in before]
    if only_before or only_after:
        raise ValueError(
            f"before and after have different keys: only in before: {only_before}; only in after: {only_after}"
        )
    if len(keys) < 3:
        raise ValueError(f"the Bias Transfer Score needs at least 3 keys, got {len(keys)}: {list(keys)}")
    x = _values(before, keys, "before")
    y = _values(after, keys, "after")
    from scipy import stats  # here, not at the top: the similarity and iEAT jobs import this module too

    if pvalue == "asymptotic":
        res = stats.spearmanr(x, y, alternative=alternative)
        return BTSResult(float(res.statistic), float(res.pvalue), len(keys), keys, pvalue, alternative, None, None)

    permutations = check_positive_int(permutations, "permutations")
    seed = check_seed(seed)
    rank_y = stats.rankdata(y)
    centred_y = rank_y - rank_y.mean()
    scale_y = math.sqrt(centred_y @ centred_y)

    def rho(ranks_x, axis=-1):
        centred = ranks_x - ranks_x.mean(axis=axis, keepdims=True)
        scale = np.sqrt(np.sum(centred**2, axis=axis))
        return np.sum(centred * centred_y, axis=axis) / (scale * scale_y)

    n_orderings = math.factorial(len(keys))
    exact = n_orderings <= permutations
    if not exact and permutations < 2:
        raise ValueError("permutations must be at least 2 for a Monte Carlo permutation p-value")
    # Monte Carlo: permutations - 1 random orderings plus the observed one, p = (1 + hits) / permutations.
    res = stats.permutation_test(
        (stats.rankdata(x),),
        rho,
        permutation_type="pairings",
        vectorized=True,
        n_resamples=np.inf if exact else permutations - 1,
        alternative=alternative,
        rng=np.random.default_rng(seed),
    )
    # two-sided: twice the smaller tail, which holds at least the observed ordering (Monte Carlo: the +1)
    floor = (2 if alternative == "two-sided" else 1) / (n_orderings if exact else permutations)
    return BTSResult(
        float(res.statistic),
        float(res.pvalue),
        len(keys),
        keys,
        pvalue,
        alternative,
        n_orderings if exact else permutations,
        None if exact else seed,
        floor,
    )


def _values(mapping: Mapping, keys: tuple, name: str) -> np.ndarray:
    values = np.empty(len(keys))
    for i, key in enumerate(keys):
        value = getattr(mapping[key], "value", mapping[key])
        try:
            values[i] = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{name}[{key!r}] is not a number: {value!r}") from None
        if not np.isfinite(values[i]):
            raise ValueError(f"{name}[{key!r}] is not finite: {values[i]}")
    if np.all(values == values[0]):
        raise ValueError(f"all values in {name} are tied; Spearman's rho is undefined")
    return values


RETAINED, TARGET_DATA, UNDECIDED = "retained", "target data alone", "undecided"


@dataclass(frozen=True)
class RetentionResult(Result):
    """``difference = rho(pretrained, finetuned) - rho(scratch, finetuned)`` over ``n`` keys, with a paired
    percentile interval from ``replicates`` resamples of the keys (both rhos on the same resampled keys) and
    its ``verdict``: ``"retained"`` (interval above 0), ``"target data alone"`` (below 0) or ``"undecided"``."""

    difference: float
    ci_low: float
    ci_high: float
    level: float
    n: int
    replicates: int
    seed: int
    verdict: str


def retention_difference(
    pretrained: Mapping[Hashable, float],
    scratch: Mapping[Hashable, float],
    finetuned: Mapping[Hashable, float],
    replicates: int = 2000,
    level: float = 0.95,
    seed: int | None = 0,
) -> RetentionResult:
    """How much closer the finetuned ranking is to the pretrained one than to the scratch one (trained on
    the target data alone), and whether the difference is resolved: the keys (classes or pairs) are drawn
    with replacement, jointly for both rank correlations, and the interval is the percentile interval of
    the replicates' differences (replicates where a ranking is all tied are left out)."""
    replicates, seed, level = check_positive_int(replicates, "replicates"), check_seed(seed), check_level(level)
    keys = tuple(finetuned)
    for name, mapping in (("pretrained", pretrained), ("scratch", scratch)):
        missing = [k for k in keys if k not in mapping]
        if missing or len(mapping) != len(keys):
            raise ValueError(f"{name} and finetuned have different keys (missing in {name}: {missing})")
    if len(keys) < 3:
        raise ValueError(f"the retention interval needs at least 3 keys, got {len(keys)}")
    p, s, f = (
        _values(m, keys, name)
        for m, name in ((pretrained, "pretrained"), (scratch, "scratch"), (finetuned, "finetuned"))
    )
    rows = np.random.default_rng(seed).integers(0, len(keys), size=(replicates, len(keys)))
    deltas = _spearman(p[rows], f[rows]) - _spearman(s[rows], f[rows])
    observed = float(_spearman(p[None], f[None])[0] - _spearman(s[None], f[None])[0])
    low, high = percentile_interval(deltas, level)
    verdict = RETAINED if low > 0 else TARGET_DATA if high < 0 else UNDECIDED
    return RetentionResult(observed, low, high, level, len(keys), replicates, seed, verdict)


def _spearman(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho of every row of x against the same row of y (midranks; NaN where a row is all tied)."""
    from scipy import stats

    rx, ry = stats.rankdata(x, axis=1), stats.rankdata(y, axis=1)
    rx, ry = rx - rx.mean(axis=1, keepdims=True), ry - ry.mean(axis=1, keepdims=True)
    scale = np.sqrt(np.sum(rx * rx, axis=1) * np.sum(ry * ry, axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(scale > 0, np.sum(rx * ry, axis=1) / scale, np.nan)
