"""Image Embedding Association Test (iEAT; Steed & Caliskan 2021) on row-wise embeddings.

Definitions follow the reference ``weat.test.Test`` (ryansteed/weat): with cos the cosine similarity,

* ``s(w, A, B) = mean_a cos(w, a) - mean_b cos(w, b)`` for every w in X u Y,
* statistic ``S = sum_X s - sum_Y s``,
* effect size ``d = (mean_X s - mean_Y s) / SD(s over X u Y, ddof=1)``,
* a permutation p-value over the re-partitions of X u Y into sets of sizes |X| and |Y|.

Differences from the reference (see docs/statistics.md): unequal |X| != |Y| is allowed (no truncation),
``alternative`` may be "less" or "two-sided", the RNG is a seeded ``numpy.random.Generator`` recorded
in the result, partitions are drawn vectorised, and the "normal" method uses the exact permutation mean
and variance instead of sampled ones.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy import special  # the normal tail scipy.stats.norm itself uses, without its import cost

from biastransfer.stats._validation import Result, as_embedding_sets, check_choice, check_positive_int, check_seed
from biastransfer.stats.attribution import TIE_RTOL, Design, detectable_shift
from biastransfer.stats.bootstrap import BOOTSTRAP, check_level, ieat_ci
from biastransfer.stats.floors import d_not_estimable

ALTERNATIVES = ("greater", "less", "two-sided")
METHODS = ("auto", "exact", "permutation", "normal")
MAX_EXACT_PARTITIONS = 50_000_000
PERMUTATIONS = 100_000  # default partitions drawn when they cannot all be enumerated (also the schema's)
_CHUNK = 1 << 14  # partitions per vectorised block; fixed, so a seed always gives the same draws
POWER = 0.8  # the power at which detectable_d is stated


@dataclass(frozen=True)
class IEATResult(Result):
    """Outcome of :func:`ieat`.

    ``permutations`` is the number of partitions the p-value is based on: all of them (exact), the
    requested number including the observed one (permutation), or 0 (normal). ``pvalue`` is for
    ``alternative``; ``pvalue_two_sided`` comes from the same partitions. ``pvalue_floor`` is the
    smallest p the method can give (1 / permutations; 0 for normal): a p at the floor is a bound.
    ``pvalue_se`` is the Monte Carlo standard error of ``pvalue`` (0 for exact and normal). ``seed``
    is ``None`` when no random numbers were used. ``ci_low``/``ci_high`` are the BCa
    bootstrap interval of ``effect_size`` at ``ci_level`` from ``bootstrap`` replicates seeded with ``ci_seed``
    (NaN when ``bootstrap=0``; :func:`biastransfer.stats.bootstrap.ieat_ci`). ``mean_difference`` is
    d's numerator (``mean_X s - mean_Y s``, the raw association) and ``pooled_sd`` its denominator (SD of s
    over X u Y, ddof=1): ``effect_size = mean_difference / pooled_sd``. ``detectable_d`` is the smallest
    |d| that the permutation test detects with probability ``detectable_power`` at ``detectable_alpha``
    with these |X| and |Y| (:func:`detectable_effect_size`; NaN when not asked for). ``not_estimable`` says why
    ``effect_size`` is NaN when a set has fewer than 2 images (:func:`~biastransfer.stats.floors.d_not_estimable`;
    its numerator and denominator and the p-values are still given), else is empty.
    """

    effect_size: float
    pvalue: float
    statistic: float
    method: str
    permutations: int
    pvalue_se: float
    seed: int | None
    alternative: str
    n_x: int
    n_y: int
    n_a: int
    n_b: int
    pvalue_two_sided: float
    pvalue_floor: float
    ci_low: float
    ci_high: float
    ci_level: float
    bootstrap: int
    ci_seed: int | None
    mean_difference: float
    pooled_sd: float
    detectable_d: float
    detectable_alpha: float
    detectable_power: float
    not_estimable: str = ""


@functools.lru_cache(maxsize=256)
def detectable_effect_size(
    n_x: int, n_y: int, alpha: float = 0.05, power: float = POWER, alternative: str = "greater", seed: int = 0
) -> float:
    """The smallest |d| that the iEAT's permutation test of ``alternative`` detects with probability
    ``power`` at ``alpha`` with |X| = n_x and |Y| = n_y (``inf`` when the test cannot reach ``alpha``).

    The test re-partitions the scores s of X u Y, so its power is that of the permutation test of a
    difference of means between groups of n_x and n_y normal values: the shift ``t`` in within-group SDs of
    :func:`biastransfer.stats.attribution.detectable_shift` (simulated, common random numbers). d divides by
    the SD over the union, which the shift itself widens: ``d = t / sqrt(1 + t^2 n_x n_y / (n_x + n_y)^2)``.
    """
    shift = detectable_shift(n_x, n_y, Design(alternative=alternative, alpha=alpha, power=power, seed=seed))
    return shift if math.isinf(shift) else shift / math.sqrt(1 + shift**2 * n_x * n_y / (n_x + n_y) ** 2)


def association_scores(X, Y, A, B) -> np.ndarray:
    """s(w, A, B) for every row w of X then of Y (length |X| + |Y|), after checking the inputs."""
    checked = as_embedding_sets(dict(zip("XYAB", (X, Y, A, B))))
    (X, inv_x), (Y, inv_y), (A, inv_a), (B, inv_b) = checked.values()
    # mean_a cos(w, a) - mean_b cos(w, b) = u_w . (mean unit row of A - mean unit row of B)
    direction = (inv_a @ A) / len(A) - (inv_b @ B) / len(B)
    return np.concatenate([(X @ direction) * inv_x, (Y @ direction) * inv_y])


def effect_size_of(s: np.ndarray, n_x: int) -> float:
    """d = (mean of the first n_x scores - mean of the rest) / SD of all (ddof=1); NaN if all are equal."""
    difference, sd = effect_size_parts(s, n_x)
    return difference / sd if sd > 0 else float("nan")


def effect_size_parts(s: np.ndarray, n_x: int) -> tuple[float, float]:
    """d's numerator (mean of the first n_x scores - mean of the rest) and denominator (SD of all, ddof=1)."""
    return float(s[:n_x].mean() - s[n_x:].mean()), float(s.std(ddof=1))


def ieat(
    X,
    Y,
    A,
    B,
    permutations: int = PERMUTATIONS,
    alternative: str = "greater",
    method: str = "auto",
    seed: int | None = 0,
    bootstrap: int = BOOTSTRAP,
    ci_level: float = 0.95,
    alpha: float | None = 0.05,
    power: float = POWER,
) -> IEATResult:
    """Test whether targets X are more associated with attribute A (vs B) than targets Y are.

    ``method="auto"`` enumerates all C(|X|+|Y|, |X|) partitions when there are at most
    ``permutations`` of them, and otherwise draws ``permutations - 1`` random partitions
    (p = (1 + #exceedances) / permutations). Ties with the observed statistic count as exceedances.
    ``bootstrap`` replicates (0: none) give a ``ci_level`` interval of the effect size, seeded by ``seed``.
    ``alpha`` and ``power`` give ``detectable_d`` (``alpha=None``: none, NaN).
    """
    check_choice(alternative, "alternative", ALTERNATIVES)
    check_choice(method, "method", METHODS)
    permutations = check_positive_int(permutations, "permutations")
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, (int, np.integer)) or bootstrap < 0:
        raise ValueError(f"bootstrap must be a non-negative int, got {bootstrap!r}")
    ci_level = check_level(ci_level)
    if alpha is not None:
        alpha, power = check_level(alpha), check_level(power)
    s = association_scores(X, Y, A, B)
    n_x, n_y = len(np.asarray(X)), len(np.asarray(Y))
    sizes = dict(n_x=n_x, n_y=n_y, n_a=len(np.asarray(A)), n_b=len(np.asarray(B)))

    x_sum = s[:n_x].sum()
    statistic = float(x_sum - s[n_x:].sum())
    not_estimable = d_not_estimable({k[-1].upper(): n for k, n in sizes.items()})
    effect_size = math.nan if not_estimable else effect_size_of(s, n_x)
    mean_difference, pooled_sd = effect_size_parts(s, n_x)

    if bootstrap:
        ci_seed = check_seed(seed)
        ci = ieat_ci(X, Y, A, B, replicates=int(bootstrap), level=ci_level, seed=ci_seed)
        interval = dict(
            ci_low=ci.ci_low, ci_high=ci.ci_high, ci_level=ci_level, bootstrap=int(bootstrap), ci_seed=ci_seed
        )
    else:
        interval = dict(ci_low=math.nan, ci_high=math.nan, ci_level=ci_level, bootstrap=0, ci_seed=None)

    pvalues = partition_pvalues([s], [n_x], permutations, alternative, method, seed)
    return IEATResult(
        effect_size,
        pvalues.pop("pvalue"),
        statistic,
        pvalues.pop("method"),
        pvalues.pop("permutations"),
        pvalues.pop("pvalue_se"),
        pvalues.pop("seed"),
        alternative,
        **sizes,
        **pvalues,
        **interval,
        mean_difference=mean_difference,
        pooled_sd=pooled_sd,
        detectable_d=math.nan if alpha is None else detectable_effect_size(n_x, n_y, alpha, power, alternative),
        detectable_alpha=math.nan if alpha is None else alpha,
        detectable_power=math.nan if alpha is None else power,
        not_estimable=not_estimable,
    )


def partition_pvalues(
    scores: list[np.ndarray],
    sizes_x: list[int],
    permutations: int,
    alternative: str,
    method: str,
    seed: int | None,
) -> dict:
    """p-values of ``sum_k sum_{X_k} s_k`` over re-partitions of each score vector ``s_k`` (a stratum).

    Each stratum k is re-partitioned into its first ``sizes_x[k]`` and the rest independently of the
    others. One stratum allows every method; several allow only Monte Carlo ("auto" or "permutation").
    Returns pvalue, pvalue_two_sided, pvalue_floor, pvalue_se, method, permutations and seed.
    """
    observed = sum(s[:n].sum() for s, n in zip(scores, sizes_x))
    center = sum(n * s.mean() for s, n in zip(scores, sizes_x))  # mean over all partitions
    tol = TIE_RTOL * sum(np.abs(s).sum() for s in scores)
    n_partitions = math.prod(math.comb(s.size, n) for s, n in zip(scores, sizes_x))
    if method == "auto":
        method = "exact" if n_partitions <= permutations and len(scores) == 1 else "permutation"
    if len(scores) > 1 and method != "permutation":
        raise ValueError(f"method={method!r} needs one stratum; several allow only 'permutation'")
    if method == "normal":
        s, n_x = scores[0], sizes_x[0]
        pvalue, two_sided = (_normal_pvalue(s, n_x, observed, alt) for alt in (alternative, "two-sided"))
        return dict(
            pvalue=pvalue,
            pvalue_two_sided=two_sided,
            pvalue_floor=0.0,
            pvalue_se=0.0,
            method="normal",
            permutations=0,
            seed=None,
        )
    if method == "exact":
        if n_partitions > MAX_EXACT_PARTITIONS:
            raise ValueError(
                f"method='exact' would enumerate {n_partitions} partitions (limit "
                f"{MAX_EXACT_PARTITIONS}); use method='permutation'"
            )
        hits = sum(
            _count_extreme(block, observed, center, tol, alternative)
            for block in _all_partition_sums(scores[0], sizes_x[0])
        )
        pvalue, two_sided = (float(v) for v in hits / n_partitions)
        return dict(
            pvalue=pvalue,
            pvalue_two_sided=two_sided,
            pvalue_floor=1 / n_partitions,
            pvalue_se=0.0,
            method="exact",
            permutations=n_partitions,
            seed=None,
        )

    if permutations < 2:
        raise ValueError("permutations must be at least 2 for method='permutation'")
    seed = check_seed(seed)
    rng = np.random.default_rng(seed)
    draws = permutations - 1
    # One generator per stratum, advanced block by block in turn: one seeded stream for all strata.
    streams = [_random_partition_sums(s, n, draws, rng) for s, n in zip(scores, sizes_x)]
    hits = sum(_count_extreme(sum(blocks), observed, center, tol, alternative) for blocks in zip(*streams))
    pvalue, two_sided = (float(v) for v in (1 + hits) / permutations)
    return dict(
        pvalue=pvalue,
        pvalue_two_sided=two_sided,
        pvalue_floor=1 / permutations,
        pvalue_se=math.sqrt(pvalue * (1 - pvalue) / draws),
        method="permutation",
        permutations=permutations,
        seed=seed,
    )


def _count_extreme(sums: np.ndarray, observed: float, center: float, tol: float, alternative: str) -> np.ndarray:
    """Numbers of partition sums at least as extreme as ``observed`` (ties within ``tol`` included)
    for ``alternative`` and for the two-sided alternative, as an array of two counts."""
    two_sided = np.count_nonzero(np.abs(sums - center) >= abs(observed - center) - tol)
    if alternative == "greater":
        one = np.count_nonzero(sums >= observed - tol)
    elif alternative == "less":
        one = np.count_nonzero(sums <= observed + tol)
    else:
        one = two_sided
    return np.array([one, two_sided])


def _all_partition_sums(s: np.ndarray, n_x: int):
    """Yield blocks of sum_X' s over every subset X' of size n_x (enumerating the smaller side)."""
    n = s.size
    size = min(n_x, n - n_x)
    total = s.sum()
    combos = itertools.combinations(range(n), size)
    while True:
        flat = np.fromiter(itertools.chain.from_iterable(itertools.islice(combos, _CHUNK)), dtype=np.intp)
        if flat.size == 0:
            return
        block = s[flat.reshape(-1, size)].sum(axis=1)
        yield block if size == n_x else total - block


def _random_partition_sums(s: np.ndarray, n_x: int, draws: int, rng: np.random.Generator):
    """Yield blocks of sum_X' s for ``draws`` uniformly random subsets X' of size n_x.

    Selection sampling (Knuth's Algorithm S) vectorised over partitions: element i joins X' with
    probability (places left) / (elements left), decided by an exact bounded integer draw.
    """
    n = s.size
    dtype = np.uint16 if n < np.iinfo(np.uint16).max else np.uint32
    for start in range(0, draws, _CHUNK):
        count = min(_CHUNK, draws - start)
        left = np.full(count, n_x, dtype=dtype)
        sums = np.zeros(count)
        take = np.empty(count, dtype=bool)
        for i in range(n):
            np.less(rng.integers(0, n - i, size=count, dtype=dtype), left, out=take)
            sums += take * s[i]
            left -= take
        yield sums


def _normal_pvalue(s: np.ndarray, n_x: int, x_sum: float, alternative: str) -> float:
    """p-value of sum_X s under a normal with the permutation distribution's exact mean and variance."""
    n = s.size
    n_y = n - n_x
    var = n_x * n_y / (n * (n - 1)) * np.sum((s - s.mean()) ** 2)
    if var <= 0:
        return float("nan")
    z = (x_sum - n_x * s.mean()) / math.sqrt(var)
    if alternative == "greater":
        return float(special.ndtr(-z))
    if alternative == "less":
        return float(special.ndtr(z))
    return float(2 * special.ndtr(-abs(z)))
