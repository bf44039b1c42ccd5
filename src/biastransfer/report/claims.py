"""The claims about groups of models in the report: their table (CSV rows, LaTeX) and a figure of every
model's value by group (results/summary/claims.csv and claim_values.csv; the words: report.findings.claims)."""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pandas as pd

from biastransfer.report.formatting import format_interval, format_number, format_p, latex_escape, require_columns
from biastransfer.report.latex import standalone_document, tabular

CLAIMS_REQUIRED = (
    "claim",
    "analysis_set",
    "measure",
    "kind",
    "x",
    "y",
    "direction",
    "n_x",
    "n_y",
    "difference",
    "ci_low",
    "ci_high",
    "level",
    "p",
    "p_adjusted",
    "p_floor",
    "detectable_difference",
    "models_needed",
    "verdict",
    "left_out",
)
VALUES_REQUIRED = ("claim", "side", "label", "model", "value", "value_min", "value_max", "n_seeds")

_DIRECTION_LATEX = {"greater": "$>$", "less": "$<$", "two-sided": "$\\neq$"}


def claims_frame(table: pd.DataFrame) -> pd.DataFrame:
    """The claims table's rows, verdict first (without its kind and interval level)."""
    require_columns(table, CLAIMS_REQUIRED, where="claims table")
    columns = ["verdict", *(c for c in CLAIMS_REQUIRED if c not in ("kind", "level", "verdict"))]
    return table[columns].reset_index(drop=True)


def left_out_text(value) -> str:
    """A claim's ``left_out`` cell as text: the models left out of its groups and why ("" for none; a CSV
    reads an empty cell as NaN)."""
    return value if isinstance(value, str) else ""


def claims_latex(table: pd.DataFrame) -> str:
    """Every claim: the difference x - y with its interval, the p and Holm-adjusted p, the design's floor
    and the verdict; the caption names the models left out of a claim's groups."""
    require_columns(table, CLAIMS_REQUIRED, where="claims table")
    cells = [
        [
            latex_escape(r.claim),
            latex_escape(f"{r.measure} ({r.analysis_set})"),
            f"{latex_escape(f'{r.x} - {r.y}')} {_DIRECTION_LATEX[r.direction]} 0",
            f"{r.n_x}, {r.n_y}",
            format_number(r.difference),
            format_interval(r.ci_low, r.ci_high),
            format_p(r.p, r.p_floor),
            format_p(r.p_adjusted),
            format_p(r.p_floor),
            latex_escape(r.verdict),
        ]
        for r in table.itertuples()
    ]
    head = ["Claim", "Measure", "Claimed", "$n$", "Difference", "CI", "$p$", "$p$ (Holm)", "smallest $p$", "Verdict"]
    body = tabular("lllrrrrrrp{5cm}", head, cells)
    level = f"{float(table['level'].iloc[0]):.0%}".replace("%", "\\%") if len(table) else "95\\%"
    caption = (
        "Claims about groups of models, with models as units (each model's seeds averaged): the difference "
        f"x $-$ y with its {level} $t$ interval, the exact permutation $p$ over the models' group labels (or "
        "sign flips of paired models) in the claimed direction, Holm-adjusted over the claims, and the smallest "
        "$p$ the design can give. A claim whose smallest $p$ is not below alpha is not testable with so few models."
    )
    left_out = [f"{r.claim}: {left_out_text(r.left_out)}" for r in table.itertuples() if left_out_text(r.left_out)]
    if left_out:
        caption += " Left out of the groups (measured in no table): " + "; ".join(map(latex_escape, left_out)) + "."
    return standalone_document(body, caption, landscape=True)


def claims_figure(values: pd.DataFrame, table: pd.DataFrame):
    """One panel per claim: each model's value (seeds' mean, their range as a bar) by side, the sides' means;
    in a claim across datasets a line joins each model's two values (the pairs its test compares)."""
    from biastransfer.report.style import STAGE_COLOURS, paper_figure, paper_style  # matplotlib: figures only

    require_columns(values, VALUES_REQUIRED, where="claim values")
    claims = list(dict.fromkeys(table["claim"]))
    with paper_style():
        rows = math.ceil(len(claims) / 2)
        fig, axes = paper_figure("double", 1.9 * rows, nrows=rows, ncols=2, squeeze=False)
        for ax, name in zip(axes.flat, claims):
            row = table[table["claim"] == name].iloc[0]
            of_claim = values[values["claim"] == name]
            models = list(dict.fromkeys(of_claim["model"]))
            offset = dict(zip(models, np.linspace(-0.15, 0.15, len(models)) if len(models) > 1 else [0.0]))
            sides = {}
            for i, side in enumerate(("x", "y")):
                part = of_claim[of_claim["side"] == side]
                x = i + part["model"].map(offset).to_numpy(dtype=float)
                colour = STAGE_COLOURS[(i + 1) % len(STAGE_COLOURS)]
                # the seeds' range as its own line: a pooled BTS (similarities averaged first) may lie outside it
                ax.vlines(x, part["value_min"], part["value_max"], color=colour, linewidth=0.7, zorder=3)
                ax.plot(x, part["value"], "o", ms=3, color=colour, zorder=3)
                ax.hlines(part["value"].mean(), i - 0.3, i + 0.3, color="black", linewidth=1.2, zorder=4)
                sides[side] = dict(zip(part["model"], zip(x, part["value"])))
            if row["kind"] == "paired":
                for model in set(sides["x"]) & set(sides["y"]):
                    (x0, y0), (x1, y1) = sides["x"][model], sides["y"][model]
                    ax.plot([x0, x1], [y0, y1], color="0.6", linewidth=0.6, zorder=2)
            ax.set_xticks([0, 1], [str(row["x"]), str(row["y"])])
            ax.set_xlim(-0.6, 1.6)
            ax.set_ylabel(str(row["measure"]))
            verdict = row["verdict"].split(";")[0].split(" (")[0]
            ax.set_title(textwrap.fill(f"{name}: {verdict}", 48), fontsize=7)
        for ax in list(axes.flat)[len(claims) :]:
            ax.axis("off")
        fig.suptitle(
            "Each model's value (bar: its seeds' range); black line: the side's mean; grey line: a pair", fontsize=7
        )
    return fig
