"""Linear CKA (Kornblith, Norouzi, Lee and Hinton, ICML 2019): how much of a representation's linear structure
another representation of the same images keeps.

With ``K = X X^T`` and ``L = Y Y^T`` (rows: images; columns centred), linear CKA is
``HSIC(K, L) / sqrt(HSIC(K, K) HSIC(L, L))``, which equals ``||Y^T X||_F^2 / (||X^T X||_F ||Y^T Y||_F)``: 1 for
representations that differ by a rotation and a scale, near 0 for unrelated ones, and not invariant to a general
linear map (a stretched axis changes it). Everything is computed in the n x n Gram space of the images, so the
cost does not grow with the number of dimensions beyond forming the Gram matrices once.

The interval over images is the delete-one jackknife's: ``estimate +- z se`` with ``se`` from the n CKAs that
leave one image out (in closed form from the Gram matrices: O(n^2) for all n), clipped to [0, 1]. A bootstrap
that draws images with replacement does not work here: a drawn-twice image pairs with its copy as with itself,
and with more dimensions than images (where an image's self-similarity dwarfs its similarity to others) that
inflates every resample's CKA, so that all replicates lie above the estimate (docs/statistics.md, "Linear CKA").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy import special  # the normal quantile, without scipy.stats' import cost

from biastransfer.stats._validation import Result
from biastransfer.stats.bootstrap import check_level

METHOD = "jackknife normal"


@dataclass(frozen=True)
class CKAResult(Result):
    """Linear CKA (``estimate``) of ``n`` images with its ``level`` interval ``estimate +- z se`` (clipped to
    [0, 1]; ``method``), ``se`` the delete-one jackknife's standard error over the images."""

    estimate: float
    ci_low: float
    ci_high: float
    se: float
    level: float
    n: int
    method: str = METHOD


def _embeddings(value, name: str) -> np.ndarray:
    """``value`` as a float64 (rows x dims) array whose columns are centred, or ValueError naming ``name``."""
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} is not an array of numbers: {err}") from None
    if not (np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.bool_)) or np.iscomplexobj(array):
        raise ValueError(f"{name} must hold numbers (real), got dtype {array.dtype}")
    if array.ndim != 2:
        raise ValueError(f"{name} must be 2-D (images x dims), got shape {array.shape}")
    if array.shape[0] < 3 or array.shape[1] < 1:
        raise ValueError(f"{name} has shape {array.shape}; linear CKA with an interval needs at least 3 images")
    array = array.astype(np.float64)
    if not np.isfinite(array).all():
        raise ValueError(f"{name} contains NaN or inf (first in row {int(np.argwhere(~np.isfinite(array))[0, 0])})")
    centred = array - array.mean(axis=0)
    if not np.any(np.abs(centred) > 1e-12 * max(np.abs(array).max(), 1e-300)):
        raise ValueError(f"{name} does not vary over the rows (every image has the same embedding): CKA is 0/0")
    return centred


class CKAGrams:
    """The centred Gram matrices of a ``reference`` embedding and of ``others`` ({name: embedding}) of the same
    images, for the CKA of each other network against the reference, observed and leaving out each image
    (``name``: the reference's name in errors)."""

    def __init__(self, reference, others: Mapping, name: str = "reference"):
        x = _embeddings(reference, name)
        self.n = len(x)
        self.names = list(others)
        self._k = x @ x.T
        self._grams = {}
        for other, value in others.items():
            y = _embeddings(value, str(other))
            if len(y) != self.n:
                raise ValueError(
                    f"{other} must embed the same images as {name}: {name} has {self.n} rows, {other} has {len(y)}"
                )
            self._grams[other] = y @ y.T

    def estimates(self) -> dict:
        """{name: the linear CKA against the reference}."""
        kk = np.sum(self._k * self._k)
        return {name: _ratio(np.sum(self._k * g), kk, np.sum(g * g)) for name, g in self._grams.items()}

    def left_out(self) -> np.ndarray:
        """``networks x n``: the CKA of each network without image i, for every i (NaN where the other images do
        not vary on one side)."""
        kk = _hsic_without_each(self._k, self._k)
        out = np.empty((len(self._grams), self.n))
        for i, g in enumerate(self._grams.values()):
            out[i] = _ratio(_hsic_without_each(self._k, g), kk, _hsic_without_each(g, g))
        return out


def _hsic_without_each(g: np.ndarray, h: np.ndarray) -> np.ndarray:
    """The HSIC numerator (HSIC times (n - 2)^2: the CKA is a ratio of three of them) of the n - 1 images left when
    image i is left out, for every i, from the centred Gram matrices ``g`` and ``h`` of all n (rows summing to 0). With counts ``w = 1 - e_i``, ``m = n - 1``, ``a = g w = -g e_i``
    and ``b = h w``, the HSIC numerator ``w^T (g * h) w - 2 / m sum_j w_j a_j b_j + (w^T g w)(w^T h w) / m^2`` is
    ``S - 2 r_i + g_ii h_ii - 2 / m (r_i - g_ii h_ii) + g_ii h_ii / m^2`` with ``S = sum(g * h)`` and
    ``r = (g * h) 1``."""
    m = len(g) - 1
    gh = g * h
    r, diag = gh.sum(axis=1), np.diagonal(g) * np.diagonal(h)
    return gh.sum() - 2 * r + diag - 2 / m * (r - diag) + diag / m**2


def _ratio(kl, kk, ll):
    """``kl / sqrt(kk ll)`` in [0, 1] (it is, up to rounding); NaN where a self-HSIC is 0 (no variance)."""
    kl, kk, ll = (np.asarray(v, dtype=np.float64) for v in (kl, kk, ll))
    scale = np.sqrt(kk * ll)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(scale > 0, np.clip(kl / scale, 0.0, 1.0), np.nan)
    return float(out) if out.ndim == 0 else out


def jackknife_interval(
    estimate: float, left_out: np.ndarray, level: float, bounds: tuple[float, float] = (0.0, 1.0)
) -> CKAResult:
    """The delete-one jackknife interval ``estimate +- z se`` (clipped to ``bounds``: a CKA's [0, 1], or a difference
    of two CKAs' [-1, 1]) from the n values of the statistic with each image left out (NaN where one is NaN)."""
    n = left_out.size
    finite = left_out[np.isfinite(left_out)]
    se = float(np.sqrt((n - 1) / n * np.sum((finite - finite.mean()) ** 2))) if finite.size == n else math.nan
    half = special.ndtri((1 + level) / 2) * se
    low, high = float(max(bounds[0], estimate - half)), float(min(bounds[1], estimate + half))
    return CKAResult(estimate, low, high, se, level, n)


def paired_cka(
    reference, others: Mapping, level: float = 0.95, *, name: str = "reference"
) -> tuple[dict[str, CKAResult], CKAResult]:
    """The linear CKA of each of ``others`` ({name: embedding}) against ``reference`` (the same images, row for
    row), and their mean, each with its jackknife interval (the mean's from the means of the leave-one-out values:
    every network leaves out the same image); ``name``: the reference's name in errors."""
    level = check_level(level)
    if not others:
        raise ValueError("paired_cka: no other network to compare with the reference")
    grams = CKAGrams(reference, others, name)
    estimates, left_out = grams.estimates(), grams.left_out()
    results = {other: jackknife_interval(estimates[other], left_out[i], level) for i, other in enumerate(grams.names)}
    return results, jackknife_interval(float(np.mean(list(estimates.values()))), left_out.mean(axis=0), level)


def linear_cka(x, y, level: float = 0.95) -> CKAResult:
    """Linear CKA between two embeddings of the same images (``x``: n x d1, ``y``: n x d2, row for row) with its
    delete-one jackknife interval over the images at ``level``.

    ValueError for arrays that are not 2-D numbers, NaN or inf, different numbers of rows, fewer than 3 rows, or
    a side whose rows are all equal (CKA is 0/0).
    """
    results, _ = paired_cka(x, {"y": y}, level, name="x")
    return results["y"]
