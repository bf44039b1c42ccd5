"""iEAT figures: the heat map of effect sizes (models x tests, one panel per stage) and the forest plot
of what finetuning changed (delta d per seed with its paired bootstrap interval).

The heat map uses the ColorBrewer ``PuOr`` diverging map (colour-blind safe), centred on d = 0.
"""

from __future__ import annotations

import textwrap

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure

from biastransfer.report.formatting import (
    OPPOSITE_EFFECT,
    Significance,
    model_label,
    opposite_direction,
    ordered_groups,
    p_text,
    require_columns,
)
from biastransfer.report.style import message_figure, paper_figure, paper_style, stage_words
from biastransfer.report.tables import ieat_by_stage

CHANGE_COLUMNS = (
    "analysis_set",
    "model",
    "finetune_dataset",
    "seed",
    "test",
    "delta_d",
    "ci_low",
    "ci_high",
    "pvalue",
    "pvalue_floor",
    "ci_level",
)


def ieat_columns(tests: pd.DataFrame) -> tuple[list[str], str]:
    """Column labels ("A vs B") of the heat map's tests and the title's words for their targets.

    Targets shared by every test go in the title; otherwise each label names its own X/Y. Labels are
    prefixed with the analysis set when there are several, and fall back to test names if they collide.
    """
    pairs = set(zip(tests["X"], tests["Y"]))
    shared = len(pairs) == 1
    several_sets = tests["analysis_set"].nunique() > 1
    columns = []
    for r in tests.itertuples(index=False):
        label = f"{r.A} vs {r.B}" if shared else f"{r.A} vs {r.B} ({r.X}/{r.Y})"
        columns.append(f"{r.analysis_set}: {label}" if several_sets else label)
    if len(set(columns)) < len(columns):
        columns = [f"{r.analysis_set}: {r.test}" if several_sets else r.test for r in tests.itertuples(index=False)]
    targets = "X vs Y = {} vs {}".format(*next(iter(pairs))) if shared else "X/Y as each column says"
    return columns, targets


def _compact(label: str, width: int = 12) -> str:
    """A column label on short lines: an analysis-set prefix on its own line, ``vs`` kept with the next word."""
    prefix, _, rest = label.rpartition(": ")
    lines = textwrap.wrap(
        rest.replace(" vs ", " vs\u00a0"), width=width, break_long_words=False, break_on_hyphens=False
    )
    return "\n".join(([f"{prefix}:"] if prefix else []) + [line.replace("\u00a0", " ") for line in lines])


def ieat_heatmap(ieat: pd.DataFrame, *, alpha: float, adjust: str = "holm") -> Figure:
    """iEAT effect sizes: one panel per stage group (stacked), rows = models, columns = concept pairs.

    A cell holds the effect size (mean over seeds for finetuned groups) with the stars of the run's
    significance rule (:class:`~biastransfer.report.formatting.Significance`: none unless its adjusted
    p-value, the largest over seeds, is below ``alpha``), and a dagger when |d| >= 0.5 against a one-sided
    test's direction (which its p cannot detect). Blank cells: the test was not run for that model and
    stage. The colour bar spans the panels' full height.
    """
    rule = Significance(alpha, adjust)
    agg = ieat_by_stage(ieat)
    groups = ordered_groups(agg["group"])
    models = list(dict.fromkeys(agg["model"]))
    tests = agg[["analysis_set", "test", "X", "Y", "A", "B"]].drop_duplicates(["analysis_set", "test"])
    columns, targets = ieat_columns(tests)
    limit = max(0.5, float(np.nanmax(np.abs(agg["effect_size"]))))
    norm = TwoSlopeNorm(vmin=-limit, vcenter=0.0, vmax=limit)
    cmap = matplotlib.colormaps["PuOr_r"].with_extremes(bad="#f0f0f0")
    index = agg.set_index(["analysis_set", "test", "model", "group"])
    seeds = agg.groupby("group")["n_seeds"].max()
    with paper_style(**{"axes.grid": False}):
        labels = [_compact(c) for c in columns]
        # wrapped labels when their longest line fits a column (about 0.06 in per 7 pt character), else rotated
        wrapped = max(len(line) for label in labels for line in label.split("\n")) * 0.06 < 5.4 / len(columns)
        labels = labels if wrapped else [c.replace(": ", ":\n", 1) for c in columns]
        label_lines = max(label.count("\n") + 1 for label in labels) if wrapped else 0.3 * max(map(len, columns)) / 5
        height = 0.55 + 0.12 * label_lines + len(groups) * (0.3 + 0.24 * len(models))
        fig, axes = paper_figure("double", height, nrows=len(groups), squeeze=False, sharex=True)
        for ax, group in zip(axes[:, 0], groups):
            values = np.full((len(models), len(columns)), np.nan)
            for i, model in enumerate(models):
                for j, t in enumerate(tests.itertuples(index=False)):
                    key = (t.analysis_set, t.test, model, group)
                    if key in index.index:
                        r = index.loc[key]
                        values[i, j] = r["effect_size"]
                        flag = "†" if opposite_direction(r["effect_size"], r["alternative"]) else ""
                        ax.text(
                            j,
                            i,
                            f"{r['effect_size']:.2f}{rule.stars(r[rule.column])}{flag}",
                            ha="center",
                            va="center",
                            fontsize=7,
                            color="white" if abs(r["effect_size"]) > 0.6 * limit else "black",
                        )
            image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, norm=norm, aspect="auto")
            ax.set_xticks(
                range(len(columns)),
                labels,
                rotation=0 if wrapped else 30,
                ha="center" if wrapped else "right",
                rotation_mode="anchor",
            )
            ax.set_yticks(range(len(models)), [model_label(m) for m in models])
            ax.tick_params(length=0)
            ax.set_title(stage_words(group, None if group == "pretrained" else int(seeds[group])))
        fig.colorbar(
            image, ax=axes[:, 0].tolist(), label="iEAT effect size d", fraction=0.04, aspect=8 * len(groups), pad=0.01
        )
        fig.suptitle(
            f"iEAT effect sizes d ({targets}); finetuned: d is the mean over seeds\n"
            f"{rule.legend()}\n"
            f"finetuned: the largest p over seeds; †: |d| ≥ {OPPOSITE_EFFECT:g} against the tested direction"
        )
    return fig


def change_figure(change: pd.DataFrame) -> Figure:
    """The change of every iEAT's d from pretrained to each finetuned seed, with paired bootstrap intervals.

    One row per (analysis set, model, finetune dataset, test, seed); the point is delta d, the bar its
    interval, and the label says the two-sided p (a bound at the bootstrap floor).
    """
    require_columns(change, CHANGE_COLUMNS, where="iEAT change summary")
    if change.empty:  # no iEATs configured, or analysis.ieat.bootstrap = 0
        return message_figure("No iEAT changes: no iEATs configured,\nor analysis.ieat.bootstrap is 0")
    rows = change.reset_index(drop=True)
    several = rows["analysis_set"].nunique() > 1 or rows["model"].nunique() > 1
    labels = [
        "\n".join(
            textwrap.wrap(
                (f"{r.analysis_set}/{model_label(r.model)}, " if several else "")
                + f"{r.finetune_dataset} seed {r.seed}: {r.test}",
                44,
            )
        )
        for r in rows.itertuples()
    ]  # wrapped: a long label would widen the figure past its page
    y = np.arange(len(rows))[::-1]
    with paper_style():
        fig, ax = paper_figure("double", 1.1 + 0.14 * sum(label.count("\n") + 1 for label in labels) + 0.06 * len(rows))
        ax.axvline(0, color="0.5", lw=0.8)
        ax.errorbar(
            rows["delta_d"],
            y,
            xerr=[rows["delta_d"] - rows["ci_low"], rows["ci_high"] - rows["delta_d"]],
            fmt="o",
            color="#5e3c99",
            ecolor="#b2abd2",
            capsize=2,
            ms=4,
        )
        ends = rows[["delta_d", "ci_low", "ci_high"]].to_numpy(float)
        finite = ends[np.isfinite(ends)]
        low, high = (float(finite.min()), float(finite.max())) if finite.size else (-1.0, 1.0)
        high = high if high > low else low + 1.0
        for yi, r in zip(y, rows.itertuples()):
            estimable = np.isfinite(r.ci_high)
            label = (
                p_text(float(r.pvalue), float(r.pvalue_floor))
                if estimable
                else "interval not estimable (set too small)"
            )
            anchor = r.ci_high if estimable else (r.delta_d if np.isfinite(r.delta_d) else low)
            ax.annotate(label, (anchor, yi), xytext=(4, 0), textcoords="offset points", va="center", fontsize=7)
        ax.set_xlim(min(low, 0) - 0.05 * (high - low), high + 0.3 * (high - low))  # room for the p labels
        ax.set_yticks(y, labels)
        ax.grid(True, axis="x", alpha=0.3)
        ax.set_xlabel("change of the iEAT effect size, d(finetuned) − d(pretrained)")
        level = float(rows["ci_level"].iloc[0])
        title = f"What finetuning changed: same images, paired bootstrap {level:.0%} intervals, two-sided p"
        if not several:
            title = f"{model_label(rows['model'].iloc[0])}, analysis set {rows['analysis_set'].iloc[0]}. {title}"
        fig.suptitle("\n".join(textwrap.wrap(title, 100)))
    return fig
