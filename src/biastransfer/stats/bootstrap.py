"""Seeded bootstrap over images: confidence intervals for the iEAT effect size and its change.

Every replicate resamples the rows of X, Y, A and B with replacement, each set on its own, so the
interval carries the sampling variation of the targets *and* of the attribute images. A replicate is
a vector of counts per set, and the effect size of a resample is a weighted sum over the cosine blocks
X.A, X.B, Y.A and Y.B, which are computed once: no k x k matrix and no resampled embeddings per
replicate (docs/statistics.md). The change ``d_after - d_before`` of the same images embedded by two
networks uses the same counts for both (a paired bootstrap), and its variance is corrected for the
bootstrap's over-counting of target x attribute interactions (:func:`ieat_changes`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special  # the normal and t quantiles scipy.stats itself uses, without its import cost

from biastransfer.stats._validation import Result, as_embedding_sets, check_seed
from biastransfer.stats.floors import check_replicates, d_not_estimable, too_few_to_resample

BOOTSTRAP = 2000  # default replicates (also the schema's analysis.ieat.bootstrap and analysis.bts.bootstrap)
_BLOCK = 512  # replicates per vectorised block; fixed, so a seed always gives the same draws
_TARGETS, _ATTRIBUTES, _ALL_SETS = "XY", "AB", "XYAB"  # which sets a bootstrap draws anew


@dataclass(frozen=True)
class BootstrapResult(Result):
    """A bootstrap interval around ``estimate``; ``se`` is the SD of the replicates."""

    estimate: float
    ci_low: float
    ci_high: float
    se: float
    level: float
    replicates: int
    seed: int


@dataclass(frozen=True)
class ChangeResult(Result):
    """``delta = after - before`` with a paired interval, its standard error and a two-sided p of no change.

    ``method`` says how: ``"percentile"`` (the interval's quantiles of the replicates; ``pvalue`` is the
    smallest two-sided level at which it excludes 0, with the +1 correction, never below
    ``pvalue_floor = 2 / (replicates + 1)``) or ``"corrected normal"`` (``delta +- z se`` with the
    interaction-corrected variance of :func:`ieat_changes`; a normal p, so ``pvalue_floor`` is 0).
    """

    before: float
    after: float
    delta: float
    se: float
    ci_low: float
    ci_high: float
    pvalue: float
    pvalue_floor: float
    level: float
    replicates: int
    seed: int
    method: str


def check_level(level: float) -> float:
    """``level`` as a float in (0, 1), or ValueError."""
    if isinstance(level, bool) or not isinstance(level, (int, float, np.floating)) or not 0 < level < 1:
        raise ValueError(f"level must be a number in (0, 1), got {level!r}")
    return float(level)


def resample_counts(n: int, replicates: int, rng: np.random.Generator) -> np.ndarray:
    """``replicates x n`` counts: how often each of n rows is drawn in a resample of size n."""
    draws = rng.integers(0, n, size=(replicates, n)) + n * np.arange(replicates)[:, None]
    return np.bincount(draws.ravel(), minlength=replicates * n).reshape(replicates, n).astype(np.float64)


def percentile_interval(replicates: np.ndarray, level: float) -> tuple[float, float]:
    """The (1 - level)/2 and (1 + level)/2 quantiles of the finite replicates (NaN if there are none)."""
    finite = replicates[np.isfinite(replicates)]
    if finite.size == 0:
        return float("nan"), float("nan")
    low, high = np.quantile(finite, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def bias_corrected_interval(
    replicates: np.ndarray, estimate: float, level: float, acceleration: float = 0.0
) -> tuple[float, float]:
    """Bias-corrected (and accelerated) percentile interval (Efron's BC / BCa): the percentile interval
    at levels ``Phi(z0 + (z0 + z) / (1 - a (z0 + z)))`` for ``z = Phi^-1((1 -+ level) / 2)``, with
    ``z0 = Phi^-1(share of replicates below the estimate)`` (ties count half) and the ``acceleration`` a
    (0: BC), so a bootstrap distribution that sits to one side of the estimate moves the interval the other
    way, and one whose spread grows with the parameter stretches the interval on that side."""
    finite = replicates[np.isfinite(replicates)]
    if finite.size == 0 or not np.isfinite(estimate):
        return float("nan"), float("nan")
    below = (np.count_nonzero(finite < estimate) + 0.5 * np.count_nonzero(finite == estimate)) / finite.size
    z0 = special.ndtri(np.clip(below, 0.5 / finite.size, 1 - 0.5 / finite.size))
    z = z0 + special.ndtri([(1 - level) / 2, (1 + level) / 2])
    with np.errstate(invalid="ignore", divide="ignore"):
        probs = special.ndtr(z0 + z / (1 - acceleration * z))
    # past the pole 1 - a z = 0 (or at a level that rounds to 1) an end goes to the extreme replicate
    probs = np.where(np.isfinite(probs) & (1 - acceleration * z > 0), probs, [0.0, 1.0])
    low, high = np.quantile(finite, probs)
    return float(low), float(high)


def expanded_level(level: float, n: int) -> float:
    """The percentile level that widens a bootstrap interval for a sample of n (Hesterberg 2015, "expanded
    percentile"): ``2 Phi(sqrt(n / (n - 1)) t_{n-1, (1 + level) / 2}) - 1``, which undoes the bootstrap's
    too-narrow spread (divisor n, normal tails) at small n and tends to ``level`` as n grows."""
    return float(2 * special.ndtr(np.sqrt(n / (n - 1)) * special.stdtrit(n - 1, (1 + level) / 2)) - 1)


def bootstrap_pvalue(replicates: np.ndarray) -> float:
    """Two-sided p of "the parameter is 0": twice the smaller share of replicates on either side of 0.

    It inverts the percentile interval (the smallest 1 - level whose interval excludes 0), with the +1
    correction: ``min(1, 2 (1 + #{r <= 0}) / (R + 1), 2 (1 + #{r >= 0}) / (R + 1))``.
    """
    finite = replicates[np.isfinite(replicates)]
    if finite.size == 0:
        return float("nan")
    tail = 1 + min(np.count_nonzero(finite <= 0), np.count_nonzero(finite >= 0))
    return float(min(1.0, 2 * tail / (finite.size + 1)))


class IEATBlocks:
    """The cosine blocks X.A, X.B, Y.A, Y.B of one iEAT, for effect sizes of weighted resamples; ``not_estimable``
    says why d is not (a set of fewer than 2 images; :func:`~biastransfer.stats.floors.d_not_estimable`), or
    is empty."""

    def __init__(self, X, Y, A, B):
        checked = as_embedding_sets(dict(zip("XYAB", (X, Y, A, B))))
        units = {name: array * inv[:, None] for name, (array, inv) in checked.items()}
        self.sizes = {name: len(u) for name, u in units.items()}
        self.not_estimable = d_not_estimable(self.sizes)
        self.xa, self.xb = units["X"] @ units["A"].T, units["X"] @ units["B"].T
        self.ya, self.yb = units["Y"] @ units["A"].T, units["Y"] @ units["B"].T

    def effect_sizes(self, wx: np.ndarray, wy: np.ndarray, wa: np.ndarray, wb: np.ndarray) -> np.ndarray:
        """d for each row of the count matrices (R x |set|); counts of ones give the observed d. Means are
        over each row's total count, so a row may also leave an image out (a count of 0: the jackknife)."""
        n_x, n_y, n_a, n_b = (w.sum(axis=1) for w in (wx, wy, wa, wb))
        sx = wa @ self.xa.T / n_a[:, None] - wb @ self.xb.T / n_b[:, None]  # s of every X row per resample
        sy = wa @ self.ya.T / n_a[:, None] - wb @ self.yb.T / n_b[:, None]
        sum_x, sum_y = np.einsum("ij,ij->i", wx, sx), np.einsum("ij,ij->i", wy, sy)
        squares = np.einsum("ij,ij->i", wx, sx * sx) + np.einsum("ij,ij->i", wy, sy * sy)
        n = n_x + n_y
        var = (squares - (sum_x + sum_y) ** 2 / n) / (n - 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            d = (sum_x / n_x - sum_y / n_y) / np.sqrt(var)
        return np.where(var > 1e-300, d, np.nan)

    def observed(self) -> float:
        """The observed d (NaN when it is not estimable)."""
        if self.not_estimable:
            return math.nan
        ones = [np.ones((1, self.sizes[k])) for k in "XYAB"]
        return float(self.effect_sizes(*ones)[0])

    def acceleration(self) -> float:
        """BCa's acceleration from the delete-one jackknife over all four sets together:
        ``a = sum D^3 / (6 (sum D^2)^1.5)`` with ``D`` the jackknife mean minus each delete-one d of one
        set, for every row of X, Y, A and B (0 when every delete-one d is equal)."""
        deviations = []
        for k in "XYAB":
            counts = [np.ones((self.sizes[k], self.sizes[j])) for j in "XYAB"]
            counts["XYAB".index(k)] = 1 - np.eye(self.sizes[k])
            theta = self.effect_sizes(*counts)
            deviations.append(theta.mean() - theta)
        D = np.concatenate(deviations)
        D = D[np.isfinite(D)]
        spread = np.sum(D**2)
        return float(np.sum(D**3) / (6 * spread**1.5)) if spread > 0 else 0.0


def ieat_replicates(
    blocks: Sequence[IEATBlocks], replicates: int, seed: int | np.random.Generator, resample: str = _ALL_SETS
) -> np.ndarray:
    """``len(blocks) x replicates`` bootstrap effect sizes, all blocks resampled with the same counts.

    The blocks must hold the same images (same set sizes), e.g. one iEAT embedded by several networks.
    ``resample`` names the sets drawn anew (``"XYAB"``); the others keep each of their rows once.
    """
    sizes = blocks[0].sizes
    for b in blocks[1:]:
        if b.sizes != sizes:
            raise ValueError(f"paired iEATs need the same set sizes, got {sizes} and {b.sizes}")
    rng = np.random.default_rng(seed)
    out = np.empty((len(blocks), replicates))
    for start in range(0, replicates, _BLOCK):
        count = min(_BLOCK, replicates - start)
        counts = [
            resample_counts(sizes[k], count, rng) if k in resample else np.ones((count, sizes[k])) for k in "XYAB"
        ]
        for i, b in enumerate(blocks):
            out[i, start : start + count] = b.effect_sizes(*counts)
    return out


def ieat_ci(X, Y, A, B, replicates: int = BOOTSTRAP, level: float = 0.95, seed: int | None = 0) -> BootstrapResult:
    """BCa bootstrap interval of the iEAT effect size d (rows resampled within X, Y, A and B; the
    acceleration from the jackknife, :meth:`IEATBlocks.acceleration`), at the expanded level of the
    smallest set (:func:`expanded_level`). With many dimensions the resampled d sits below the observed
    one, and with heavy-tailed embeddings and a large d a plain BC interval misses too often
    (docs/statistics.md). A set too small to resample at this level gives no interval (NaN bounds)."""
    level, seed = check_level(level), check_seed(seed)
    replicates = check_replicates(replicates, level)
    blocks = IEATBlocks(X, Y, A, B)
    estimate = blocks.observed()
    if too_few_to_resample(blocks.sizes.values(), level):
        return BootstrapResult(estimate, math.nan, math.nan, math.nan, level, replicates, seed)
    reps = ieat_replicates([blocks], replicates, seed)[0]
    low, high = bias_corrected_interval(
        reps,
        estimate,
        expanded_level(level, min((n for n in blocks.sizes.values() if n > 1), default=2)),
        blocks.acceleration(),
    )
    return BootstrapResult(estimate, low, high, _sd(reps), level, replicates, seed)


def ieat_change(
    before: Sequence, after: Sequence, replicates: int = BOOTSTRAP, level: float = 0.95, seed: int | None = 0
) -> ChangeResult:
    """``d(after) - d(before)`` for the same images (``(X, Y, A, B)`` row for row) in two embeddings,
    with the interval and p-value of :func:`ieat_changes`."""
    return ieat_changes([IEATBlocks(*before), IEATBlocks(*after)], replicates, level, seed)[0]


def ieat_changes(
    blocks: Sequence[IEATBlocks], replicates: int = BOOTSTRAP, level: float = 0.95, seed: int | None = 0
) -> list[ChangeResult]:
    """The change of d from ``blocks[0]`` to each later block (the same images in several networks).

    Every bootstrap uses the same resampled rows in all networks (paired). A bootstrap that resamples
    targets and attributes together counts the variance of their interaction (e.g. the noise one network
    adds to both ``x`` and ``a``) three times instead of once, and that term dominates a difference of
    two networks' d. So three paired bootstraps are drawn (targets only: ``v_T``; attributes only:
    ``v_A``; both: ``v_TA``) and the variance of the change is ``2 (v_T + v_A) - v_TA``, at least
    ``max(v_T, v_A)``; the interval is ``delta +- z se`` and the p-value normal (docs/statistics.md).
    """
    level, seed = check_level(level), check_seed(seed)
    replicates = check_replicates(replicates, level)
    if len(blocks) < 2:
        raise ValueError("ieat_changes needs the pretrained network and at least one more")
    rng = np.random.default_rng(seed)
    reps = {sets: ieat_replicates(blocks, replicates, rng, sets) for sets in (_TARGETS, _ATTRIBUTES, _ALL_SETS)}
    z = special.ndtri((1 + level) / 2)
    before = blocks[0].observed()
    results = []
    for i in range(1, len(blocks)):
        v = {sets: _sd(r[i] - r[0]) ** 2 for sets, r in reps.items()}
        se = float(np.sqrt(max(2 * (v[_TARGETS] + v[_ATTRIBUTES]) - v[_ALL_SETS], v[_TARGETS], v[_ATTRIBUTES])))
        after = blocks[i].observed()
        delta = after - before
        p = float(2 * special.ndtr(-abs(delta) / se)) if se > 0 else float(delta == 0)
        if too_few_to_resample(blocks[0].sizes.values(), level):
            se = p = math.nan
        results.append(
            ChangeResult(
                before,
                after,
                delta,
                se,
                delta - z * se,
                delta + z * se,
                p,
                0.0,
                level,
                replicates,
                seed,
                "corrected normal",
            )
        )
    return results


def change_result(before: float, after: float, deltas: np.ndarray, level: float, seed: int) -> ChangeResult:
    """A percentile :class:`ChangeResult` from the observed values and the replicates of the difference."""
    low, high = percentile_interval(deltas, level)
    return ChangeResult(
        before,
        after,
        after - before,
        _sd(deltas),
        low,
        high,
        bootstrap_pvalue(deltas),
        2 / (deltas.size + 1),
        level,
        deltas.size,
        seed,
        "percentile",
    )


def _sd(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(finite.std(ddof=1)) if finite.size >= 2 else float("nan")
