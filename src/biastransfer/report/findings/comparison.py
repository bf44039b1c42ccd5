"""Findings about the comparisons between finetuning arms (results/summary/comparison.csv): per arm, model and
declared iEAT pair, did the arm reduce the association in the representation (iEAT d), in the predictions
(the prediction shift), in both or in neither, and at what cost in the validation metric?

Each level's state is read from its interval (:func:`biastransfer.stats.comparison.toward_zero`: reduced,
increased, unchanged or untested), never from the estimate alone."""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from biastransfer.stats.comparison import overview

#: A level's state in words.
_STATE = {
    "reduced": "reduced",
    "increased": "increased",
    "unchanged": "not changed",
    "untested": "not tested",
}


def quadrant(representation: str, predictions: str) -> str:
    """Where an arm leaves the association, from the two levels' states (``reduced``, ``increased``,
    ``unchanged``, ``untested``): e.g. ``reduced in the predictions but not in the representation``."""
    if representation == predictions:
        return {
            "reduced": "reduced in both the predictions and the representation",
            "increased": "increased in both the predictions and the representation",
            "unchanged": "changed in neither the predictions nor the representation (both intervals hold 0)",
            "untested": "not tested at either level (no interval)",
        }[representation]
    if predictions == "reduced" and representation == "unchanged":
        return "reduced in the predictions but not in the representation"
    if representation == "reduced" and predictions == "unchanged":
        return "reduced in the representation but not in the predictions"
    return f"{_STATE[predictions]} in the predictions, {_STATE[representation]} in the representation"


def _interval(delta: float, low: float, high: float) -> str:
    if not (math.isfinite(low) and math.isfinite(high)):
        return f"{delta:+.3f} (no interval)"
    return f"{delta:+.3f} [{low:+.3f}, {high:+.3f}]"


def comparison_sentence(row: Mapping, mark: str = "") -> str:
    """One overview row (:func:`biastransfer.stats.comparison.overview`) in words: the quadrant, then the
    three changes with their intervals (the arm's name between ``mark``: ``**`` for reStructuredText)."""
    metric = "no validation metric"
    if row["metric"]:
        cost = _interval(row["delta_metric"], row["delta_metric_low"], row["delta_metric_high"])
        if not str(row["seeds"]).endswith("seeds"):
            cost = f"{row['delta_metric']:+.3f} (one seed: no interval)"
        metric = f"validation {row['metric']} {cost}"
    shift = "no prediction shift measured"
    if math.isfinite(row["delta_shift"]):
        shift = f"prediction shift {_interval(row['delta_shift'], row['delta_shift_low'], row['delta_shift_high'])}"
    return (
        f"{mark}{row['arm']}{mark} against {row['against']}, {row['model']}, iEAT {row['test']} on {row['analysis_set']} "
        f"({row['seeds']}): {quadrant(row['representation'], row['predictions'])}: "
        f"d {_interval(row['delta_d'], row['delta_d_low'], row['delta_d_high'])}; {shift}; {metric}"
    )


def arm_lines(rows: pd.DataFrame) -> list[str]:
    """The landing page's line per compared arm (a pair), from its overview rows
    (:func:`biastransfer.stats.comparison.overview`): how many of its (model, iEAT) rows fall in each reading,
    the commonest first, and the change of its validation metric: with its interval for one model, the range of
    the models' changes for several (their intervals are in the table)."""
    lines = []
    for (arm, against), group in rows.groupby(["arm", "against"], sort=False):
        readings = pd.Series([quadrant(r, p) for r, p in zip(group["representation"], group["predictions"])])
        counts = "; ".join(f"{reading} in {k}" for reading, k in readings.value_counts(sort=True).items())
        models = group["model"].nunique()
        line = (
            f"{arm} against {against} ({models} model{'s' if models != 1 else ''}, {len(group)} model and iEAT "
            f"pair{'s' if len(group) != 1 else ''}): {counts}"
        )
        metric = group.drop_duplicates("model").dropna(subset=["metric", "delta_metric"])
        metric = metric[metric["metric"] != ""]
        if len(metric) == 1:
            row = metric.iloc[0]
            span = (
                _interval(row["delta_metric"], row["delta_metric_low"], row["delta_metric_high"])
                if str(row["seeds"]).endswith("seeds")
                else f"{row['delta_metric']:+.3f} (one seed: no interval)"
            )
            line += f"; validation {row['metric']} changed by {span}"
        elif len(metric):
            low, high = metric["delta_metric"].min(), metric["delta_metric"].max()
            line += f"; validation {metric['metric'].iloc[0]} changed by {low:+.3f} to {high:+.3f} across models"
        lines.append(f"{line}.")
    return lines


def describe_comparisons(summary: pd.DataFrame | None) -> list[str]:
    """reStructuredText lines of the comparisons' section (none without a summary)."""
    if summary is None or summary.empty:
        return []
    rows = overview(summary)
    if rows.empty:
        return []
    lines = ["", "Comparisons between finetuning arms", "-----------------------------------", ""]
    lines.append(
        "Each arm against what it is compared with, on the same pretrained weights, seeds and images (the "
        "changes are arm minus against, over seeds with the seeds as units where there are at least two, else "
        "the one seed's with the images as units):"
    )
    lines.append("")
    lines += [f"- {comparison_sentence(r, '**')}." for r in rows.to_dict("records")]
    lines.append("")
    return lines
