"""Attribution across networks: do networks whose training data differ differ in a network-level value?

An iEAT p-value re-partitions the images of one network, so it cannot say where an association came
from. Here the unit is the network: each network trained on one version of the data contributes one
value (its iEAT effect size d, or the prediction level's primary measure, the contrast of the test's two
objects' shifts: whether the biased data make networks amplify, not what one network does), and two
groups of networks that differ only in their training data are compared by the difference of their means. The p-value re-partitions the *networks* (exact over all
C(n_a + n_b, n_a) relabellings when there are at most ``permutations`` of them); Welch's t-test and
its confidence interval for the difference are reported beside it. With few networks the permutation
p-value has a floor (``min_pvalue``): 2 / C(2n, n) two-sided for n networks per group, which is
0.33 for 2 per group and 0.0079 for 5. ``detectable_shift`` states the power: the smallest true
difference, in between-network standard deviations, that the test detects with the given power.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from biastransfer.stats._validation import Result, check_choice, check_positive_int, check_seed
from biastransfer.stats.multitest import adjust_pvalues

ALTERNATIVES = ("two-sided", "greater", "less")
TIE_RTOL = 1e-11  # sums closer than this (relative to the sum of |values|) count as ties (every permutation test)
_BLOCK = 4_000_000  # (datasets x partitions x group size) entries gathered at once
POWER_PARTITIONS = 5_000  # relabellings per simulated data set in power simulations (exact up to 7 vs 7)


@dataclass(frozen=True)
class Design(Result):
    """How a comparison across networks (or models) is tested and powered, checked when made: the
    ``alternative``, at most ``permutations`` relabellings (all of them when there are no more), the
    interval's ``level``, and the power analysis: the true difference found with probability ``power`` at
    ``alpha``, from ``simulations`` simulated data sets. ``seed`` seeds the random relabellings and the
    simulations (``None``: fresh entropy, then recorded)."""

    alternative: str = "two-sided"
    permutations: int = 100_000
    level: float = 0.95
    alpha: float = 0.05
    power: float = 0.8
    simulations: int = 2000
    seed: int | None = 0

    def __post_init__(self):
        check_choice(self.alternative, "alternative", ALTERNATIVES)
        for name in ("level", "alpha", "power"):
            if not 0 < getattr(self, name) < 1:
                raise ValueError(f"{name} must be in (0, 1), got {getattr(self, name)}")
        object.__setattr__(self, "permutations", check_positive_int(self.permutations, "permutations"))
        object.__setattr__(self, "simulations", check_positive_int(self.simulations, "simulations"))
        object.__setattr__(self, "seed", check_seed(self.seed))

    def tested(self, pvalue: float, method: str, permutations: int, floor: float, shift: float, sd: float) -> dict:
        """The fields every comparison reports beside its estimate: its p-value (``method``, over ``permutations``
        relabellings) and floor, this design's settings, and the detectable ``shift`` in SDs and, times ``sd``, in
        the measure's units."""
        return dict(
            pvalue=pvalue,
            method=method,
            permutations=permutations,
            min_pvalue=floor,
            level=self.level,
            alternative=self.alternative,
            alpha=self.alpha,
            power=self.power,
            detectable_shift=shift,
            detectable_difference=shift * sd,
            seed=self.seed,
        )


@dataclass(frozen=True)
class Tested(Result):
    """The fields a comparison across networks or models reports after its estimate: the interval at
    ``level``, the permutation p-value (``method``, over ``permutations``), its floor ``min_pvalue``, and
    the :class:`Design`'s power analysis (:meth:`Design.tested` gives the fields but the interval)."""

    ci_low: float
    ci_high: float
    level: float
    pvalue: float
    method: str
    permutations: int
    min_pvalue: float
    alternative: str
    alpha: float
    power: float
    detectable_shift: float
    detectable_difference: float
    seed: int


@dataclass(frozen=True)
class _Groups(Result):
    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    sd_a: float
    sd_b: float
    difference: float
    pvalue_welch: float


@dataclass(frozen=True)
class NetworkComparison(Tested, _Groups):  # a dataclass's fields follow its reversed MRO: _Groups', then Tested's
    """Outcome of :func:`compare_networks` (group a minus group b).

    ``pvalue`` is the permutation p over relabellings of networks (``method`` exact or permutation,
    ``permutations`` of them including the observed one); ``min_pvalue`` is the smallest p this design
    can give; ``ci_low``/``ci_high`` are Welch's interval for ``difference`` at ``level`` (Welch's own p
    is ``pvalue_welch``); ``detectable_shift`` is the true difference, in between-network SDs, detected
    with probability ``power`` at ``alpha`` (``inf`` when ``min_pvalue > alpha``), and
    ``detectable_difference`` is that shift times the pooled SD of the observed values.
    """


def _values(value, name: str) -> np.ndarray:
    array = np.asarray(value, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one value per network), got shape {array.shape}")
    if array.size < 2:
        raise ValueError(f"{name} has {array.size} network(s); at least 2 per group are needed")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} contains a non-finite value (network {int(np.flatnonzero(~np.isfinite(array))[0])})")
    return array


def partitions(n_a: int, n_b: int, permutations: int = 100_000, seed: int = 0) -> tuple[np.ndarray, str]:
    """Index rows of group a's members: every subset of size ``n_a`` (``"exact"``) when there are at
    most ``permutations``, else the observed one (row 0: ``range(n_a)``) and ``permutations - 1``
    uniformly random subsets (``"permutation"``)."""
    n = n_a + n_b
    if math.comb(n, n_a) <= permutations:
        return np.array(list(itertools.combinations(range(n), n_a)), dtype=np.intp), "exact"
    rng = np.random.default_rng(seed)
    drawn = rng.permuted(np.tile(np.arange(n), (permutations - 1, 1)), axis=1)[:, :n_a]
    return np.vstack([np.arange(n_a)[None, :], drawn]), "permutation"


def permutation_pvalues(values, n_a: int, parts: np.ndarray, alternative: str = "two-sided") -> np.ndarray:
    """p-value of the difference of means for each row of ``values`` (datasets x networks, group a
    first), over the partitions ``parts`` (which include the observed one). Ties count as extreme."""
    values = np.atleast_2d(np.asarray(values, dtype=np.float64))
    center = n_a * values.mean(axis=1, keepdims=True)  # mean of sum_a' over all relabellings
    observed = values[:, :n_a].sum(axis=1, keepdims=True) - center
    tol = TIE_RTOL * np.abs(values).sum(axis=1, keepdims=True)
    out = np.empty(len(values))
    step = max(1, _BLOCK // (parts.size or 1))
    for start in range(0, len(values), step):
        rows = slice(start, start + step)
        sums = values[rows][:, parts].sum(axis=2) - center[rows]
        out[rows] = as_extreme(sums, observed[rows], tol[rows], alternative).mean(axis=1)
    return out


def as_extreme(sums: np.ndarray, observed: np.ndarray, tol: np.ndarray, alternative: str) -> np.ndarray:
    """Which relabelled (centred) ``sums`` are at least as extreme as ``observed`` in the direction of
    ``alternative``, ties within ``tol`` included."""
    if alternative == "greater":
        return sums >= observed - tol
    if alternative == "less":
        return sums <= observed + tol
    return np.abs(sums) >= np.abs(observed) - tol


def min_pvalue(n_a: int, n_b: int, alternative: str = "two-sided", permutations: int = 100_000) -> float:
    """The smallest p-value the permutation test can give with these group sizes."""
    count = math.comb(n_a + n_b, n_a)
    if count > permutations:
        return 1.0 / permutations
    return (2.0 if alternative == "two-sided" and n_a == n_b else 1.0) / count


def power(n_a: int, n_b: int, shift: float, design: Design | None = None) -> float:
    """Probability that the permutation test of ``design`` rejects at its ``alpha`` when group a's mean exceeds
    group b's by ``shift`` between-network SDs (normal networks; simulated with common random numbers)."""
    design = design or Design()
    return _power(_simulation(n_a, n_b, design), shift, design.alpha, design.alternative)


def _simulation(n_a: int, n_b: int, design: Design) -> dict:
    """Standard normal draws shared by every shift, with their sums over the relabellings (at most
    POWER_PARTITIONS). Shifting group a by ``t`` adds ``t`` times the relabelling's overlap with group a
    to every sum, so one matrix product serves every shift."""
    parts, _ = partitions(n_a, n_b, min(design.permutations, POWER_PARTITIONS), design.seed)
    base = np.random.default_rng(design.seed).standard_normal((design.simulations, n_a + n_b))
    member = np.zeros((len(parts), n_a + n_b))
    np.put_along_axis(member, parts, 1.0, axis=1)
    return dict(base=base, n_a=n_a, sums=base @ member.T, overlap=member[:, :n_a].sum(axis=1))


def _power(sim: dict, shift, alpha, alternative) -> float:
    """Share of the simulated data sets, group a shifted by ``shift``, whose permutation p is <= alpha
    (the sums and ties of :func:`permutation_pvalues`)."""
    base, n_a = sim["base"], sim["n_a"]
    shift = -shift if alternative == "less" else shift
    n = base.shape[1]
    center = n_a * (base.mean(axis=1, keepdims=True) + shift * n_a / n)
    observed = base[:, :n_a].sum(axis=1, keepdims=True) + shift * n_a - center
    shifted_abs = np.abs(base[:, :n_a] + shift).sum(axis=1) + np.abs(base[:, n_a:]).sum(axis=1)
    tol = TIE_RTOL * shifted_abs[:, None]
    sums = sim["sums"] + shift * sim["overlap"] - center
    return float(np.mean(as_extreme(sums, observed, tol, alternative).mean(axis=1) <= alpha))


def detectable_shift(n_a: int, n_b: int, design: Design | None = None) -> float:
    """Smallest shift (in between-network SDs, rounded up to 0.01) that the test of ``design`` finds with
    probability ``design.power``; ``inf`` when the design cannot reach a p-value of its ``alpha`` at all."""
    design = design or Design()
    if min_pvalue(n_a, n_b, design.alternative, design.permutations) > design.alpha:
        return math.inf
    sim = _simulation(n_a, n_b, design)
    return smallest_shift(lambda shift: _power(sim, shift, design.alpha, design.alternative), design.power)


def smallest_shift(power_at: Callable[[float], float], target: float) -> float:
    """The smallest shift, rounded up to 0.01, whose ``power_at(shift)`` (increasing) reaches ``target``: doubling
    from 1, then bisection; ``inf`` past 1000."""
    low, high = 0.0, 1.0
    while power_at(high) < target:
        low, high = high, 2 * high
        if high > 1e3:
            return math.inf
    while high - low > 0.01:
        mid = (low + high) / 2
        low, high = (low, mid) if power_at(mid) >= target else (mid, high)
    return math.ceil(high * 100) / 100


def compare_networks(a, b, design: Design | None = None) -> NetworkComparison:
    """Compare the values of networks in group ``a`` with those in group ``b`` (one value per network)."""
    design = design or Design()
    a, b = _values(a, "a"), _values(b, "b")
    parts, method = partitions(a.size, b.size, design.permutations, design.seed)
    pvalue = float(permutation_pvalues(np.concatenate([a, b]), a.size, parts, design.alternative)[0])
    from scipy import stats  # here, not at the top: every iEAT job imports detectable_shift from this module

    welch_p = stats.ttest_ind(a, b, equal_var=False, alternative=design.alternative).pvalue
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(design.level)  # two-sided interval
    pooled_sd = math.sqrt(((a.size - 1) * a.var(ddof=1) + (b.size - 1) * b.var(ddof=1)) / (a.size + b.size - 2))
    floor = min_pvalue(a.size, b.size, design.alternative, design.permutations)
    return NetworkComparison(
        n_a=a.size,
        n_b=b.size,
        mean_a=float(a.mean()),
        mean_b=float(b.mean()),
        sd_a=float(a.std(ddof=1)),
        sd_b=float(b.std(ddof=1)),
        difference=float(a.mean() - b.mean()),
        ci_low=float(ci.low),
        ci_high=float(ci.high),
        pvalue_welch=float(welch_p),
        **design.tested(pvalue, method, len(parts), floor, detectable_shift(a.size, b.size, design), pooled_sd),
    )


def network_values(ieat: pd.DataFrame, *, analysis_set: str, test: str, stage: str, models: Sequence[str]) -> dict:
    """``{model: d}`` from an iEAT summary table: the pretrained d (``stage="pretrained"``), or the mean
    d over the finetuning seeds of ``stage="ft-<dataset>"``."""
    sel = ieat[(ieat["analysis_set"] == analysis_set) & (ieat["test"] == test)]
    if stage == "pretrained":
        sel = sel[sel["stage"] == "pretrained"]
    else:
        sel = sel[(sel["stage"] != "pretrained") & ("ft-" + sel["finetune_dataset"].astype(str) == stage)]
    out = {}
    for model in models:
        rows = sel[sel["model"] == model]
        if rows.empty:
            raise ValueError(f"no iEAT {test!r} on {analysis_set!r} at stage {stage!r} for model {model!r}")
        out[model] = float(rows["effect_size"].mean())
    return out


#: What a comparison measures on each network: its iEAT effect size d, or the prediction level's primary measure
#: (the contrast of the test's two objects' shifts towards the first attribute, the link summary's ``contrast``).
MEASURES = ("d", "contrast")


def prediction_values(link: pd.DataFrame, *, analysis_set: str, test: str, stage: str, models: Sequence[str]) -> dict:
    """``{model: contrast}`` from a link summary: each model's finetuned networks on the dataset of
    ``stage="ft-<dataset>"``, their seeds pooled (the one seed where a model has one), as the results model's
    prediction verdicts read them."""
    if stage == "pretrained" or not stage.startswith("ft-"):
        raise ValueError(
            f"the prediction contrast is measured on finetuned networks (stage ft-<dataset>), not {stage!r}"
        )
    sel = link[
        (link["analysis_set"] == analysis_set)
        & (link["test"] == test)
        & (link["network"] == "finetuned")
        & ("ft-" + link["dataset"].astype(str) == stage)
    ]
    out = {}
    for model in models:
        rows = sel[sel["model"] == model]
        if rows.empty:
            raise ValueError(
                f"no prediction contrast of {test!r} on {analysis_set!r} at stage {stage!r} for model {model!r}"
            )
        pooled = rows[rows["seed"].astype(str) == "pooled"]
        out[model] = float((pooled if not pooled.empty else rows).iloc[0]["contrast"])
    return out


def attribution_table(
    ieat: pd.DataFrame,
    specs: Sequence[Mapping],
    design: Design | None = None,
    link: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per pair of groups of every spec ``{name, analysis_set, test, stage, measure, groups: {label:
    [models]}}``, compared by :func:`compare_networks` with ``design``; ``pvalue_holm`` adjusts the pairs of
    one spec together. ``measure`` (:data:`MEASURES`) is ``d`` (default; :func:`network_values` of ``ieat``) or
    ``contrast``: the prediction level's primary measure (:func:`prediction_values` of the ``link`` summary), so
    that networks are the units of "do these training data make networks amplify"."""
    rows = []
    for spec in specs:
        measure = check_choice(spec.get("measure", "d"), f"comparison {spec['name']}: measure", MEASURES)
        if measure == "contrast" and link is None:
            raise ValueError(f"comparison {spec['name']} measures the prediction contrast: it needs the link summary")
        values_of = network_values if measure == "d" else prediction_values
        values = {
            label: values_of(
                ieat if measure == "d" else link,
                analysis_set=spec["analysis_set"],
                test=spec["test"],
                stage=spec.get("stage", "pretrained"),
                models=models,
            )
            for label, models in spec["groups"].items()
        }
        first = len(rows)
        for label_a, label_b in itertools.combinations(values, 2):
            result = compare_networks(list(values[label_a].values()), list(values[label_b].values()), design)
            rows.append(
                {
                    "name": spec["name"],
                    "analysis_set": spec["analysis_set"],
                    "test": spec["test"],
                    "stage": spec.get("stage", "pretrained"),
                    "measure": measure,
                    "group_a": label_a,
                    "group_b": label_b,
                    **result.as_dict(),
                    "networks_a": "; ".join(f"{m} {v:.3f}" for m, v in values[label_a].items()),
                    "networks_b": "; ".join(f"{m} {v:.3f}" for m, v in values[label_b].items()),
                }
            )
        holm = adjust_pvalues([r["pvalue"] for r in rows[first:]], method="holm")
        for row, p in zip(rows[first:], holm):
            row["pvalue_holm"] = float(p)
    return pd.DataFrame(rows)
