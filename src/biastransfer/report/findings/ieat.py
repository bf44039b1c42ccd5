"""The run's findings in words (reStructuredText): every configured iEAT and the pooled BTS, with intervals.

Verdicts follow the run's one significance rule (report.formatting.Significance), as the tables' and
figures' stars do (one family per table). An effect is never hidden by the direction of a one-sided test:
|d| >= 0.5 against the tested direction is said in words with its two-sided p-value
(report.formatting.OPPOSITE_EFFECT). A p-value at its method's floor is written as a bound. Every d is
given with its raw association (numerator) and pooled SD (denominator); a change of d that comes from the
SD alone is said in words (stats.change_tables.change_from_spread); a result that is not significant
carries the smallest |d| the test detects at its set sizes, so that it is not read as no association.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from biastransfer.report.findings.prose import interval, value_range
from biastransfer.report.formatting import (
    ADJUSTMENT_NAMES,
    OPPOSITE_EFFECT,
    Significance,
    adjusted_floor,
    opposite_direction,
    p_text,
)
from biastransfer.stats.change_tables import SPREAD_SHARE, change_from_spread

ROLE_TEXT = {
    "planted": "a planted association (a known answer: the data were built to show it)",
    "control": "a control pair with no planted association",
    "exploratory": "an association under test",
}


#: What the findings say of a d that is NaN without a recorded reason (a set below 2 images, or no spread).
NOT_ESTIMABLE = "d not estimable (a set of fewer than 2 images, or scores without spread)"

IEAT_SCOPE = (
    "An iEAT tests one network's embeddings: a significant result says that in this network X is closer to A, "
    "relative to B, than Y is; not where that association came from. Networks trained from other random "
    "initialisations, or on data without the association, can show one too; compare networks trained with "
    "and without it (config/controls.yaml does this for the demo)."
)


def _spaced(items: list[str]) -> list[str]:
    """List items (and nested ones) each followed by a blank line, as reStructuredText wants them."""
    return [line for item in items for line in (item, "")]


def _seed(seed) -> str:
    """A seed as written in the config (``0``, not ``0.0`` from a column that also holds blanks)."""
    return str(int(seed)) if isinstance(seed, float) and seed.is_integer() else str(seed)


def _get(row, name: str, default=np.nan):
    value = getattr(row, name, default)
    return default if value is None or (isinstance(value, str) and value == "") else value


def _ci(row, low: str = "ci_low", high: str = "ci_high") -> str:
    lo, hi = float(_get(row, low)), float(_get(row, high))
    if np.isnan(lo) or np.isnan(hi):
        return ""
    return ", " + interval(lo, hi, float(_get(row, "ci_level", 0.95)))


def _opposite_words(d: float, row, spec: Mapping) -> str:
    """A sentence for a large effect against the tested direction, or ""."""
    alternative = str(row.alternative)  # the iEAT table records the alternative it tested
    if not opposite_direction(d, alternative):
        return ""
    x, y, a, b = (spec[k] for k in "XYAB")
    toward = (
        f"{x} closer to {b}, relative to {a}, than {y} is"
        if alternative == "greater"
        else f"{x} closer to {a}, relative to {b}, than {y} is"
    )
    two = p_text(float(_get(row, "pvalue_two_sided")), float(_get(row, "pvalue_floor", 0.0)))
    return (
        f" **Opposite direction:** d = {d:.2f} (a large effect, at least {OPPOSITE_EFFECT:g} in size) means {toward}, "
        f"which the one-sided test cannot detect; two-sided {two}."
    )


def _parts(row) -> str:
    """``, raw association 0.012 / pooled SD 0.034`` (d's numerator and denominator), or "" without them."""
    num, sd = float(_get(row, "mean_difference")), float(_get(row, "pooled_sd"))
    return "" if np.isnan(num) or np.isnan(sd) else f", raw association {num:.3g} / pooled SD {sd:.3g}"


def _detectable_words(row) -> str:
    """For a result that is not significant: the smallest |d| its test detects at its set sizes, or ""."""
    d = float(_get(row, "detectable_d"))
    if np.isnan(d):
        return ""
    sizes = f"{int(row.n_x)} images of X and {int(row.n_y)} of Y" if hasattr(row, "n_x") else "these set sizes"
    if np.isinf(d):
        return f" With {sizes} the test cannot reach significance at all: not significant is no evidence of no association."
    power, level = float(_get(row, "detectable_power", 0.8)), float(_get(row, "detectable_alpha"))
    at = "" if np.isnan(level) else f" at alpha = {level:g} (unadjusted)"
    return (
        f" With {sizes} only an effect of size {d:.2f} or more (either sign of d) is detected with {power:.0%} "
        f"power{at}: not significant is not evidence of no association."
    )


def _estimate(row) -> str:
    """``d = 0.42, 95% CI [...], raw association ... / pooled SD ...``, or why d is not estimable."""
    d = float(row.effect_size)
    if np.isnan(d):
        why = _get(row, "not_estimable", "")
        return why if isinstance(why, str) and why else NOT_ESTIMABLE
    return f"d = {d:.2f}{_ci(row)}{_parts(row)}"


def _verdict(row, rule: Significance, spec: Mapping) -> str:
    d, floor = float(row.effect_size), float(_get(row, "pvalue_floor", 0.0))
    p_adj = float(_get(row, rule.column, row.pvalue))
    significant = rule.significant(p_adj)
    return (
        f"{'significant' if significant else 'not significant'} ({_estimate(row)}, "
        f"{p_text(float(row.pvalue), floor)}, adjusted {p_text(p_adj, adjusted_floor(float(row.pvalue), floor, p_adj))})."
        f"{'' if significant else _detectable_words(row)}{_opposite_words(d, row, spec)}"
    )


def _seed_lines(runs: pd.DataFrame, rule: Significance, spec: Mapping) -> list[str]:
    return [f"  - seed {_seed(r.seed)}: {_verdict(r, rule, spec)}" for r in runs.itertuples()]


def _combined(seeds: pd.DataFrame | None, keys: Mapping, spec: Mapping) -> str:
    if seeds is None or seeds.empty:
        return ""
    sel = seeds[
        (seeds["model"] == keys["model"])
        & (seeds["finetune_dataset"] == keys["dataset"])
        & (seeds["test"] == spec["name"])
    ]
    if sel.empty:
        return ""
    r = next(sel.itertuples())
    floor = float(_get(r, "pvalue_floor", 0.0))
    sd = "" if np.isnan(float(r.sd_d)) else f", between-seed SD {r.sd_d:.2f}"
    mean = (
        f"mean d = {r.mean_d:.2f}{sd}, range {value_range(r.min_d, r.max_d)}"
        if not np.isnan(float(r.mean_d))
        else NOT_ESTIMABLE
    )
    return (
        f"  - over {int(r.n_seeds)} seeds: {mean}; "
        f"one test on all seeds' embeddings (images re-partitioned once for every seed): "
        f"{r.alternative} {p_text(float(r.pvalue), floor)}, two-sided {p_text(float(r.pvalue_two_sided), floor)}."
    )


def _changes(change: pd.DataFrame | None, keys: Mapping, spec: Mapping) -> list[str]:
    if change is None or change.empty:
        return []
    sel = change[
        (change["model"] == keys["model"])
        & (change["finetune_dataset"] == keys["dataset"])
        & (change["test"] == spec["name"])
    ]
    return [
        f"  - change from pretrained, seed {_seed(r.seed)} (same images, paired bootstrap): delta d = {r.delta_d:.2f}{_ci(r)}, "
        f"two-sided {p_text(float(r.pvalue), float(r.pvalue_floor))} (d from {r.d_pretrained:.2f} to {r.d_finetuned:.2f})."
        f"{_spread_words(r)}"
        if not np.isnan(float(r.delta_d))
        else f"  - change from pretrained, seed {_seed(r.seed)}: not estimable ({NOT_ESTIMABLE})."
        for r in sel.itertuples()
    ]


def _spread_words(r) -> str:
    """What moved d, in words: the raw association or only the spread of the scores (the pooled SD)."""
    names = ("mean_difference_pretrained", "pooled_sd_pretrained", "mean_difference_finetuned", "pooled_sd_finetuned")
    parts = [float(_get(r, name)) for name in names]
    if any(np.isnan(parts)):
        return ""
    num_0, sd_0, num_1, sd_1 = parts
    moved = f" Raw association {num_0:.3g} to {num_1:.3g}, pooled SD {sd_0:.3g} to {sd_1:.3g}"
    if not change_from_spread(num_0, sd_0, num_1, sd_1):
        return moved + "."
    return (
        f"{moved}: **d changed through the spread of the scores, not the association** (the pooled SD "
        f"accounts for at least {SPREAD_SHARE:.0%} of the change of the log of the size of d: the raw association changed by a "
        f"factor of {num_1 / num_0:.2f}, the SD by {sd_1 / sd_0:.2f})."
    )


def _scratch_lines(scratch: pd.DataFrame | None, keys: Mapping, rule: Significance, spec: Mapping) -> list[str]:
    """The scratch reference network's own iEAT (the target data alone) beside a model's finetuned seeds."""
    if scratch is None or scratch.empty:
        return []
    sel = scratch[
        (scratch["analysis_set"] == keys["analysis_set"])
        & (scratch["model"] == keys["model"])
        & (scratch["finetune_dataset"] == keys["dataset"])
        & (scratch["test"] == spec["name"])
    ]
    return [
        f"  - target data alone (trained from scratch on {keys['dataset']}, seed {_seed(r.seed)}; p adjusted "
        f"across the scratch networks' own iEATs): {_verdict(r, rule, spec)}"
        for r in sel.itertuples()
    ]


def describe_ieat(
    ieat: pd.DataFrame,
    tests: Mapping[str, Sequence[Mapping]],
    alpha: float,
    *,
    adjust: str = "holm",
    change: pd.DataFrame | None = None,
    seeds: pd.DataFrame | None = None,
    scratch: pd.DataFrame | None = None,
) -> list[str]:
    """One section per (analysis set, test): every model pretrained, each finetuning seed, the seeds
    together, the scratch reference network (``scratch``: the target data alone) and the change from
    pretrained."""
    rule = Significance(alpha, adjust)
    lines = []
    for analysis_set, specs in tests.items():
        for spec in specs:
            sel = ieat[(ieat["analysis_set"] == analysis_set) & (ieat["test"] == spec["name"])]
            if sel.empty:
                continue
            role = spec.get("role", "exploratory")
            title = f"{analysis_set}: {spec['name']} — {ROLE_TEXT[role]}"
            lines.append(
                f"{title}\n{'-' * len(title)}\n\n"
                f"X = {spec['X']}, Y = {spec['Y']}, A = {spec['A']}, B = {spec['B']}; significant means "
                f"{ADJUSTMENT_NAMES[adjust]}-adjusted p < {alpha:g} ({sel['alternative'].iloc[0]} alternative; "
                f"adjusted across the analysis set's iEAT table, as its stars are). Intervals: bootstrap over images. "
                f"d = raw association (mean s over X minus over Y) / pooled SD of s.\n"
            )
            for model, rows in sel.groupby("model", sort=False):
                pre = rows[rows["stage"] == "pretrained"]
                ft = rows[rows["stage"] != "pretrained"]
                items = [
                    f"- **{model}** pretrained: {_verdict(next(pre.itertuples()), rule, spec)}"
                    if not pre.empty
                    else f"- **{model}**"
                ]
                for dataset, runs in ft.groupby("finetune_dataset", sort=False):
                    hits = sum(map(rule.significant, runs[rule.column] if rule.column in runs else runs["pvalue"]))
                    items.append(f"- **{model}** finetuned on {dataset}: significant in {hits} of {len(runs)} seeds.")
                    keys = {"model": model, "dataset": dataset}
                    items += _seed_lines(runs, rule, spec)
                    combined = _combined(seeds, keys, spec)
                    items += [combined] if combined else []
                    items += _scratch_lines(scratch, {**keys, "analysis_set": analysis_set}, rule, spec)
                    items += _changes(change, keys, spec)
                lines += _spaced(items)
    return lines


def describe_bts(
    bts: pd.DataFrame, *, alpha: float = 0.05, adjust: str = "holm", similarity_change: pd.DataFrame | None = None
) -> list[str]:
    """The pooled BTS of every model, intra and inter, and how far the similarities it ranks moved."""
    pooled = bts[bts["seed"].astype(str) == "pooled"]
    if pooled.empty:
        return []
    rule = Significance(alpha, adjust)
    adj_col = rule.column
    title = "Bias Transfer Scores (finetuned similarities averaged over seeds)"
    lines = [f"{title}\n{'-' * len(title)}\n"]
    for (analysis_set, model, dataset), rows in pooled.groupby(
        ["analysis_set", "model", "finetune_dataset"], sort=False
    ):
        parts = []
        for r in rows.itertuples():
            p_adj, floor = float(_get(r, adj_col, r.pvalue)), float(_get(r, "pvalue_floor", 0.0))
            parts.append(
                f"{r.kind} rho = {r.statistic:.2f}{_ci(r)} ({p_text(float(r.pvalue), floor)}, "
                f"adjusted {p_text(p_adj, adjusted_floor(float(r.pvalue), floor, p_adj))}, {'significant' if rule.significant(p_adj) else 'not significant'}, n = {int(r.n)})"
            )
        items = [f"- **{model}** on {analysis_set}, finetuned on {dataset}: " + "; ".join(parts) + "."]
        lines += _spaced(items + _moved(similarity_change, analysis_set, model, dataset))
    lines += [
        "",
        "A high rho means the ranking of similarities survived finetuning: the pretrained biases were retained. "
        "It does not say how strongly finetuning changed the network; the changes above (and a reference "
        "network trained only on the target data, where configured) say that.",
    ]
    return lines


def _moved(change: pd.DataFrame | None, analysis_set: str, model: str, dataset: str) -> list[str]:
    """How far the ranked similarities moved: the largest change and how many intervals exclude 0."""
    if change is None or change.empty:
        return []
    sel = change[
        (change["analysis_set"] == analysis_set) & (change["model"] == model) & (change["finetune_dataset"] == dataset)
    ]
    if sel.empty:
        return []
    big = sel.loc[sel["delta"].abs().idxmax()]
    excludes = int(((sel["ci_low"] > 0) | (sel["ci_high"] < 0)).sum())
    return [
        f"  - the ranked similarities moved by at most {abs(big['delta']):.3f} in absolute value ({big['kind']} {str(big['key']).replace('|', ' and ')}, "
        f"seed {_seed(big['seed'])}: {big['value_pretrained']:.3f} to {big['value_finetuned']:.3f}, "
        f"{interval(big['ci_low'], big['ci_high'], big['ci_level'], digits=3)}); {excludes} of {len(sel)} "
        f"changes (similarities x seeds) have an interval that excludes 0."
    ]


def describe_findings(
    ieat: pd.DataFrame,
    bts: pd.DataFrame,
    tests: Mapping[str, Sequence[Mapping]],
    alpha: float,
    *,
    adjust: str = "holm",
    change: pd.DataFrame | None = None,
    seeds: pd.DataFrame | None = None,
    similarity_change: pd.DataFrame | None = None,
    scratch: pd.DataFrame | None = None,
) -> str:
    """reStructuredText summary of the run's iEATs and BTSs (``scratch``: the scratch reference networks' iEATs)."""
    Significance(alpha, adjust)  # ValueError for an alpha outside (0, 1) or an unknown adjustment
    body = [
        "========\nFindings\n========",
        "",
        IEAT_SCOPE,
        "",
        *describe_ieat(ieat, tests, alpha, adjust=adjust, change=change, seeds=seeds, scratch=scratch),
        *describe_bts(bts, alpha=alpha, adjust=adjust, similarity_change=similarity_change),
    ]
    return "\n".join(body) + "\n"
