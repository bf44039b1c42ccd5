"""Input checks shared by the statistics modules: every error names the argument and what is wrong."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np


def as_embeddings(value, name: str, *, min_rows: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Check ``value`` as a (rows x dims) embedding array; return it as float64 with 1 / row norms.

    Raises ValueError naming ``name`` for non-numeric data, arrays that are not 2-D, fewer than
    ``min_rows`` rows, zero dims, NaN or infinite entries, and all-zero rows (whose cosine similarity is
    undefined). Rows whose squared norm over- or underflows are rescaled by their largest entry first,
    which changes no cosine. Unit rows are ``array * inv_norm[:, None]``.
    """
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as err:  # ragged nested lists and the like
        raise ValueError(f"{name} is not an array of numbers: {err}") from None
    if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.bool_)):
        raise ValueError(f"{name} must hold numbers, got dtype {array.dtype}")
    if np.issubdtype(array.dtype, np.complexfloating):
        raise ValueError(f"{name} must be real-valued, got dtype {array.dtype}")
    if array.ndim != 2:
        raise ValueError(f"{name} must be 2-D (rows x dims), got shape {array.shape}")
    rows, dims = array.shape
    if rows == 0:
        raise ValueError(f"{name} is empty (0 rows)")
    if rows < min_rows:
        noun = "row" if rows == 1 else "rows"
        raise ValueError(f"{name} has {rows} {noun}; at least {min_rows} are needed")
    if dims == 0:
        raise ValueError(f"{name} has 0 dims")
    array = array.astype(np.float64, copy=False)
    squared = np.einsum("ij,ij->i", array, array)
    if not (np.isfinite(squared).all() and squared.min() > 0):  # rare: find the bad row, or rescale
        finite = np.isfinite(array)
        if not finite.all():
            row = int(np.argwhere(~finite)[0, 0])
            what = "NaN" if np.isnan(array[row]).any() else "inf"
            raise ValueError(f"{name} contains {what} (first in row {row})")
        zero_rows = np.flatnonzero(~array.any(axis=1))
        if zero_rows.size:
            raise ValueError(f"{name} row {int(zero_rows[0])} is all zeros (cosine similarity is undefined)")
        array = array / np.abs(array).max(axis=1, keepdims=True)
        squared = np.einsum("ij,ij->i", array, array)
    return array, 1.0 / np.sqrt(squared)


def as_embedding_sets(arrays: Mapping, *, name=str, min_rows: int = 1) -> dict:
    """:func:`as_embeddings` of each array (key -> (rows, 1 / row norms)), each named ``name(key)`` in its
    errors; ValueError naming the first array whose number of dims differs from the first one's."""
    checked = {key: as_embeddings(value, name(key), min_rows=min_rows) for key, value in arrays.items()}
    dims = [(key, rows.shape[1]) for key, (rows, _) in checked.items()]
    for key, d in dims[1:]:
        if d != dims[0][1]:
            raise ValueError(f"{name(key)} has {d} dims but {name(dims[0][0])} has {dims[0][1]}")
    return checked


def check_seed(seed, name: str = "seed") -> int:
    """Return ``seed`` as a non-negative int (``None`` draws fresh OS entropy, which is then recorded)."""
    if seed is None:
        return int(np.random.SeedSequence().entropy)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"{name} must be a non-negative int or None, got {seed!r}")
    if seed < 0:
        raise ValueError(f"{name} must be non-negative, got {seed}")
    return int(seed)


def check_positive_int(value, name: str) -> int:
    """Return ``value`` as a positive int or raise ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def check_choice(value, name: str, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise ValueError listing them."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value


class Result:
    """Base of the frozen result dataclasses: ``as_dict()`` gives a plain dict for table rows."""

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class IntervalResult(Result):
    """An ``estimate`` with its two-sided ``level`` bootstrap interval from ``replicates`` draws of ``seed``."""

    estimate: float
    ci_low: float
    ci_high: float
    level: float
    replicates: int
    seed: int


def ieat_role_problems(test: Mapping) -> list[str]:
    """Each pair of roles of an iEAT ``{X, Y, A, B}`` given the same class: X = Y or A = B makes d 0/0,
    and a target set among the attributes (X = A, ...) measures its association with itself."""
    roles = ("X", "Y", "A", "B")
    return [
        f"{one} and {other} are both {test[one]!r} "
        + ("(the effect size would be 0/0)" if {one, other} in ({"X", "Y"}, {"A", "B"}) else "(a class takes one role)")
        for i, one in enumerate(roles)
        for other in roles[i + 1 :]
        if test[one] == test[other]
    ]
