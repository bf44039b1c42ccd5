"""The comparisons between finetuning arms in the report (results/summary/comparison.csv, docs/formats.md):
one table and one figure across every compared arm, per model and declared iEAT pair, of the change in
embedding d, the change in the prediction shift and the change in the validation metric, each with its
interval (:func:`biastransfer.stats.comparison.overview`), and where that leaves the arm
(:func:`biastransfer.report.findings.comparison.quadrant`)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from biastransfer.report.findings.comparison import quadrant
from biastransfer.report.formatting import estimate_cell, latex_escape, model_label, require_columns
from biastransfer.report.latex import standalone_document, tabular
from biastransfer.stats.comparison import SUMMARY_COLUMNS, overview

COMPARISON_REQUIRED = SUMMARY_COLUMNS


def comparison_frame(summary: pd.DataFrame) -> pd.DataFrame:
    """The table's rows: the overview with the quadrant of each row in words (``verdict``)."""
    require_columns(summary, COMPARISON_REQUIRED, where="comparison summary")
    rows = overview(summary)
    return rows.assign(verdict=[quadrant(r, p) for r, p in zip(rows["representation"], rows["predictions"])])


def comparison_latex(summary: pd.DataFrame) -> str:
    """A LaTeX document: per arm, model and iEAT, the change of d, of the prediction shift and of the
    validation metric, each with its interval, and the reading of the two levels."""
    rows = comparison_frame(summary)
    header = [
        "Arm",
        "Against",
        "Model",
        "iEAT",
        "Seeds",
        "$\\Delta d$",
        "$\\Delta$ shift",
        "$\\Delta$ metric",
        "Reading",
    ]
    body = [
        [
            latex_escape(r.arm),
            latex_escape(r.against),
            model_label(r.model),
            latex_escape(f"{r.test} ({r.analysis_set})"),
            latex_escape(r.seeds),
            estimate_cell(r.delta_d, r.delta_d_low, r.delta_d_high),
            estimate_cell(r.delta_shift, r.delta_shift_low, r.delta_shift_high),
            (latex_escape(r.metric) + " " if r.metric else "")
            + estimate_cell(r.delta_metric, r.delta_metric_low, r.delta_metric_high),
            latex_escape(r.verdict),
        ]
        for r in rows.itertuples()
    ]
    level = summary["ci_level"].dropna()
    level = f"{float(level.iloc[0]):.0%}" if len(level) else "the"
    caption = (
        "Each finetuning arm against what it is compared with (the same pretrained weights, seeds and images): "
        "the change (arm minus against) of iEAT d, of the prediction shift (the contrast of the pair's two objects' "
        f"shifts towards its first attribute, on the test split) and of the validation metric, each with its {level} "
        "interval: over seeds with the seeds as units (sign flips, t interval) where there are at least two; with one "
        "seed, d with the images as units (paired bootstrap), the shift from the two networks' bootstrap intervals "
        "taken as independent, and the metric without an interval. Reading: whether each level moved towards 0 "
        "(its interval excludes 0)."
    ).replace("%", "\\%")
    return standalone_document(tabular("lllllrrrp{4.5cm}", header, body), caption, landscape=True)


#: The most iEATs drawn as panels of their own; more share one panel, each point naming its iEAT.
MOST_PANELS = 4


def _point_label(arm: str, against: str, details: list[str]) -> str:
    """An arm's short name in the figure: less its ``against`` prefix (``coco_dfr`` against ``coco``: ``dfr``),
    with ``details`` (the model where the figure has several, the iEAT where a panel has several)."""
    short = arm.removeprefix(f"{against}_") or arm
    return f"{short} ({', '.join(details)})" if details else short


def comparison_figure(summary: pd.DataFrame):
    """One panel per iEAT (up to ``MOST_PANELS``, else one panel), one point per arm and model: the change of the prediction shift (x) against the
    change of d (y), each interval an error bar, the point's colour the change of the validation metric; the
    quadrant "reduced in the predictions, still in the representation" is the lower left for a positive
    association."""
    import matplotlib as mpl  # matplotlib: figures only

    from biastransfer.report.style import paper_figure, paper_style

    rows = comparison_frame(summary)
    tests = list(dict.fromkeys(rows["test"]))
    panels = [[t] for t in tests] if len(tests) <= MOST_PANELS else [tests]
    models = rows["model"].nunique()
    cost = rows["delta_metric"].to_numpy(float)
    span = float(np.nanmax(np.abs(cost))) if np.isfinite(cost).any() else 1.0
    norm = mpl.colors.TwoSlopeNorm(0.0, -(span or 1.0), span or 1.0)
    cmap = mpl.colormaps["coolwarm_r"]
    with paper_style():
        fig, axes = paper_figure("double", 3.2, ncols=len(panels), squeeze=False)
        for ax, panel in zip(axes[0], panels):
            part = rows[rows["test"].isin(panel)]
            ax.axhline(0, color="0.6", linewidth=0.6, zorder=1)
            ax.axvline(0, color="0.6", linewidth=0.6, zorder=1)
            x = part["delta_shift"].fillna(0.0).to_numpy(float)
            middle = (x.min() + x.max()) / 2
            for k, (r, xi) in enumerate(zip(part.itertuples(), x)):
                colour = "0.5" if math.isnan(r.delta_metric) else cmap(norm(r.delta_metric))
                # at least 0: an interval of two identical arms can sit a rounding error beside its estimate
                xerr = (
                    [[max(0.0, xi - r.delta_shift_low)], [max(0.0, r.delta_shift_high - xi)]]
                    if np.isfinite(r.delta_shift_low)
                    else None
                )
                yerr = (
                    [[max(0.0, r.delta_d - r.delta_d_low)], [max(0.0, r.delta_d_high - r.delta_d)]]
                    if np.isfinite(r.delta_d_low)
                    else None
                )
                ax.errorbar(
                    xi,
                    r.delta_d,
                    xerr=xerr,
                    yerr=yerr,
                    fmt="o" if np.isfinite(r.delta_shift) else "x",
                    ms=5,
                    mfc=colour,
                    mec="black",
                    mew=0.5,
                    ecolor="0.3",
                    elinewidth=0.7,
                    zorder=3,
                )
                # each label towards the panel's centre, alternately above and below its point so that
                # neighbours part, and out of the layout so that no label widens the figure
                right = xi > middle
                ax.annotate(
                    _point_label(r.arm, r.against, [r.model] * (models > 1) + [r.test] * (len(panel) > 1)),
                    (xi, r.delta_d),
                    fontsize=7,
                    xytext=(-3 if right else 3, 4 if k % 2 == 0 else -9),
                    textcoords="offset points",
                    ha="right" if right else "left",
                    in_layout=False,
                )
            if len(panel) == 1:
                role = part["role"].iloc[0] if isinstance(part["role"].iloc[0], str) else ""
                ax.set_title(panel[0] + (f" ({role})" if role else ""), fontsize=7)
            ax.set_xlabel("change of the prediction shift\n(arm minus against)")
        axes[0][0].set_ylabel("change of iEAT d (arm minus against)")
        fig.colorbar(
            mpl.cm.ScalarMappable(norm=norm, cmap=cmap), ax=axes[0].tolist(), label="change of the validation metric"
        )
        fig.suptitle("Each arm against what it is compared with (x: no prediction shift measured, placed at 0)")
    return fig
