"""Layer profiles in the report: a figure of d and rho against depth, and a LaTeX table per analysis set.

Both read the layer-profile table (docs/formats.md). In the figure every stage is a line with its
bootstrap intervals; in the table a finetuned iEAT cell is the mean d over seeds with the lowest to
highest bound of the seeds' intervals (as the iEAT table), a BTS cell the pooled rho and its interval.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from biastransfer.report import style
from biastransfer.report.formatting import estimate_cell, latex_escape, model_label, require_columns
from biastransfer.report.latex import standalone_document
from biastransfer.stages import PRETRAINED, parse_stage

PROFILE_REQUIRED = (
    "analysis_set",
    "model",
    "layer",
    "depth",
    "measure",
    "stage",
    "finetune_dataset",
    "seed",
    "item",
    "estimate",
    "ci_low",
    "ci_high",
)


def _layers(rows: pd.DataFrame) -> list[str]:
    return rows.drop_duplicates("layer").sort_values("depth")["layer"].tolist()


#: Legend words of an item that its name does not say (the BTS's intra and inter say themselves).
ITEM_WORDS = {"linear": "linear CKA"}
#: The marker of a finetuning dataset's BTS with its seeds pooled.
POOLED_MARKER = "*"


def _style(stage: str, dataset: str, datasets: list[str], seeds: list[int]) -> tuple[str, str, str]:
    """Colour, marker and legend words of a stage's line: grey diamonds for pretrained; one colour per finetuning
    dataset, one marker per seed (:func:`~biastransfer.report.style.seed_marker`), stars for the seeds pooled."""
    if stage == PRETRAINED:
        return style.network_colour(None, datasets), style.PRETRAINED_MARKER, style.stage_words(stage)
    colour = style.network_colour(dataset, datasets)
    if "-seed" not in stage:
        return colour, POOLED_MARKER, f"{style.stage_words(stage)}, seeds pooled"
    return colour, style.seed_marker(parse_stage(stage)[1], seeds), style.stage_words(stage)


def _draw(ax, rows: pd.DataFrame, layers: list[str], datasets: list[str], styles: dict | None = None) -> None:
    """One line per stage (and per item when ``styles`` maps items to line styles), with intervals."""
    groups = list(rows.groupby(["stage", "item"], sort=False))
    seeds = sorted({parse_stage(s)[1] for s in rows["stage"] if s != PRETRAINED and "-seed" in s})
    for k, ((stage, item), g) in enumerate(groups):
        g = g.set_index("layer").reindex(layers)
        x = np.arange(len(layers)) + 0.06 * (k - (len(groups) - 1) / 2)
        colour, marker, words = _style(stage, str(g["finetune_dataset"].dropna().iloc[0]), datasets, seeds)
        y = g["estimate"].to_numpy(float)
        err = np.vstack([y - g["ci_low"].to_numpy(float), g["ci_high"].to_numpy(float) - y])
        label = words + (f", {ITEM_WORDS.get(item, item)}" if styles else "")
        ax.errorbar(
            x,
            y,
            yerr=None if np.isnan(err).all() else err,
            color=colour,
            marker=marker,
            ms=3.5,
            ls=(styles or {}).get(item, "-"),
            capsize=2,
            elinewidth=0.7,
            label=label,
        )
    ax.axhline(0, color="0.5", lw=0.6)
    ax.set_xticks(np.arange(len(layers)), layers, rotation=30, ha="right")
    ax.set_xlabel("layer (shallow to deep)")


def profile_figure(profile: pd.DataFrame, *, analysis_set: str, model: str) -> Figure:
    """d of every iEAT test (one panel each) and the pooled BTS rho and linear CKA (last panel, CKA dotted)
    against depth, one line per stage, with their intervals."""
    require_columns(profile, PROFILE_REQUIRED, where="layer profile")
    rows = profile[(profile["analysis_set"] == analysis_set) & (profile["model"] == model)]
    if rows.empty:
        raise ValueError(f"layer profile: no rows for analysis set {analysis_set!r} and model {model!r}")
    layers = _layers(rows)
    datasets = [d for d in dict.fromkeys(rows["finetune_dataset"].astype(str)) if d]
    ieat = rows[rows["measure"] == "ieat"]
    tests = list(dict.fromkeys(ieat["item"]))
    panels = len(tests) + 1
    ncols = min(panels, 3)
    nrows = math.ceil(panels / ncols)
    with style.paper_style():
        fig, axes = style.paper_figure("double", 0.6 + 2.1 * nrows, nrows=nrows, ncols=ncols, squeeze=False)
        axes = axes.ravel()
        for ax, test in zip(axes, tests):
            _draw(ax, ieat[ieat["item"] == test], layers, datasets)
            role = ieat.loc[ieat["item"] == test, "role"].iloc[0] if "role" in ieat else ""
            ax.set_title(f"iEAT {test}" + (f"\n({role})" if isinstance(role, str) and role else ""))
            ax.set_ylabel("effect size d")
        pooled = rows[rows["measure"].isin(["bts", "cka"]) & (rows["seed"].astype(str) == "pooled")]
        ax = axes[len(tests)]
        _draw(ax, pooled, layers, datasets, styles={"intra": "-", "inter": "--", "linear": ":"})
        ax.set_title("BTS and linear CKA (seeds pooled)")
        ax.set_ylabel("rho or CKA (pre vs finetuned)")
        for extra in axes[panels:]:
            extra.axis("off")
        handles, labels = {}, {}
        for a in axes[:panels]:
            for h, lab in zip(*a.get_legend_handles_labels()):
                handles.setdefault(lab, h)
        labels = list(handles)
        fig.legend([handles[lab] for lab in labels], labels, loc="outside lower center", ncols=2)
        fig.suptitle(f"Layer profile of {model_label(model)} on {analysis_set} (bars: bootstrap intervals)")
    return fig


def _ieat_cell(g: pd.DataFrame) -> str:
    return estimate_cell(g["estimate"].mean(), g["ci_low"].min(), g["ci_high"].max(), 2)


def layer_latex(profile: pd.DataFrame, analysis_set: str) -> str:
    """A LaTeX document: per model and layer, each iEAT's d (pretrained; finetuned mean over seeds), the
    pooled BTS rho and the linear CKA against the pretrained layer of each finetuning dataset, with intervals."""
    require_columns(profile, PROFILE_REQUIRED, where="layer profile")
    rows = profile[profile["analysis_set"] == analysis_set]
    if rows.empty:
        raise ValueError(f"layer profile: no rows for analysis set {analysis_set!r}")
    datasets = [d for d in dict.fromkeys(rows["finetune_dataset"].astype(str)) if d]
    header = ["Model", "Layer", "Measure", "pretrained", *(f"ft-{latex_escape(d)}" for d in datasets)]
    body = []
    for model, m in rows.groupby("model", sort=False):
        for layer in _layers(m):
            at = m[m["layer"] == layer]
            ieat = at[at["measure"] == "ieat"]
            for test in dict.fromkeys(ieat["item"]):
                t = ieat[ieat["item"] == test]
                cells = [_ieat_cell(t[t["stage"] == PRETRAINED])]
                cells += [_ieat_cell(t[t["finetune_dataset"].astype(str) == d]) for d in datasets]
                body.append([model_label(model), latex_escape(layer), f"$d$ {latex_escape(test)}", *cells])
            bts = at[(at["measure"] == "bts") & (at["seed"].astype(str) == "pooled")]
            for kind in ("intra", "inter"):
                cells = []
                for d in datasets:
                    b = bts[(bts["item"] == kind) & (bts["finetune_dataset"].astype(str) == d)]
                    cells.append("--" if b.empty else estimate_cell(*b[["estimate", "ci_low", "ci_high"]].iloc[0], 2))
                body.append([model_label(model), latex_escape(layer), f"BTS $\\rho$ {kind}", "--", *cells])
            cka = at[(at["measure"] == "cka") & (at["seed"].astype(str) == "pooled")]
            if not cka.empty:
                cells = []
                for d in datasets:
                    c = cka[cka["finetune_dataset"].astype(str) == d]
                    cells.append("--" if c.empty else estimate_cell(*c[["estimate", "ci_low", "ci_high"]].iloc[0], 2))
                body.append([model_label(model), latex_escape(layer), "linear CKA", "--", *cells])
        body.append(None)
    lines = [
        "\\begin{tabular}{lll" + "r" * (1 + len(datasets)) + "}",
        "\\toprule",
        " & ".join(header) + " \\\\",
        "\\midrule",
    ]
    for row in body[:-1]:
        lines.append("\\midrule" if row is None else " & ".join(row) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    caption = (
        f"Layer profile on {latex_escape(analysis_set)}: iEAT effect size $d$ per layer (pretrained; finetuned: mean over "
        "seeds, interval from the lowest to the highest bound of the seeds' bootstrap intervals) and the BTS "
        "$\\rho$ between the pretrained and finetuned similarities (seeds pooled) with its bootstrap interval; linear "
        "CKA: how much of the pretrained embedding's linear structure the finetuned one keeps at that layer (1: all of "
        "it up to a rotation and a scale; seeds averaged), with its jackknife interval over images."
    )
    return standalone_document("\n".join(lines) + "\n", caption, landscape=len(datasets) > 1)


def layer_frame(profile: pd.DataFrame, analysis_set: str) -> pd.DataFrame:
    """The layer table's rows: every estimate with its interval, per model, layer, measure and stage."""
    require_columns(profile, PROFILE_REQUIRED, where="layer profile")
    rows = profile[profile["analysis_set"] == analysis_set]
    if rows.empty:
        raise ValueError(f"layer profile: no rows for analysis set {analysis_set!r}")
    return rows[list(PROFILE_REQUIRED[1:])].reset_index(drop=True)
