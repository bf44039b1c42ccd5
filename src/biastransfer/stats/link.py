"""The link across levels: does a network's embedding-level association predict what its predictions do?

An iEAT ``(X, Y, A, B)`` is *linked* to a finetuning dataset when one of its pairs is the dataset's protected
attributes and the other two of its tasks (:func:`linked_test`). A positive d says the first target goes with
the first attribute set (X with A and Y with B). Its prediction-level counterpart (:func:`association_contrast`)
is how much more the network's predictions move the first object towards the first attribute than they move the
second object: ``shift(a1, o1) - shift(a1, o2)``, with ``shift`` the per-term shift of
:func:`~biastransfer.stats.amplification.attribute_shift`, and its percentile bootstrap interval over images
(the amplification job's resamples: the same seed draws the same images). Positive: the predictions act on the
association the iEAT measures. Its two-sided bootstrap p inverts that interval; the primary contrasts of one
network family (one per linked iEAT, seeds pooled) are one family of tests, adjusted within it
(:func:`family_adjusted`).

Across networks, :func:`rank_correlation` is Spearman's rho between the two measures with a Fisher-z interval
of Bonett & Wright's variance ``(1 + rho^2 / 2) / (n - 3)`` (Psychometrika 65, 2000). Where rho is exactly +-1,
z is infinite: the interval is then the one of the nearest rho one swap of adjacent ranks gives,
``1 - 12 / (n (n^2 - 1))``, closed at +-1, so a perfect agreement among few networks keeps the width its n
allows. A verdict needs an interval that could exclude 0: fewer networks than :func:`min_networks` (6 at 95%)
are too few to tell.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import pandas as pd

from biastransfer.stats._validation import IntervalResult, Result
from biastransfer.stats.amplification import attribute_shifts, bias_amplifications
from biastransfer.stats.bootstrap import BOOTSTRAP, bootstrap_pvalue, check_level, percentile_interval
from biastransfer.stats.multitest import METHODS, adjust_pvalues

#: The verdicts of :func:`rank_correlation` (the ``too few`` one is followed by the numbers).
TOGETHER = "across networks the embedding-level and prediction-level measures rise together (rho above 0)"
OPPOSITE = "across networks the prediction-level measure falls as the embedding-level one rises (rho below 0)"
UNRELATED = "no rank correlation between the levels can be told (the interval holds 0)"
TOO_FEW = "too few networks to tell"


@dataclass(frozen=True)
class RankCorrelation(Result):
    """Spearman's ``estimate`` over ``n`` networks with its Fisher-z (Bonett-Wright) ``level`` interval;
    ``min_n``: the fewest networks whose interval could exclude 0; ``verdict`` in words."""

    estimate: float
    ci_low: float
    ci_high: float
    level: float
    n: int
    min_n: int
    verdict: str


@dataclass(frozen=True)
class ContrastResult(IntervalResult):
    """The shift of ``first`` minus that of ``second`` towards ``attribute`` (mean over ``n_seeds``), with its
    percentile bootstrap interval over ``n_images`` images and the two-sided bootstrap ``pvalue`` of "the
    contrast is 0" that inverts it (never below ``pvalue_floor = 2 / (replicates + 1)``)."""

    attribute: str
    first: str
    second: str
    n_images: int
    n_seeds: int
    pvalue: float
    pvalue_floor: float


def _ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties given their mean rank."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(1, len(values) + 1)
    unique, inverse = np.unique(values, return_inverse=True)
    if len(unique) < len(values):
        ranks = (np.bincount(inverse, weights=ranks) / np.bincount(inverse))[inverse]
    return ranks


def spearman(x, y) -> float:
    """Spearman's rho of two equal-length sequences (NaN when either is constant)."""
    rx, ry = _ranks(np.asarray(x, dtype=float)), _ranks(np.asarray(y, dtype=float))
    rx, ry = rx - rx.mean(), ry - ry.mean()
    scale = math.sqrt(float(rx @ rx) * float(ry @ ry))
    return float(rx @ ry / scale) if scale > 0 else math.nan


def spearman_interval(rho: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """Fisher-z interval of a Spearman rho over ``n`` pairs with Bonett & Wright's variance (NaN below n = 4)."""
    if n < 4 or math.isnan(rho):
        return math.nan, math.nan
    edge = 1 - 12 / (n * (n * n - 1))  # one swap of adjacent ranks: a finite z for rho = +-1
    r = max(-edge, min(edge, rho))
    half = NormalDist().inv_cdf((1 + level) / 2) * math.sqrt((1 + r * r / 2) / (n - 3))
    z = math.atanh(r)
    low, high = math.tanh(z - half), math.tanh(z + half)
    return (low, 1.0) if rho >= edge else (-1.0, high) if rho <= -edge else (low, high)


def min_networks(level: float = 0.95) -> int:
    """The fewest networks whose interval excludes 0 for a perfect rank agreement: below it, no data can."""
    level = check_level(level)
    n = 4
    while spearman_interval(1.0, n, level)[0] <= 0:
        n += 1
    return n


def rank_correlation(x: Sequence[float], y: Sequence[float], level: float = 0.95) -> RankCorrelation:
    """Spearman's rho between two measures of the same networks, its interval, and a verdict in words."""
    level = check_level(level)
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be 1-D of the same length, got shapes {x.shape} and {y.shape}")
    keep = np.isfinite(x) & np.isfinite(y)
    x, y, n, need = x[keep], y[keep], int(keep.sum()), min_networks(level)
    rho = spearman(x, y) if n >= 2 else math.nan
    low, high = spearman_interval(rho, n, level)
    if n < need:
        verdict = f"{TOO_FEW} ({n} networks; a {level:.0%} interval could exclude 0 from {need} on)"
    elif math.isnan(rho):
        verdict = "no rank correlation defined (one measure is the same for every network)"
    elif low > 0:
        verdict = TOGETHER
    elif high < 0:
        verdict = OPPOSITE
    else:
        verdict = UNRELATED
    return RankCorrelation(rho, low, high, level, n, need, verdict)


def linked_test(test: Mapping, attributes: Sequence[str], tasks: Sequence[str]) -> tuple[str, str, str] | None:
    """``(first attribute, first object, second object)`` of an iEAT ``{X, Y, A, B}`` whose one pair is among
    ``attributes`` and the other among ``tasks`` (so that d > 0 pairs the first attribute with the first
    object), or None when it is not linked."""
    attributes, tasks = set(attributes), set(tasks)
    if {test["X"], test["Y"]} <= attributes and {test["A"], test["B"]} <= tasks:
        return test["X"], test["A"], test["B"]
    if {test["A"], test["B"]} <= attributes and {test["X"], test["Y"]} <= tasks:
        return test["A"], test["X"], test["Y"]
    return None


def association_contrast(
    attributes,
    truth,
    predictions,
    *,
    attribute: str,
    first: str,
    second: str,
    attribute_names: Sequence[str],
    task_names: Sequence[str],
    replicates: int = BOOTSTRAP,
    level: float = 0.95,
    seed: int = 0,
) -> ContrastResult:
    """``shift(attribute, first) - shift(attribute, second)`` of the predictions (one n x |T| 0/1 matrix, or one
    per seed: the mean over seeds) with its percentile bootstrap interval (:mod:`.amplification`'s resamples)."""
    names, tasks = list(attribute_names), list(task_names)
    for value, pool, what in ((attribute, names, "attribute"), (first, tasks, "task"), (second, tasks, "task")):
        if value not in pool:
            raise ValueError(f"{what} {value!r} is not one of {', '.join(pool)}")
    result = bias_amplifications(
        attributes,
        truth,
        predictions,
        measures=["directional"],
        attribute_names=names,
        task_names=tasks,
        replicates=replicates,
        level=level,
        seed=seed,
    )["directional"]
    observed, reps = attribute_shifts(result)
    a, i, j = names.index(attribute), tasks.index(first), tasks.index(second)
    estimate, draws = observed[a, i] - observed[a, j], reps[:, a, i] - reps[:, a, j]
    low, high = percentile_interval(draws, result.level)
    finite = int(np.isfinite(draws).sum())
    return ContrastResult(
        float(estimate),
        float(low),
        float(high),
        result.level,
        result.replicates,
        result.seed,
        attribute,
        first,
        second,
        result.n_images,
        result.n_seeds,
        bootstrap_pvalue(draws),
        2 / (finite + 1) if finite else math.nan,
    )


#: The link table's columns: the iEAT and the network, its embedding-level d (pretrained, its own, the change),
#: the prediction-level terms of the two objects towards the first attribute and their contrast.
_TERM_PARTS = [
    f"{m}_{o}{b}" for m in ("directional", "shift", "zhao") for o in ("first", "second") for b in ("", "_low", "_high")
]
LINK_COLUMNS = (
    "analysis_set",
    "test",
    "role",
    "dataset",
    "network",
    "model",
    "seed",
    "attribute",
    "first",
    "second",
    "threshold",
    "d_pretrained",
    "d_pretrained_low",
    "d_pretrained_high",
    "d",
    "d_low",
    "d_high",
    "delta_d",
    "delta_low",
    "delta_high",
    *_TERM_PARTS,
    "contrast",
    "contrast_low",
    "contrast_high",
    "contrast_pvalue",
    "contrast_pvalue_floor",
    "primary",
    "family_size",
    *(f"contrast_pvalue_{method}" for method in METHODS),
    "level",
    "n_images",
)
CORRELATION_COLUMNS = (
    "analysis_set",
    "test",
    "role",
    "dataset",
    "embedding",
    "prediction",
    "networks",
    "n",
    "estimate",
    "ci_low",
    "ci_high",
    "level",
    "min_n",
    "method",
    "verdict",
)
#: The embedding-level measure each correlation reads, and which networks have it.
EMBEDDING_MEASURES = {"d": "every network's own iEAT d", "delta_d": "the finetuned networks' change of d"}
METHOD = "Spearman; Fisher z, Bonett-Wright variance"


def _stage(network: str, dataset: str, seed: str) -> str:
    return f"{'ft' if network == 'finetuned' else 'scratch'}-{dataset}-seed{seed}"


def link_table(
    tests: Mapping[str, Sequence[Mapping]],
    evaluations: Mapping[str, tuple[Sequence[str], Sequence[str]]],
    contrasts: Mapping[tuple, ContrastResult],
    ieat,
    change,
    terms,
    threshold: str,
):
    """One row per linked iEAT of ``tests`` ({analysis set: iEATs}) and network with a contrast; ``evaluations``
    gives each dataset's (attributes, tasks), ``contrasts`` {(dataset, network, model, seed, attribute, first,
    second): result}, and ``ieat`` (every stage's iEATs), ``change`` and ``terms`` are the summaries (the terms
    read at ``threshold``). A seed ``pooled`` row has the predictions pooled over seeds and no per-seed d."""
    by_stage = ieat.assign(stage=ieat["stage"].astype(str)).set_index(["analysis_set", "model", "stage", "test"])
    deltas = change.assign(seed=change["seed"].map(lambda v: str(int(float(v))))).set_index(
        ["analysis_set", "model", "finetune_dataset", "seed", "test"]
    )
    chosen = terms[terms["threshold"].astype(str) == threshold].assign(seed=lambda f: f["seed"].astype(str))
    chosen = chosen.set_index(["dataset", "network", "model", "seed", "measure", "attribute", "task"])

    def pick(frame, key, columns):
        return frame.loc[key, columns].tolist() if key in frame.index else [math.nan] * len(columns)

    rows = []
    for analysis_set, listed in tests.items():
        for test in listed:
            for dataset, (attributes, tasks) in evaluations.items():
                link = linked_test(test, attributes, tasks)
                if link is None:
                    continue
                attribute, first, second = link
                for key, result in contrasts.items():
                    if key[0] != dataset or key[4:] != link:
                        continue
                    _, network, model, seed = key[:4]
                    row = {
                        "analysis_set": analysis_set,
                        "test": test["name"],
                        "role": test.get("role", ""),
                        "dataset": dataset,
                        "network": network,
                        "model": model,
                        "seed": seed,
                        "attribute": attribute,
                        "first": first,
                        "second": second,
                        "threshold": threshold,
                    }
                    ci = ["effect_size", "ci_low", "ci_high"]
                    row |= dict(
                        zip(
                            ("d_pretrained", "d_pretrained_low", "d_pretrained_high"),
                            pick(by_stage, (analysis_set, model, "pretrained", test["name"]), ci),
                        )
                    )
                    own = (analysis_set, model, _stage(network, dataset, seed), test["name"])
                    row |= dict(zip(("d", "d_low", "d_high"), pick(by_stage, own, ci)))
                    moved = (analysis_set, model, dataset, seed, test["name"])
                    row |= dict(
                        zip(
                            ("delta_d", "delta_low", "delta_high"),
                            pick(deltas, moved, ["delta_d", "ci_low", "ci_high"])
                            if network == "finetuned"
                            else [math.nan] * 3,
                        )
                    )
                    for measure, columns in (
                        ("directional", ["term", "ci_low", "ci_high"]),
                        ("shift", ["shift", "shift_low", "shift_high"]),
                        ("zhao", ["term", "ci_low", "ci_high"]),
                    ):
                        for which, obj in (("first", first), ("second", second)):
                            at = (
                                dataset,
                                network,
                                model,
                                seed,
                                "zhao" if measure == "zhao" else "directional",
                                attribute,
                                obj,
                            )
                            row |= dict(
                                zip([f"{measure}_{which}{b}" for b in ("", "_low", "_high")], pick(chosen, at, columns))
                            )
                    row |= {
                        "contrast": result.estimate,
                        "contrast_low": result.ci_low,
                        "contrast_high": result.ci_high,
                        "contrast_pvalue": result.pvalue,
                        "contrast_pvalue_floor": result.pvalue_floor,
                        "level": result.level,
                        "n_images": result.n_images,
                    }
                    rows.append(row)
    return family_adjusted(pd.DataFrame(rows, columns=list(LINK_COLUMNS)))


#: What makes one family of primary prediction measures: one network family (its seeds pooled) on one dataset.
FAMILY = ("dataset", "network", "model")
#: What one primary measure is of: a linked iEAT in one network family.
PAIR = ("analysis_set", "test", *FAMILY)
#: How the contrast's p is computed.
P_METHOD = "percentile bootstrap, two-sided (inverts the interval)"


def family_adjusted(table: pd.DataFrame) -> pd.DataFrame:
    """The link table with its primary measures marked and adjusted: per linked iEAT and network family, the
    contrast pooled over seeds (its one seed's where it has one) is ``primary``; the primary contrasts of one
    :data:`FAMILY` are one family of ``family_size`` tests, their ``contrast_pvalue`` adjusted within it by each
    of :data:`~biastransfer.stats.multitest.METHODS` (``contrast_pvalue_holm``, ...). Other rows are exploratory
    (``primary`` False, no adjusted p)."""
    seed = table["seed"].astype(str)
    has_pooled = (seed == "pooled").groupby([table[k] for k in PAIR], sort=False).transform("any")
    first_seed = ~table.assign(seed=seed).duplicated(list(PAIR))
    primary = (seed == "pooled") | (~has_pooled & first_seed)
    out = table.assign(primary=primary.astype(bool), family_size=pd.NA)
    for method in METHODS:
        out[f"contrast_pvalue_{method}"] = math.nan
    for _, rows in out[primary].groupby(list(FAMILY), sort=False):
        out.loc[rows.index, "family_size"] = int(rows["contrast_pvalue"].notna().sum())
        for method in METHODS:
            out.loc[rows.index, f"contrast_pvalue_{method}"] = adjust_pvalues(
                rows["contrast_pvalue"].to_numpy(float), method
            )
    return out.astype({"family_size": "Int64"})


def correlation_table(table, level: float = 0.95):
    """Per linked iEAT and dataset, the rank correlation over the per-seed networks of each
    :data:`EMBEDDING_MEASURES` with the contrast."""
    rows = []
    networks = table[table["seed"].astype(str) != "pooled"]
    for (analysis_set, test, dataset), part in networks.groupby(["analysis_set", "test", "dataset"], sort=False):
        for embedding, words in EMBEDDING_MEASURES.items():
            result = rank_correlation(part[embedding], part["contrast"], level)
            rows.append(
                {
                    "analysis_set": analysis_set,
                    "test": test,
                    "role": part["role"].iloc[0],
                    "dataset": dataset,
                    "embedding": embedding,
                    "prediction": "contrast",
                    "networks": words,
                    "n": result.n,
                    "estimate": result.estimate,
                    "ci_low": result.ci_low,
                    "ci_high": result.ci_high,
                    "level": result.level,
                    "min_n": result.min_n,
                    "method": METHOD,
                    "verdict": result.verdict,
                }
            )
    return pd.DataFrame(rows, columns=list(CORRELATION_COLUMNS))
