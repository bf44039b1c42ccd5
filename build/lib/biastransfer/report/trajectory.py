"""The trajectory of one model finetuned on one dataset: a figure (iEAT d, BTS rho and the training
curves against epoch, on one x axis) and a LaTeX table, from its trajectory table (docs/formats.md).

Epoch 0 is the pretrained network. In the figure every seed is one line with its bootstrap interval as a
band; a ring marks each seed's best epoch, the network every other rule embeds.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from biastransfer.report.formatting import latex_escape, model_label, require_columns
from biastransfer.report.latex import standalone_document, tabular
from biastransfer.report.style import OKABE_ITO, paper_figure, paper_style

TRAJECTORY_REQUIRED = (
    "analysis_set",
    "model",
    "finetune_dataset",
    "measure",
    "seed",
    "epoch",
    "kind",
    "key",
    "value",
    "ci_low",
    "ci_high",
    "final",
)
_COLOURS = [OKABE_ITO[c] for c in ("blue", "orange", "bluish_green", "reddish_purple", "vermillion", "sky_blue")]
_DASHES = ["-", "--", ":", "-."]


def _runs(frame: pd.DataFrame, measure: str) -> pd.DataFrame:
    rows = frame[(frame["measure"] == measure) & (frame["seed"].astype(str) != "pooled")]
    return rows.assign(seed=rows["seed"].astype(int)).sort_values(["seed", "epoch"], kind="stable")


def _draw(ax, rows: pd.DataFrame, *, band: bool) -> None:
    """One line per (key, seed): colour by key, dash by seed, a band for its interval, a ring at its best epoch."""
    seeds = sorted(rows["seed"].unique())
    for i, (key, by_key) in enumerate(rows.groupby("key", sort=False)):
        colour = _COLOURS[i % len(_COLOURS)]
        for j, seed in enumerate(seeds):
            line = by_key[by_key["seed"] == seed]
            if line.empty:
                continue
            ax.plot(
                line["epoch"],
                line["value"],
                _DASHES[j % len(_DASHES)],
                color=colour,
                label=str(key) if j == 0 else None,
            )
            if band and line["ci_low"].notna().any():
                ax.fill_between(line["epoch"], line["ci_low"], line["ci_high"], color=colour, alpha=0.15, linewidth=0)
            final = line[line["final"].astype(bool)]
            ax.plot(final["epoch"], final["value"], "o", mfc="none", color=colour, markersize=4)


def trajectory_figure(frame: pd.DataFrame) -> Figure:
    """iEAT d per test, BTS rho per kind, losses and the validation metric against epoch (one model,
    one analysis set, one finetune dataset)."""
    require_columns(frame, TRAJECTORY_REQUIRED, where="trajectory table")
    where = frame[["analysis_set", "model", "finetune_dataset"]].drop_duplicates()
    if len(where) != 1:
        raise ValueError(f"a trajectory figure shows one analysis set, model and dataset; got {len(where)}")
    analysis_set, model, dataset = where.iloc[0]
    curves = _runs(frame, "curve")
    metric = [k for k in curves["key"].unique() if k.startswith("val_") and k != "val_loss"]
    seeds = sorted(_runs(frame, "ieat")["seed"].unique())
    with paper_style():
        fig, axes = paper_figure("double", 4.2, nrows=2, ncols=2, sharex=True)
        panels = [
            (axes[0, 0], _runs(frame, "ieat"), True, "iEAT effect size d"),
            (axes[0, 1], _runs(frame, "bts"), True, "BTS: Spearman rho vs pretrained"),
            (axes[1, 0], curves[curves["key"].isin(["train_loss", "val_loss"])], False, "BCE loss"),
            (axes[1, 1], curves[curves["key"].isin(metric)], False, "validation " + ", ".join(m[4:] for m in metric)),
        ]
        for ax, rows, band, label in panels:
            _draw(ax, rows, band=band)
            ax.set_ylabel(label)
            ax.legend(loc="best")
        axes[0, 0].axhline(0, color="black", linewidth=0.5)
        for ax in axes[1]:
            ax.set_xlabel("epoch (0 = pretrained)")
        epochs = sorted(frame["epoch"].unique())
        axes[1, 0].set_xticks(epochs if len(epochs) <= 16 else epochs[:: math.ceil(len(epochs) / 16)])
        fig.suptitle(
            f"{model_label(model)} finetuned on {dataset}, analysis set {analysis_set}, {len(seeds)} seed(s)\n"
            "line style: seed; band: bootstrap interval; ring: best epoch (the saved network)"
        )
    return fig


def _cell(values: pd.Series) -> str:
    """Mean over seeds, with the range over seeds when they differ."""
    values = values.dropna()
    if values.empty:
        return "--"
    if values.nunique() == 1:
        return f"${values.iloc[0]:.2f}$"
    return f"${values.mean():.2f}$ \\small{{[{values.min():.2f}, {values.max():.2f}]}}"


def trajectory_latex(frame: pd.DataFrame) -> str:
    """Per epoch: each iEAT test's d, the pooled BTS rho of each kind and the validation metric, mean
    over seeds with the range over seeds; the best epochs marked."""
    require_columns(frame, TRAJECTORY_REQUIRED, where="trajectory table")
    analysis_set, model, dataset = frame[["analysis_set", "model", "finetune_dataset"]].iloc[0]
    ieat, curves = _runs(frame, "ieat"), _runs(frame, "curve")
    bts = frame[(frame["measure"] == "bts") & (frame["seed"].astype(str) == "pooled")]
    tests = list(dict.fromkeys(ieat["key"]))
    kinds = list(dict.fromkeys(bts["kind"]))
    metric = next((k for k in dict.fromkeys(curves["key"]) if k.startswith("val_") and k != "val_loss"), None)
    best = ieat[ieat["final"].astype(bool)].groupby("epoch")["seed"].unique()
    cells = []
    for epoch in sorted(frame["epoch"].unique()):
        row = [f"{epoch}" if epoch else "0 (pretrained)"]
        row += [_cell(ieat[(ieat["epoch"] == epoch) & (ieat["key"] == t)]["value"]) for t in tests]
        row += [_cell(bts[(bts["epoch"] == epoch) & (bts["kind"] == k)]["value"]) for k in kinds]
        if metric:
            row.append(_cell(curves[(curves["epoch"] == epoch) & (curves["key"] == metric)]["value"]))
        seeds = best.get(epoch, np.array([]))
        row.append(", ".join(str(s) for s in sorted(seeds)))
        cells.append(row)
    head = ["Epoch", *(f"$d$ {latex_escape(t)}" for t in tests), *(f"$\\rho$ {k}" for k in kinds)]
    head += [f"val.\\ {latex_escape(metric[4:])}"] if metric else []
    head.append("best for seeds")
    body = tabular("l" + "r" * (len(head) - 2) + "l", head, cells)
    caption = (
        f"{latex_escape(model_label(model))} finetuned on \\texttt{{{latex_escape(dataset)}}}, analysis set "
        f"\\texttt{{{latex_escape(analysis_set)}}}: iEAT effect size $d$ of each test, BTS $\\rho$ (pooled over "
        "seeds, against the pretrained network) and the validation metric after each epoch; mean over seeds "
        "with the range over seeds in brackets. The last column names the seeds whose saved network (the one "
        "every other table reports) is that epoch's. Intervals per seed: results/summary/trajectory.csv."
    )
    return standalone_document(body, caption, landscape=len(head) > 6)


def trajectory_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The trajectory table's rows: every measure after every epoch and seed, with its interval."""
    require_columns(frame, TRAJECTORY_REQUIRED, where="trajectory table")
    columns = ["epoch", "seed", "measure", "kind", "key", "value", "ci_low", "ci_high", "final"]
    return frame[columns].sort_values(["measure", "kind", "key", "seed", "epoch"], kind="stable").reset_index(drop=True)
