"""One iEAT over several finetuning seeds: the spread of d between seeds and one combined test.

The combined test uses every seed's embeddings. Its statistic is the sum over seeds of the iEAT
statistic ``S_k = sum_X s_k - sum_Y s_k``, and its null distribution re-partitions X u Y:

* ``paired=True`` (the workflow: every seed embeds the *same* images): one re-partition of the images
  applies to all seeds, since an image's label is what the null exchanges. This equals an iEAT on the
  per-image scores summed over seeds, and allows every method (exact enumeration included).
* ``paired=False`` (strata of different images): each stratum is re-partitioned on its own, by Monte
  Carlo (a stratified permutation test).

Averaging per-seed p-values is not a test; this is (docs/statistics.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from biastransfer.stats._validation import Result, check_choice, check_positive_int
from biastransfer.stats.floors import d_not_estimable
from biastransfer.stats.ieat import ALTERNATIVES, METHODS, association_scores, effect_size_of, partition_pvalues


@dataclass(frozen=True)
class SeedsResult(Result):
    """Effect sizes over ``n_seeds`` networks (mean, between-seed SD with ddof=1, range; NaN when a set has
    fewer than 2 images, :func:`~biastransfer.stats.floors.d_not_estimable`) and the combined test of
    ``statistic = sum_k S_k`` (fields as in :class:`~biastransfer.stats.ieat.IEATResult`)."""

    n_seeds: int
    mean_d: float
    sd_d: float
    min_d: float
    max_d: float
    statistic: float
    pvalue: float
    pvalue_two_sided: float
    pvalue_floor: float
    pvalue_se: float
    method: str
    permutations: int
    seed: int | None
    alternative: str
    paired: bool


def combined_ieat(
    strata: Sequence[Sequence],
    *,
    paired: bool = True,
    permutations: int = 100_000,
    alternative: str = "greater",
    method: str = "auto",
    seed: int | None = 0,
) -> SeedsResult:
    """Combine iEATs ``(X, Y, A, B)`` of several networks (seeds) into one estimate and one test.

    With ``paired=True`` every stratum must hold the same images in the same order (X row i is the same
    image in every stratum), so all strata need equal |X| and |Y|.
    """
    check_choice(alternative, "alternative", ALTERNATIVES)
    check_choice(method, "method", METHODS)
    permutations = check_positive_int(permutations, "permutations")
    if len(strata) == 0:
        raise ValueError("strata is empty; give at least one (X, Y, A, B)")
    scores, sizes_x = [], []
    for k, (X, Y, A, B) in enumerate(strata):
        try:
            scores.append(association_scores(X, Y, A, B))
        except ValueError as err:
            raise ValueError(f"strata[{k}]: {err}") from None
        sizes_x.append(len(np.asarray(X)))
    small = [d_not_estimable(dict(zip("XYAB", (len(np.asarray(v)) for v in stratum)))) for stratum in strata]
    effects = np.array([np.nan if why else effect_size_of(s, n) for s, n, why in zip(scores, sizes_x, small)])
    statistic = float(sum(2 * s[:n].sum() - s.sum() for s, n in zip(scores, sizes_x)))
    if paired:
        shapes = {(n, s.size - n) for s, n in zip(scores, sizes_x)}
        if len(shapes) > 1:
            raise ValueError(f"paired strata need the same |X| and |Y| in every stratum, got {sorted(shapes)}")
        pvalues = partition_pvalues([np.sum(scores, axis=0)], sizes_x[:1], permutations, alternative, method, seed)
    else:
        pvalues = partition_pvalues(scores, sizes_x, permutations, alternative, method, seed)
    return SeedsResult(
        len(strata),
        float(np.mean(effects)),
        float(np.std(effects, ddof=1)) if len(effects) > 1 else float("nan"),
        float(np.min(effects)),
        float(np.max(effects)),
        statistic,
        alternative=alternative,
        paired=paired,
        **pvalues,
    )
