"""Findings about the trajectories over finetuning epochs: when each iEAT association settles, whether it
moves monotonically, where the BTS ends, and when the representation itself settles (the linear CKA against
the pretrained embeddings; results/summary/trajectory.csv)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from biastransfer.report.findings.prose import interval, value_range


def _bounds(low: float, high: float) -> str:
    bounds = interval(low, high)
    return f" {bounds}" if bounds else ""


def seed_means(rows: pd.DataFrame) -> pd.DataFrame:
    """Per epoch: the mean over seeds of ``value``, ``ci_low`` and ``ci_high``, and the seed count."""
    grouped = rows.groupby("epoch")
    return pd.DataFrame(
        {
            "value": grouped["value"].mean(),
            "ci_low": grouped["ci_low"].mean(),
            "ci_high": grouped["ci_high"].mean(),
            "n_seeds": grouped["seed"].nunique(),
        }
    ).sort_index()


def settling_epoch(means: pd.DataFrame) -> int | None:
    """The first epoch from which the seed-mean value stays inside the last epoch's (seed-mean) interval;
    None when the last epoch's own value is outside it or there is no interval."""
    low, high = means["ci_low"].iloc[-1], means["ci_high"].iloc[-1]
    if np.isnan(low) or np.isnan(high):
        return None
    inside = ((means["value"] >= low) & (means["value"] <= high)).to_numpy()
    if not inside[-1]:
        return None
    first = len(inside) - 1
    while first > 0 and inside[first - 1]:
        first -= 1
    return int(means.index[first])


def _path_words(means: pd.DataFrame) -> str:
    """Whether the seed-mean value moved monotonically from epoch 0 to the last, or where it turned."""
    diffs = np.diff(means["value"].to_numpy())
    if (diffs >= 0).all() or (diffs <= 0).all():
        return "moves monotonically"
    low, high = means["value"].idxmin(), means["value"].idxmax()
    return (
        f"does not move monotonically (lowest {means['value'][low]:.2f} at epoch {low}, "
        f"highest {means['value'][high]:.2f} at epoch {high})"
    )


def _over_seeds(rows: pd.DataFrame, epoch: int) -> str:
    """d at ``epoch``: its one value (every seed's pretrained network is the same), or the seeds' range."""
    values = rows.loc[rows["epoch"] == epoch, "value"]
    low, high, n = values.min(), values.max(), values.size
    if n == 1 or np.isclose(low, high):
        return f"{low:.2f}"
    return f"{value_range(low, high)} over {n} seeds"


def describe_trajectories(trajectory: pd.DataFrame | None) -> list[str]:
    """Per (analysis set, model, finetune dataset): each iEAT test's d before finetuning and after the
    last epoch, the epoch from which it settles, its path, the linear CKA after the first and the last epoch
    with the epoch from which it settles, and the pooled BTS at the last epoch."""
    if trajectory is None or trajectory.empty:
        return []
    text = "When did finetuning move the associations?"
    lines = [
        f"{text}\n{'-' * len(text)}\n",
        "d after each epoch (epoch 0: pretrained) is given over the seeds (one value, or their range); each "
        "network's own interval is in the iEAT table and results.json. An association *settles* at the first "
        "epoch from which the seeds' mean d stays inside the mean of the seeds' last-epoch intervals.",
        "",
    ]
    runs = [r for r in trajectory.groupby(["analysis_set", "model", "finetune_dataset"], sort=False)]
    for (analysis_set, model, dataset), rows in runs:
        ieat = rows[(rows["measure"] == "ieat") & (rows["seed"].astype(str) != "pooled")]
        last = int(rows["epoch"].max())
        for test, by_test in ieat.groupby("key", sort=False):
            means = seed_means(by_test)
            role = by_test["role"].fillna("").iloc[0]
            settled = settling_epoch(means)
            if settled is None:
                when = "does not settle inside the last epoch's interval"
            elif settled == 0:
                when = "stays inside the last epoch's interval throughout (no change finetuning could show)"
            else:
                when = f"settles from epoch {settled}"
            lines.append(
                f"- {model} finetuned on {dataset}, {analysis_set}, {test}{f' ({role})' if role else ''}: "
                f"d {_over_seeds(by_test, 0)} pretrained, {_over_seeds(by_test, last)} after epoch {last}; it "
                f"{when} and {_path_words(means)}."
            )
        cka = rows[(rows["measure"] == "cka") & (rows["seed"].astype(str) != "pooled")]
        if not cka.empty:
            settled = settling_epoch(seed_means(cka))
            if settled is None:
                when = "does not settle inside the last epoch's interval"
            else:
                when = (
                    f"settles from epoch {settled}" if settled else "stays inside the last epoch's interval throughout"
                )
            lines.append(
                f"- {model} finetuned on {dataset}, {analysis_set}: linear CKA against the pretrained embeddings "
                f"{_over_seeds(cka, 1)} after epoch 1 and {_over_seeds(cka, last)} after epoch {last} (1: unchanged); "
                f"the representation {when}."
            )
        bts = rows[(rows["measure"] == "bts") & (rows["seed"].astype(str) == "pooled") & (rows["epoch"] == last)]
        if not bts.empty:
            rhos = ", ".join(f"{r.kind} {r.value:.2f}{_bounds(r.ci_low, r.ci_high)}" for r in bts.itertuples())
            lines.append(
                f"- {model} finetuned on {dataset}, {analysis_set}: BTS rho against pretrained after "
                f"epoch {last} (seeds pooled): {rhos}."
            )
    return lines
