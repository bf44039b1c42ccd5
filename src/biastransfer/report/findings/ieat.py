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
    p_text,
)
from biastransfer.report.records import VERDICT_WORDS, ieat_records, table_records
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
    """A table row's value (``default`` where it is empty or absent)."""
    value = getattr(row, name, default)
    return default if value is None or (isinstance(value, str) and value == "") else value


def _row_ci(row) -> str:
    """``, 95% CI [low, high]`` of a table row, or "" without its interval."""
    lo, hi = float(_get(row, "ci_low")), float(_get(row, "ci_high"))
    return "" if np.isnan(lo) or np.isnan(hi) else ", " + interval(lo, hi, float(_get(row, "ci_level", 0.95)))


def _f(record: Mapping, key: str, default: float = np.nan) -> float:
    """A record's number (``default`` where it is null or absent)."""
    value = record.get(key)
    return default if value is None else float(value)


def _ci(record: Mapping, low: str = "ci_low", high: str = "ci_high") -> str:
    lo, hi = _f(record, low), _f(record, high)
    if np.isnan(lo) or np.isnan(hi):
        return ""
    return ", " + interval(lo, hi, _f(record, "ci_level", 0.95))


def _opposite_words(r: Mapping, spec: Mapping) -> str:
    """A sentence for a large effect against the tested direction, or ""."""
    if not r["opposite"]:
        return ""
    x, y, a, b = (spec[k] for k in "XYAB")
    toward = (
        f"{x} closer to {b}, relative to {a}, than {y} is"
        if r["alternative"] == "greater"
        else f"{x} closer to {a}, relative to {b}, than {y} is"
    )
    two = p_text(_f(r, "p_two_sided"), _f(r, "p_floor", 0.0))
    return (
        f" **Opposite direction:** d = {r['d']:.2f} (a large effect, at least {OPPOSITE_EFFECT:g} in size) means "
        f"{toward}, which the one-sided test cannot detect; two-sided {two}."
    )


def _parts(r: Mapping) -> str:
    """``, raw association 0.012 / pooled SD 0.034`` (d's numerator and denominator), or "" without them."""
    num, sd = _f(r, "association"), _f(r, "sd")
    return "" if np.isnan(num) or np.isnan(sd) else f", raw association {num:.3g} / pooled SD {sd:.3g}"


def _detectable_words(r: Mapping) -> str:
    """For a result that is not significant: the smallest |d| its test detects at its set sizes, or ""."""
    d = _f(r, "detectable_d")
    if np.isnan(d):
        return ""
    has_sizes = r.get("n_x") is not None and r.get("n_y") is not None
    sizes = f"{r['n_x']} images of X and {r['n_y']} of Y" if has_sizes else "these set sizes"
    if np.isinf(d):
        return f" With {sizes} the test cannot reach significance at all: not significant is no evidence of no association."
    power, level = _f(r, "detectable_power", 0.8), _f(r, "detectable_alpha")
    at = "" if np.isnan(level) else f" at alpha = {level:g} (unadjusted)"
    return (
        f" With {sizes} only an effect of size {d:.2f} or more (either sign of d) is detected with {power:.0%} "
        f"power{at}: not significant is not evidence of no association."
    )


def _estimate(r: Mapping) -> str:
    """``d = 0.42, 95% CI [...], raw association ... / pooled SD ...``, or why d is not estimable."""
    if r["d"] is None:
        return r.get("not_estimable") or NOT_ESTIMABLE
    return f"d = {r['d']:.2f}{_ci(r)}{_parts(r)}"


def _verdict(r: Mapping, spec: Mapping) -> str:
    """The record's verdict in words, with d, its interval and parts, the p and the adjusted p."""
    p, floor, p_adj = _f(r, "p"), _f(r, "p_floor", 0.0), _f(r, "p_adjusted")
    significant = r["verdict"] == VERDICT_WORDS["test"][0]
    return (
        f"{r['verdict']} ({_estimate(r)}, {p_text(p, floor)}, adjusted {p_text(p_adj, adjusted_floor(p, floor, p_adj))})."
        f"{'' if significant else _detectable_words(r)}{_opposite_words(r, spec)}"
    )


def _of(records: Sequence[Mapping], keys: Mapping, spec: Mapping) -> list[Mapping]:
    """The records of one analysis set, model, finetuning dataset and test."""
    return [
        r
        for r in records
        if r["analysis_set"] == keys["analysis_set"]
        and r["model"] == keys["model"]
        and r["finetune_dataset"] == keys["dataset"]
        and r["test"] == spec["name"]
    ]


def _combined(seeds: Sequence[Mapping], keys: Mapping, spec: Mapping) -> str:
    chosen = _of(seeds, keys, spec)
    if not chosen:
        return ""
    r = chosen[0]
    floor = _f(r, "pvalue_floor", 0.0)
    sd = "" if np.isnan(_f(r, "sd_d")) else f", between-seed SD {r['sd_d']:.2f}"
    mean = (
        f"mean d = {r['mean_d']:.2f}{sd}, range {value_range(r['min_d'], r['max_d'])}"
        if not np.isnan(_f(r, "mean_d"))
        else NOT_ESTIMABLE
    )
    return (
        f"  - over {int(r['n_seeds'])} seeds: {mean}; "
        f"one test on all seeds' embeddings (images re-partitioned once for every seed): "
        f"{r['alternative']} {p_text(_f(r, 'pvalue'), floor)}, two-sided {p_text(_f(r, 'pvalue_two_sided'), floor)}."
    )


def _changes(change: Sequence[Mapping], keys: Mapping, spec: Mapping) -> list[str]:
    return [
        f"  - change from pretrained, seed {_seed(r['seed'])} (same images, paired bootstrap): delta d = "
        f"{r['delta_d']:.2f}{_ci(r)}, two-sided {p_text(_f(r, 'pvalue'), _f(r, 'pvalue_floor'))} (d from "
        f"{r['d_pretrained']:.2f} to {r['d_finetuned']:.2f}).{_spread_words(r)}"
        if not np.isnan(_f(r, "delta_d"))
        else f"  - change from pretrained, seed {_seed(r['seed'])}: not estimable ({NOT_ESTIMABLE})."
        for r in _of(change, keys, spec)
    ]


def _spread_words(r: Mapping) -> str:
    """What moved d, in words: the raw association or only the spread of the scores (the pooled SD)."""
    names = ("mean_difference_pretrained", "pooled_sd_pretrained", "mean_difference_finetuned", "pooled_sd_finetuned")
    parts = [_f(r, name) for name in names]
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


def _scratch_lines(records: Sequence[Mapping], keys: Mapping, spec: Mapping) -> list[str]:
    """The scratch reference network's own iEAT (the target data alone) beside a model's finetuned seeds."""
    return [
        f"  - target data alone (trained from scratch on {keys['dataset']}, seed {_seed(r['seed'])}; p adjusted "
        f"across the scratch networks' own iEATs): {_verdict(r, spec)}"
        for r in _of(records, keys, spec)
        if r["network"] == "scratch"
    ]


def describe_ieat(
    records: Sequence[Mapping],
    tests: Mapping[str, Sequence[Mapping]],
    alpha: float,
    *,
    adjust: str = "holm",
    change: Sequence[Mapping] = (),
    seeds: Sequence[Mapping] = (),
) -> list[str]:
    """One section per (analysis set, test) from the results model's records (``records``:
    :func:`~biastransfer.report.records.ieat_records` of the run's iEATs at ``alpha`` and ``adjust``; ``change``
    and ``seeds``: the rows of ieat_change.csv and ieat_seeds.csv as records): every model pretrained, each
    finetuning seed, the seeds together, the scratch reference network (the target data alone) and the change
    from pretrained."""
    lines = []
    for analysis_set, specs in tests.items():
        for spec in specs:
            sel = [
                r
                for r in records
                if r["analysis_set"] == analysis_set and r["test"] == spec["name"] and r["network"] != "scratch"
            ]
            if not sel:
                continue
            role = spec.get("role", "exploratory")
            title = f"{analysis_set}: {spec['name']} — {ROLE_TEXT[role]}"
            lines.append(
                f"{title}\n{'-' * len(title)}\n\n"
                f"X = {spec['X']}, Y = {spec['Y']}, A = {spec['A']}, B = {spec['B']}; significant means "
                f"{ADJUSTMENT_NAMES[adjust]}-adjusted p < {alpha:g} ({sel[0]['alternative']} alternative; "
                f"adjusted across the analysis set's iEAT table, as its stars are). Intervals: bootstrap over images. "
                f"d = raw association (mean s over X minus over Y) / pooled SD of s.\n"
            )
            for model in dict.fromkeys(r["model"] for r in sel):
                rows = [r for r in sel if r["model"] == model]
                pre = [r for r in rows if r["network"] == "pretrained"]
                items = [f"- **{model}** pretrained: {_verdict(pre[0], spec)}" if pre else f"- **{model}**"]
                for dataset in dict.fromkeys(r["finetune_dataset"] for r in rows if r["network"] == "finetuned"):
                    runs = [r for r in rows if r["network"] == "finetuned" and r["finetune_dataset"] == dataset]
                    hits = sum(r["verdict"] == VERDICT_WORDS["test"][0] for r in runs)
                    items.append(f"- **{model}** finetuned on {dataset}: significant in {hits} of {len(runs)} seeds.")
                    keys = {"analysis_set": analysis_set, "model": model, "dataset": dataset}
                    items += [f"  - seed {_seed(r['seed'])}: {_verdict(r, spec)}" for r in runs]
                    combined = _combined(seeds, keys, spec)
                    items += [combined] if combined else []
                    items += _scratch_lines(records, keys, spec)
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
                f"{r.kind} rho = {r.statistic:.2f}{_row_ci(r)} ({p_text(float(r.pvalue), floor)}, "
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
    """reStructuredText summary of the run's iEATs and BTSs (``scratch``: the scratch reference networks' iEATs);
    the iEAT sections are written from the results model's records of them (report.records)."""
    rule = Significance(alpha, adjust)  # ValueError for an alpha outside (0, 1) or an unknown adjustment
    roles = {(a, t["name"]): t.get("role", "exploratory") for a, specs in tests.items() for t in specs}
    records = ieat_records(ieat, scratch, roles, rule)
    body = [
        "========\nFindings\n========",
        "",
        IEAT_SCOPE,
        "",
        *describe_ieat(records, tests, alpha, adjust=adjust, change=table_records(change), seeds=table_records(seeds)),
        *describe_bts(bts, alpha=alpha, adjust=adjust, similarity_change=similarity_change),
    ]
    return "\n".join(body) + "\n"
