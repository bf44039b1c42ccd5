"""The trajectory of one model finetuned on one dataset: a figure (iEAT d, BTS rho with the linear CKA against
the pretrained network, and the training curves against epoch, on one x axis) and a LaTeX table, from its
trajectory table (docs/formats.md).

Epoch 0 is the pretrained network. In the figure every seed is one line with its bootstrap interval as a
band and its own dash and marker; a ring marks each seed's best epoch, the network every other rule embeds.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from biastransfer.report.formatting import latex_escape, model_label, require_columns
from biastransfer.report.latex import standalone_document, tabular
from biastransfer.report.style import OKABE_ITO, paper_figure, paper_style, seed_marker

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
#: A key's name in a panel's legend, where it is not the key itself.
KEY_LABELS = {"cka": "linear CKA"}


def _runs(frame: pd.DataFrame, measure: str) -> pd.DataFrame:
    rows = frame[(frame["measure"] == measure) & (frame["seed"].astype(str) != "pooled")]
    return rows.assign(seed=rows["seed"].astype(int)).sort_values(["seed", "epoch"], kind="stable")


def _seed_style(seed: int, seeds: list[int]) -> dict:
    """The line style and marker of one seed's lines (the seed legend shows them in black)."""
    return {"ls": _DASHES[seeds.index(seed) % len(_DASHES)], "marker": seed_marker(seed, seeds)}


def _draw(ax, rows: pd.DataFrame, seeds: list[int], *, band: bool) -> list[Line2D]:
    """One line per (key, seed): colour by key, dash and marker by seed, a band for its interval, a ring at its
    best epoch. Returns a legend handle per key (its colour alone)."""
    epochs = rows["epoch"].nunique()
    keys = []
    for i, (key, by_key) in enumerate(rows.groupby("key", sort=False)):
        colour = _COLOURS[i % len(_COLOURS)]
        keys.append(Line2D([], [], color=colour, label=KEY_LABELS.get(str(key), str(key))))
        for seed in seeds:
            line = by_key[by_key["seed"] == seed]
            if line.empty:
                continue
            ax.plot(
                line["epoch"],
                line["value"],
                color=colour,
                ms=3,
                markevery=max(1, math.ceil(epochs / 8)),
                **_seed_style(seed, seeds),
            )
            if band and line["ci_low"].notna().any():
                ax.fill_between(line["epoch"], line["ci_low"], line["ci_high"], color=colour, alpha=0.15, linewidth=0)
            final = line[line["final"].astype(bool)]
            ax.plot(final["epoch"], final["value"], "o", mfc="none", color=colour, markersize=7)
    return keys


def trajectory_figure(frame: pd.DataFrame) -> Figure:
    """iEAT d per test, BTS rho per kind beside the linear CKA against the pretrained network (so that a reader
    sees whether the associations moved with the representation or apart from it), losses and the validation
    metric against epoch (one model, one analysis set, one finetune dataset). Each panel names its colours above it, outside the data (the
    zero line of d stays visible); the legend below names each seed's line style and marker."""
    require_columns(frame, TRAJECTORY_REQUIRED, where="trajectory table")
    where = frame[["analysis_set", "model", "finetune_dataset"]].drop_duplicates()
    if len(where) != 1:
        raise ValueError(f"a trajectory figure shows one analysis set, model and dataset; got {len(where)}")
    analysis_set, model, dataset = where.iloc[0]
    curves = _runs(frame, "curve")
    metric = [k for k in curves["key"].unique() if k.startswith("val_") and k != "val_loss"]
    seeds = sorted(_runs(frame, "ieat")["seed"].unique())
    with paper_style():
        fig, axes = paper_figure("double", 4.8, nrows=2, ncols=2, sharex=True)
        panels = [
            (axes[0, 0], _runs(frame, "ieat"), True, "iEAT effect size d"),
            (axes[0, 1], pd.concat([_runs(frame, "bts"), _runs(frame, "cka")]), True, "vs pretrained: BTS rho, CKA"),
            (axes[1, 0], curves[curves["key"].isin(["train_loss", "val_loss"])], False, "BCE loss"),
            (axes[1, 1], curves[curves["key"].isin(metric)], False, "validation " + ", ".join(m[4:] for m in metric)),
        ]
        for ax, rows, band, label in panels:
            keys = _draw(ax, rows, seeds, band=band)
            ax.set_ylabel(label)
            ax.legend(handles=keys, loc="lower left", bbox_to_anchor=(0, 1), ncols=2, borderaxespad=0.2)
        axes[0, 0].axhline(0, color="black", linewidth=0.5)
        for ax in axes[1]:
            ax.set_xlabel("epoch (0 = pretrained)")
        epochs = sorted(frame["epoch"].unique())
        axes[1, 0].set_xticks(epochs if len(epochs) <= 16 else epochs[:: math.ceil(len(epochs) / 16)])
        handles = [Line2D([], [], color="black", ms=3, label=f"seed {s}", **_seed_style(s, seeds)) for s in seeds]
        handles.append(Line2D([], [], ls="none", marker="o", mfc="none", color="black", ms=7, label="best epoch"))
        fig.legend(handles=handles, loc="outside lower center", ncols=len(handles))
        fig.suptitle(
            f"{model_label(model)} finetuned on {dataset}, analysis set {analysis_set}, {len(seeds)} seed(s)\n"
            "line style and marker: seed; band: bootstrap interval (CKA: jackknife over images); "
            "ring: best epoch (the saved network)"
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
    """Per epoch: each iEAT test's d, the pooled BTS rho of each kind, the linear CKA against the pretrained
    network and the validation metric, mean over seeds with the range over seeds; the best epochs marked."""
    require_columns(frame, TRAJECTORY_REQUIRED, where="trajectory table")
    analysis_set, model, dataset = frame[["analysis_set", "model", "finetune_dataset"]].iloc[0]
    ieat, curves, cka = _runs(frame, "ieat"), _runs(frame, "curve"), _runs(frame, "cka")
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
        row += [_cell(cka[cka["epoch"] == epoch]["value"])] if not cka.empty else []
        if metric:
            row.append(_cell(curves[(curves["epoch"] == epoch) & (curves["key"] == metric)]["value"]))
        seeds = best.get(epoch, np.array([]))
        row.append(", ".join(str(s) for s in sorted(seeds)))
        cells.append(row)
    head = ["Epoch", *(f"$d$ {latex_escape(t)}" for t in tests), *(f"$\\rho$ {k}" for k in kinds)]
    head += ["CKA"] if not cka.empty else []
    head += [f"val.\\ {latex_escape(metric[4:])}"] if metric else []
    head.append("best for seeds")
    body = tabular("l" + "r" * (len(head) - 2) + "l", head, cells)
    caption = (
        f"{latex_escape(model_label(model))} finetuned on \\texttt{{{latex_escape(dataset)}}}, analysis set "
        f"\\texttt{{{latex_escape(analysis_set)}}}: iEAT effect size $d$ of each test, BTS $\\rho$ (pooled over "
        "seeds, against the pretrained network), the linear CKA between the pretrained and this epoch's "
        "embeddings (1: the representation unchanged) and the validation metric after each epoch; mean over seeds "
        "with the range over seeds in brackets. The last column names the seeds whose saved network (the one "
        "every other table reports) is that epoch's. Intervals per seed: results/summary/trajectory.csv."
    )
    return standalone_document(body, caption, landscape=len(head) > 6)


def trajectory_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The trajectory table's rows: every measure after every epoch and seed, with its interval."""
    require_columns(frame, TRAJECTORY_REQUIRED, where="trajectory table")
    columns = ["epoch", "seed", "measure", "kind", "key", "value", "ci_low", "ci_high", "final"]
    return frame[columns].sort_values(["measure", "kind", "key", "seed", "epoch"], kind="stable").reset_index(drop=True)
