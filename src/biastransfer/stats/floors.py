"""What a bootstrap interval at a given level needs: enough replicates, and enough images per resampled set.

A two-sided ``level`` interval cuts ``(1 - level) / 2`` of the replicates off each end; with fewer than
``2 / (1 - level)`` replicates (40 at 95%) a tail holds less than one replicate and the "interval" is
the range of a handful of values, or one point, that need not contain the estimate. A set of ``k``
images resampled with replacement has only ``C(2k - 1, k)`` distinct resamples (3 for k = 2, two of
them the same image twice, whose intra-class similarity is 1); with fewer distinct resamples than the
replicate floor the replicates repeat a few values and the interval can exclude its own estimate.
An iEAT's effect size itself needs two images in each of X, Y, A and B (:func:`d_not_estimable`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from biastransfer.stats._validation import check_positive_int


def min_replicates(level: float) -> int:
    """The fewest bootstrap replicates for a two-sided ``level`` interval: ``ceil(2 / (1 - level))``."""
    return math.ceil(round(2 / (1 - level), 9))


def check_replicates(replicates, level: float) -> int:
    """``replicates`` as an int of at least :func:`min_replicates` for ``level``, or ValueError."""
    replicates = check_positive_int(replicates, "replicates")
    floor = min_replicates(level)
    if replicates < floor:
        raise ValueError(
            f"{replicates} bootstrap replicate(s) cannot give a {level:g} interval: "
            f"it needs at least {floor} (2 / (1 - level))"
        )
    return replicates


def min_resampled_size(level: float) -> int:
    """The fewest images a set resampled with replacement needs for a ``level`` interval: the smallest
    ``k`` with ``C(2k - 1, k)`` distinct resamples at least :func:`min_replicates` (5 at 95%, 6 at 99%)."""
    k, floor = 2, min_replicates(level)
    while math.comb(2 * k - 1, k) < floor:
        k += 1
    return k


def too_few_to_resample(sizes: Iterable[int], level: float) -> bool:
    """Whether a set of one of these ``sizes`` is below :func:`min_resampled_size`: the ``level``
    interval of a statistic that resamples them is then not estimable (NaN)."""
    return min(sizes, default=0) < min_resampled_size(level)


#: The fewest images each of an iEAT's sets X, Y, A and B needs for its effect size d.
MIN_IEAT_SET = 2


def d_not_estimable(sizes: Mapping[str, int]) -> str:
    """Why an iEAT's effect size d is not estimable from sets of these ``sizes`` ({X, Y, A, B: images}), or
    "" when it is: a set of fewer than :data:`MIN_IEAT_SET` images. One image of X and one of Y give
    d = +-sqrt(2) whatever the embeddings (the SD of two scores is their gap over sqrt(2)); one image of A
    or B makes every score a similarity to that image, not to a class."""
    small = [f"{name} has {n}" for name, n in sizes.items() if n < MIN_IEAT_SET]
    if not small:
        return ""
    return f"d not estimable: {', '.join(small)} image(s); each of X, Y, A and B needs at least {MIN_IEAT_SET}"
