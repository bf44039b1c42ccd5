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

import dataclasses
import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from biastransfer.stats._validation import as_embeddings, check_choice, check_positive_int, check_same_dims, check_seed

ALTERNATIVES = ("greater", "less", "two-sided")
METHODS = ("auto", "exact", "permutation", "normal")
MAX_EXACT_PARTITIONS = 50_000_000
_CHUNK = 1 << 14  # partitions per vectorised block; fixed, so a seed always gives the same draws
_TIE_RTOL = 1e-11  # partition sums closer than this (relative to sum |s|) count as ties


@dataclass(frozen=True)
class IEATResult:
    """Outcome of :func:`ieat`.

    ``permutations`` is the number of partitions the p-value is based on: all of them (exact), the
    requested number including the observed one (permutation), or 0 (normal). ``pvalue_se`` is the
    Monte Carlo standard error of ``pvalue`` (0 for exact and normal). ``seed`` is ``None`` when no
    random numbers were used.
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

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def association_scores(X, Y, A, B) -> np.ndarray:
    """s(w, A, B) for every row w of X then of Y (length |X| + |Y|), after checking the inputs."""
    checked = {name: as_embeddings(value, name) for name, value in zip("XYAB", (X, Y, A, B))}
    check_same_dims({name: array for name, (array, _) in checked.items()})
    (X, inv_x), (Y, inv_y), (A, inv_a), (B, inv_b) = checked.values()
    # mean_a cos(w, a) - mean_b cos(w, b) = u_w . (mean unit row of A - mean unit row of B)
    direction = (inv_a @ A) / len(A) - (inv_b @ B) / len(B)
    return np.concatenate([(X @ direction) * inv_x, (Y @ direction) * inv_y])


def ieat(
    X,
    Y,
    A,
    B,
    permutations: int = 100_000,
    alternative: str = "greater",
    method: str = "auto",
    seed: int | None = 0,
) -> IEATResult:
    """Test whether targets X are more associated with attribute A (vs B) than targets Y are.

    ``method="auto"`` enumerates all C(|X|+|Y|, |X|) partitions when there are at most
    ``permutations`` of them, and otherwise draws ``permutations - 1`` random partitions
    (p = (1 + #exceedances) / permutations). Ties with the observed statistic count as exceedances.
    """
    check_choice(alternative, "alternative", ALTERNATIVES)
    check_choice(method, "method", METHODS)
    permutations = check_positive_int(permutations, "permutations")
    s = association_scores(X, Y, A, B)
    n_x, n_y = len(np.asarray(X)), len(np.asarray(Y))
    sizes = dict(n_x=n_x, n_y=n_y, n_a=len(np.asarray(A)), n_b=len(np.asarray(B)))

    x_sum = s[:n_x].sum()
    statistic = float(x_sum - s[n_x:].sum())
    sd = s.std(ddof=1)
    effect_size = float((s[:n_x].mean() - s[n_x:].mean()) / sd) if sd > 0 else float("nan")

    n_partitions = math.comb(n_x + n_y, n_x)
    if method == "auto":
        method = "exact" if n_partitions <= permutations else "permutation"
    if method == "normal":
        pvalue = _normal_pvalue(s, n_x, x_sum, alternative)
        return IEATResult(effect_size, pvalue, statistic, "normal", 0, 0.0, None, alternative, **sizes)

    center = n_x * s.mean()  # mean of sum_X' s over all partitions
    tol = _TIE_RTOL * np.abs(s).sum()
    if method == "exact":
        if n_partitions > MAX_EXACT_PARTITIONS:
            raise ValueError(
                f"method='exact' would enumerate {n_partitions} partitions (limit "
                f"{MAX_EXACT_PARTITIONS}); use method='permutation'"
            )
        hits = sum(
            _count_extreme(block, x_sum, center, tol, alternative)
            for block in _all_partition_sums(s, n_x)
        )
        pvalue = hits / n_partitions
        return IEATResult(
            effect_size, pvalue, statistic, "exact", n_partitions, 0.0, None, alternative, **sizes
        )

    if permutations < 2:
        raise ValueError("permutations must be at least 2 for method='permutation'")
    seed = check_seed(seed)
    rng = np.random.default_rng(seed)
    draws = permutations - 1
    hits = sum(
        _count_extreme(block, x_sum, center, tol, alternative)
        for block in _random_partition_sums(s, n_x, draws, rng)
    )
    pvalue = (1 + hits) / permutations
    pvalue_se = math.sqrt(pvalue * (1 - pvalue) / draws)
    return IEATResult(
        effect_size, pvalue, statistic, "permutation", permutations, pvalue_se, seed, alternative,
        **sizes,
    )


def _count_extreme(sums: np.ndarray, observed: float, center: float, tol: float, alternative: str) -> int:
    """Number of partition sums at least as extreme as ``observed`` (ties within ``tol`` included)."""
    if alternative == "greater":
        return int(np.count_nonzero(sums >= observed - tol))
    if alternative == "less":
        return int(np.count_nonzero(sums <= observed + tol))
    return int(np.count_nonzero(np.abs(sums - center) >= abs(observed - center) - tol))


def _all_partition_sums(s: np.ndarray, n_x: int):
    """Yield blocks of sum_X' s over every subset X' of size n_x (enumerating the smaller side)."""
    n = s.size
    size = min(n_x, n - n_x)
    total = s.sum()
    combos = itertools.combinations(range(n), size)
    while True:
        flat = np.fromiter(
            itertools.chain.from_iterable(itertools.islice(combos, _CHUNK)), dtype=np.intp
        )
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
        return float(stats.norm.sf(z))
    if alternative == "less":
        return float(stats.norm.cdf(z))
    return float(2 * stats.norm.sf(abs(z)))
