"""Findings about the networks' predictions: whether they amplify the dataset's attribute-object bias
(BiasAmp A -> T, Zhao et al.'s measure), its planted associations, and how much of the attribute leaks
from their outputs and from their embedding.

Every verdict follows the estimate's bootstrap interval, in both directions: an interval above 0 amplifies,
one below 0 reduces, and one that holds 0 shows neither; an embedding's leakage is judged against chance
(1 / the number of attribute values) the same way."""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from biastransfer.report.findings.prose import interval

WORDS = {
    "directional": "BiasAmp A->T",
    "zhao": "Zhao et al.'s amplification",
    "leakage_amplification": "leakage amplification",
}


NEITHER = "neither amplifies nor reduces (the interval holds 0)"


def verdict(low: float, high: float, *, more: str = "amplifies", less: str = "reduces", neither: str = NEITHER) -> str:
    """``more`` when the interval lies above 0, ``less`` below 0, else ``neither``."""
    if low is None or high is None or math.isnan(float(low)) or math.isnan(float(high)):
        return "cannot be judged (no interval)"
    if low > 0:
        return more
    if high < 0:
        return less
    return neither


def _who(row) -> str:
    seeds = "seeds pooled" if str(row.seed) == "pooled" else f"seed {row.seed}"
    return f"{row.network.capitalize()} {row.model} ({row.dataset}, {seeds})"


def _chosen(summary: pd.DataFrame) -> pd.DataFrame:
    """Each trained network family's pooled rows (its one seed's where it has one)."""
    nets = summary[~summary["network"].isin(["dataset", "pretrained"])].assign(seed=lambda f: f["seed"].astype(str))
    parts = []
    for _, m in nets.groupby(["network", "model", "dataset"], sort=False):
        pooled = m[m["seed"] == "pooled"]
        parts.append(pooled if not pooled.empty else m[m["seed"] == m["seed"].iloc[0]])
    return pd.concat(parts) if parts else nets


def _terms_of(terms: pd.DataFrame | None, row, measure: str | None = None) -> pd.DataFrame:
    """The terms of a summary row's network, seed, measure and threshold (those not left out)."""
    if terms is None or terms.empty:
        return pd.DataFrame()
    same = (
        (terms["network"] == row.network)
        & (terms["model"].astype(str) == str(row.model))
        & (terms["dataset"] == row.dataset)
        & (terms["seed"].astype(str) == str(row.seed))
        & (terms["measure"] == (measure or row.measure))
        & (terms["threshold"].astype(str) == str(row.threshold))
    )
    kept = terms[same]
    return kept[kept["excluded"].fillna("").astype(str) == ""] if "excluded" in kept else kept


def _term_signs(terms: pd.DataFrame | None, row) -> tuple[int, int]:
    """How many of a mean's terms lie above 0 and below 0 by their intervals."""
    own = _terms_of(terms, row)
    if own.empty:
        return 0, 0
    return int((own["ci_low"] > 0).sum()), int((own["ci_high"] < 0).sum())


def _shifted_pairs(terms: pd.DataFrame | None, row) -> str:
    """``; shift excluding 0: surfboard towards person_a +0.048 [0.003, 0.100], ...``: each (object, figure) pair
    whose predictions move the object towards the figure, beyond the ground truth, by an interval above 0."""
    own = _terms_of(terms, row, "directional")
    if own.empty or "shift_low" not in own:
        return ""
    moved = own[own["shift_low"] > 0].sort_values("shift", ascending=False)
    pairs = [
        f"{r.task} towards {r.attribute} {r.shift:+.3f} {interval(r.shift_low, r.shift_high, digits=3)}"
        for r in moved.itertuples()
    ]
    return f"; the pairs whose shift excludes 0: {', '.join(pairs) if pairs else 'none'}"


def _left_out(terms: pd.DataFrame | None) -> list[str]:
    """A line per dataset whose test split lacks a measured class: its terms are left out of every mean."""
    if terms is None or "excluded" not in terms:
        return []
    out = terms[terms["excluded"].fillna("").astype(str) != ""]
    lines = []
    for dataset, rows in out.groupby("dataset", sort=False):
        classes = list(dict.fromkeys(rows["task"].astype(str)))
        every = terms.loc[terms["dataset"] == dataset, "task"].nunique()
        lines.append(
            f"- {dataset}'s test split has no image of {', '.join(classes)} (among its images with an attribute): "
            f"{'its' if len(classes) == 1 else 'their'} amplification terms have no direction, so every BiasAmp "
            f"A->T below is the mean over the other {every - len(classes)} of its {every} classes, and Zhao's "
            "measure drops them too (amplification_terms.csv, column excluded)."
        )
    return lines


def describe_amplification(
    summary: pd.DataFrame | None, terms: pd.DataFrame | None = None, planted: Mapping[str, str] | None = None
) -> list[str]:
    """Lines of the findings: per network family, BiasAmp and Zhao's measure at the threshold and base rates,
    each planted (object -> attribute) term, and the leakage amplification, each with its verdict."""
    if summary is None or summary.empty:
        return []
    title = "Do the networks' predictions amplify the bias? (exploratory)"
    lines = [
        "",
        f"{title}\n{'-' * len(title)}\n",
        "The run's prediction verdicts read one primary measure per declared iEAT pair, the contrast of its two "
        "objects, its p adjusted over the declared pairs of each network (the next section, the tables and the "
        "overview); the measures here describe the predictions more widely and "
        "are exploratory: their intervals are not adjusted for their number, so one of them excluding 0 is not "
        "a verdict on its own.",
        "",
        *_left_out(terms),
    ]  # a blank line ends the section before
    chosen = _chosen(summary)
    for row in chosen[chosen["measure"].isin(["directional", "zhao"])].itertuples():
        at = "at base-rate thresholds" if row.threshold == "base_rate" else f"at threshold {row.threshold}"
        mean = f"{WORDS[row.measure]} {row.estimate:.3f} {interval(row.ci_low, row.ci_high, row.level, 3)}"
        above, below = _term_signs(terms, row) if row.measure == "directional" else (0, 0)
        if above and below:  # Zhao's terms mirror each other between two figures: only BiasAmp A->T's are read
            lines.append(
                f"- {_who(row)} {at}: {mean} is the mean of terms that disagree in sign ({above} above 0, {below} "
                "below, by their intervals; amplification_terms.csv), so it is no verdict on the bias"
                + _shifted_pairs(terms, row)
                + "."
            )
        else:
            lines.append(
                f"- {_who(row)} {verdict(row.ci_low, row.ci_high)} the attribute-object bias in its predictions "
                f"{at}: {mean}" + _shifted_pairs(terms, row) + "."
            )
    if terms is not None and planted:
        t = terms[(terms["measure"] == "directional") & (terms["network"] != "dataset")]
        for obj, attribute in planted.items():
            for row in _chosen(t[(t["task"] == obj) & (t["attribute"] == attribute)]).itertuples():
                at = "at base rates" if row.threshold == "base_rate" else f"at threshold {row.threshold}"
                lines.append(
                    f"- {_who(row)} {verdict(row.shift_low, row.shift_high)} the planted {obj}->{attribute} "
                    f"association in its predictions {at}: shift towards {attribute} {row.shift:+.3f} "
                    f"{interval(row.shift_low, row.shift_high, digits=3)} (how much more often, beyond the ground "
                    f"truth, it predicts {obj} for {attribute} images than for the others)."
                )
    for row in chosen[chosen["measure"] == "leakage_amplification"].itertuples():
        word = verdict(
            row.ci_low,
            row.ci_high,
            more="leaks more",
            less="leaks less",
            neither="leaks neither more nor less (the interval holds 0)",
        )
        lines.append(
            f"- {_who(row)} {word} of the attribute than labels of its own F1 do: leakage amplification "
            f"{row.estimate:.3f} {interval(row.ci_low, row.ci_high, row.level, 3)}."
        )
    scored = chosen[chosen["measure"] == "leakage_model"].set_index(["network", "model", "dataset"])
    before = summary[(summary["network"] == "pretrained") & (summary["measure"] == "leakage_embedding")]
    before = before.set_index(["model", "dataset"])
    for row in chosen[chosen["measure"] == "leakage_embedding"].itertuples():
        chance = 1 / len(str(row.images_per_attribute).split(";"))
        word = verdict(
            row.ci_low - chance,
            row.ci_high - chance,
            more="gives the attribute away beyond chance",
            less="gives an attacker less than chance (the interval lies below it)",
            neither="does not give the attribute away beyond chance (the interval holds chance)",
        )
        key, beside = (row.network, row.model, row.dataset), ""
        if key in scored.index:
            scores = scored.loc[[key]].iloc[0]
            beside = (
                f"; from its scores: {scores['estimate']:.3f} {interval(scores['ci_low'], scores['ci_high'], digits=3)}"
            )
        baseline = ""
        if row.network == "finetuned" and (row.model, row.dataset) in before.index:
            pre = before.loc[[(row.model, row.dataset)]].iloc[0]
            baseline = (
                f" against {pre['estimate']:.3f} {interval(pre['ci_low'], pre['ci_high'], digits=3)} before "
                "finetuning (the pretrained network's embedding of the same images)"
            )
        lines.append(
            f"- {_who(row)}: its embedding of the test images {word}: an attacker's balanced accuracy "
            f"{row.estimate:.3f} {interval(row.ci_low, row.ci_high, row.level, 3)}{baseline} (chance "
            f"{chance:.3f}{beside})."
        )
    dataset = summary[summary["measure"] == "leakage_dataset"]
    for row in dataset.itertuples():
        lines.append(
            f"- The ground-truth labels of {row.dataset}'s test split give the attribute away with balanced accuracy "
            f"{row.estimate:.3f} {interval(row.ci_low, row.ci_high, row.level, 3)} (chance: 0.5 for two groups)."
        )
    lines += [
        "",
        "Measured on the test split's images with an attribute (results/summary/amplification.csv); each "
        "verdict follows the percentile bootstrap interval over images: above 0 amplifies, below 0 reduces. "
        + (
            "Before finetuning only the embedding's leakage is measured: the pretrained network has no classifier "
            "head for the dataset's classes, so it has no scores or predicted labels to leak from. "
            if not before.empty
            else ""
        )
        + "The interval covers the test images, not the network's training sample: a network trained on "
        "unbiased scenes can amplify a chance skew of its own sample, so it says what this network does, "
        "not whether its data or recipe makes networks amplify; that takes networks trained on independently "
        "drawn data as units (docs/statistics.md, 'Validation on trained networks').",
        "",
    ]
    return lines
