"""Claims about groups of models, tested with models as units: what the data support, and how many models it takes.

A claim such as "supervised models retain their biases more than self-supervised ones" compares one value
per model (seeds averaged within it) between two groups (:func:`compare_networks`: an exact permutation
over the models' group labels), or, for "finetuning on dataset P changes d more than on dataset Q", the
same models under two conditions (:func:`compare_paired`: an exact sign-flip test over the models'
differences). Each claim has a direction; it is tested one-sided in that direction, and in the opposite
direction to tell "contradicted". :func:`claims_table` adjusts the claims' p-values by Holm over the claims
and words each verdict:

- ``supported``: the adjusted p of the claimed direction is below alpha;
- ``contradicted``: the adjusted p of the opposite direction is below alpha (a two-sided claim, "x and y
  differ", has no opposite);
- ``not testable with N models per group; at least M are needed``: the design's smallest p (its floor:
  ``1 / C(n_a + n_b, n_a)`` for groups, ``1 / 2^n`` for pairs) is not below ``alpha / m`` for ``m`` claims,
  Holm's first step, so no data could make it significant on its own;
- ``not supported``: testable, neither direction significant; the detectable difference (at ``alpha / m``
  and the stated power) says how large a true difference the design would have found.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy import stats

from biastransfer.stats._validation import Result, check_choice
from biastransfer.stats.attribution import (
    POWER_PARTITIONS,
    TIE_RTOL,
    Design,
    Tested,
    as_extreme,
    compare_networks,
    min_pvalue,
    smallest_shift,
)
from biastransfer.stats.multitest import adjust_pvalues

KINDS = ("groups", "paired")
_OPPOSITE = {"greater": "less", "less": "greater", "two-sided": None}


@dataclass(frozen=True)
class _Pairs(Result):
    n: int
    mean_difference: float
    sd_difference: float


@dataclass(frozen=True)
class PairedComparison(Tested, _Pairs):  # fields: _Pairs', then Tested's (a dataclass's follow its reversed MRO)
    """Outcome of :func:`compare_paired` (``x - y`` per model): the sign-flip p over ``permutations`` flips
    (``method`` exact or permutation), its floor ``min_pvalue``, the t interval of the mean difference at
    ``level``, and the true mean difference, in SDs of the differences (``detectable_shift``) and in the
    measure's units (``detectable_difference``), that the test detects with probability ``power``."""


def sign_flips(n: int, permutations: int = 100_000, seed: int = 0) -> tuple[np.ndarray, str]:
    """Rows of +-1 signs for ``n`` pairs: all 2^n (``"exact"``) when there are at most ``permutations``, else
    the observed signs (row 0, all +1) and ``permutations - 1`` random ones (``"permutation"``)."""
    if 2**n <= permutations:
        return np.array(list(itertools.product((1.0, -1.0), repeat=n))), "exact"
    drawn = np.random.default_rng(seed).choice((1.0, -1.0), size=(permutations - 1, n))
    return np.vstack([np.ones((1, n)), drawn]), "permutation"


def min_paired_pvalue(n: int, alternative: str = "two-sided", permutations: int = 100_000) -> float:
    """The smallest p the sign-flip test of ``n`` pairs can give (all flips, or the random ones)."""
    if 2**n > permutations:
        return 1.0 / permutations
    return (2.0 if alternative == "two-sided" else 1.0) / 2**n


def paired_pvalues(differences, flips: np.ndarray, alternative: str = "two-sided") -> np.ndarray:
    """Sign-flip p of the mean for each row of ``differences`` (data sets x pairs); ties count as extreme."""
    d = np.atleast_2d(np.asarray(differences, dtype=np.float64))
    observed = d.sum(axis=1, keepdims=True)
    tol = TIE_RTOL * np.abs(d).sum(axis=1, keepdims=True)
    return as_extreme(d @ flips.T, observed, tol, alternative).mean(axis=1)


def paired_power(n: int, shift: float, design: Design | None = None) -> float:
    """Probability that the sign-flip test of ``design`` rejects at its ``alpha`` for ``n`` normal differences
    of mean ``shift`` SDs."""
    design = design or Design()
    flips, _ = sign_flips(n, min(design.permutations, POWER_PARTITIONS), design.seed)
    sign = -1.0 if design.alternative == "less" else 1.0
    base = np.random.default_rng(design.seed).standard_normal((design.simulations, n)) + sign * shift
    return float(np.mean(paired_pvalues(base, flips, design.alternative) <= design.alpha))


def detectable_paired_shift(n: int, design: Design | None = None) -> float:
    """Smallest mean difference (in SDs of the differences, rounded up to 0.01) that the test of ``design``
    finds with probability ``design.power``; ``inf`` when the design cannot reach its ``alpha``."""
    design = design or Design()
    if min_paired_pvalue(n, design.alternative, design.permutations) > design.alpha:
        return math.inf
    return smallest_shift(lambda shift: paired_power(n, shift, design), design.power)


def compare_paired(x, y, design: Design | None = None) -> PairedComparison:
    """Compare the same models under two conditions (``x[i]`` and ``y[i]`` of model i) by their differences."""
    design = design or Design()
    x, y = (np.asarray(v, dtype=np.float64) for v in (x, y))
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"x and y must be 1-D of one value per model each, got shapes {x.shape} and {y.shape}")
    if x.size < 2:
        raise ValueError(f"{x.size} model(s) paired; at least 2 are needed")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("x or y contains a non-finite value")
    d = x - y
    flips, method = sign_flips(d.size, design.permutations, design.seed)
    sd = float(d.std(ddof=1))
    half = stats.t.ppf((1 + design.level) / 2, d.size - 1) * sd / math.sqrt(d.size) if sd > 0 else 0.0
    pvalue = float(paired_pvalues(d, flips, design.alternative)[0])
    floor = min_paired_pvalue(d.size, design.alternative, design.permutations)
    return PairedComparison(
        n=d.size,
        mean_difference=float(d.mean()),
        sd_difference=sd,
        ci_low=float(d.mean() - half),
        ci_high=float(d.mean() + half),
        **design.tested(pvalue, method, len(flips), floor, detectable_paired_shift(d.size, design), sd),
    )


def models_needed(alpha: float, *, kind: str, alternative: str = "greater", permutations: int = 100_000) -> int:
    """The fewest models per group (``kind="groups"``, equal groups) or paired models (``"paired"``) whose
    test can give a p below ``alpha``."""
    check_choice(kind, "kind", KINDS)
    for n in range(2, 64):
        floor = (
            min_pvalue(n, n, alternative, permutations)
            if kind == "groups"
            else min_paired_pvalue(n, alternative, permutations)
        )
        if floor < alpha:
            return n
    raise ValueError(f"no design of up to 63 models reaches alpha = {alpha}")


def _one_claim(claim: Mapping, design: Design) -> dict:
    """The test of one claim in its direction, and (one-sided claims) in the opposite one."""
    name, kind, direction = claim["name"], claim["kind"], claim["direction"]
    check_choice(kind, f"claim {name!r}: kind", KINDS)
    check_choice(direction, f"claim {name!r}: direction", tuple(_OPPOSITE))
    x, y = (np.asarray(claim[k], dtype=np.float64) for k in ("x", "y"))
    needed = models_needed(design.alpha, kind=kind, alternative=direction, permutations=design.permutations)
    if min(x.size, y.size) < 2:  # no test at all: a verdict of "not testable", not an error
        return _untestable(name, kind, claim.get("measure", ""), direction, x, y, design, needed)
    test = compare_networks if kind == "groups" else compare_paired
    claimed = test(x, y, replace(design, alternative=direction))
    against = _OPPOSITE[direction]
    p_opposite = test(x, y, replace(design, alternative=against)).pvalue if against else math.nan
    difference = claimed.difference if kind == "groups" else claimed.mean_difference
    return {
        "claim": name,
        "kind": kind,
        "measure": claim.get("measure", ""),
        "direction": direction,
        "n_x": int(x.size),
        "n_y": int(y.size),
        "difference": difference,
        "ci_low": claimed.ci_low,
        "ci_high": claimed.ci_high,
        "level": claimed.level,
        "p": claimed.pvalue,
        "p_opposite": p_opposite,
        "p_floor": claimed.min_pvalue,
        "method": claimed.method,
        "detectable_difference": claimed.detectable_difference,
        "models_needed": needed,
        "testable": claimed.min_pvalue < design.alpha,
    }


def _untestable(name, kind, measure, direction, x, y, design: Design, needed) -> dict:
    """The row of a claim with a group (or pair list) of fewer than 2 models: its difference, no test."""
    floor = (
        min_pvalue(x.size, y.size, direction, design.permutations)
        if kind == "groups"
        else min_paired_pvalue(x.size, direction, design.permutations)
    )
    difference = float(x.mean() - y.mean()) if x.size and y.size else math.nan
    return {
        "claim": name,
        "kind": kind,
        "measure": measure,
        "direction": direction,
        "n_x": int(x.size),
        "n_y": int(y.size),
        "difference": difference,
        "ci_low": math.nan,
        "ci_high": math.nan,
        "level": design.level,
        "p": math.nan,
        "p_opposite": math.nan,
        "p_floor": floor,
        "method": "none",
        "detectable_difference": math.inf,
        "models_needed": needed,
        "testable": False,
    }


def claim_verdict(row: Mapping, alpha: float, power: float = 0.8) -> str:
    """A claim's verdict in words from its Holm-adjusted p-values (columns of :func:`claims_table`)."""
    if row["p_adjusted"] < alpha:
        return "supported"
    if row["p_opposite_adjusted"] < alpha:
        return "contradicted"
    if not row["testable"]:
        sizes = row["n_x"] if row["n_x"] == row["n_y"] or row["kind"] == "paired" else f"{row['n_x']} and {row['n_y']}"
        unit = "models per group" if row["kind"] == "groups" else "paired models"
        return f"not testable with {sizes} {unit}; at least {row['models_needed']} are needed"
    return (
        f"not supported (a true difference of {row['detectable_difference']:.2g} would be found with {power:.0%} power)"
    )


def claims_table(claims: Sequence[Mapping], design: Design | None = None) -> pd.DataFrame:
    """One row per claim (``name``, ``kind`` groups or paired, ``direction`` greater, less or two-sided for ``x - y``,
    per-model values ``x`` and ``y``, optional ``measure``), each tested in its direction with ``design``,
    Holm-adjusted over the claims at ``design.alpha``, with its verdict."""
    design = design or Design()
    # each claim's own level, Holm's first step: its floor and detectable difference are judged against it
    each = replace(design, alpha=design.alpha / max(len(claims), 1))
    table = pd.DataFrame([_one_claim(c, each) for c in claims])
    if table.empty:
        return table
    table["p_adjusted"] = adjust_pvalues(table["p"].to_numpy(), "holm")
    table["p_opposite_adjusted"] = adjust_pvalues(table["p_opposite"].to_numpy(), "holm")
    table["verdict"] = [claim_verdict(r, design.alpha, design.power) for r in table.to_dict("records")]
    return table
