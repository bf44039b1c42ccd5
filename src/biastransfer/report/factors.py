"""The factors questions in the report: their coefficient table (CSV rows, LaTeX) and a figure of each model's
value against the question's main covariate (results/summary/factors.csv and factor_values.csv; the words:
report.findings.factors)."""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pandas as pd

from biastransfer.report.formatting import format_interval, format_number, latex_escape, require_columns
from biastransfer.report.latex import standalone_document, tabular
from biastransfer.report.style import STAGE_COLOURS, paper_figure, paper_style

FACTORS_REQUIRED = (
    "question",
    "measure",
    "analysis_set",
    "term",
    "estimate",
    "ci_low",
    "ci_high",
    "estimate_mixed",
    "se_mixed",
    "verdict",
    "n_models",
    "n_units",
    "n_observations",
    "df_resid",
    "level",
    "replicates",
    "replicates_used",
    "models_needed",
    "too_few",
    "question_verdict",
    "left_out",
)
VALUES_REQUIRED = ("question", "model", "dataset", "value", "value_min", "value_max", "covariate", "covariate_value")


def factors_frame(table: pd.DataFrame) -> pd.DataFrame:
    """The coefficient table's rows, the question and its verdict first."""
    require_columns(table, FACTORS_REQUIRED, where="factors table")
    first = ["question", "question_verdict", "term", "verdict"]
    return table[[*first, *(c for c in FACTORS_REQUIRED if c not in first)]].reset_index(drop=True)


def factors_latex(table: pd.DataFrame) -> str:
    """Every coefficient of every question: the unit-mean estimate with its cluster-bootstrap interval, the
    mixed model's estimate and standard error, the models and residual degrees of freedom, the verdict; the
    caption names the models left out and the questions with too few models."""
    require_columns(table, FACTORS_REQUIRED, where="factors table")
    cells = [
        [
            latex_escape(r.question),
            latex_escape(f"{r.measure} ({r.analysis_set})"),
            latex_escape(r.term),
            format_number(r.estimate),
            format_interval(r.ci_low, r.ci_high),
            f"{format_number(r.estimate_mixed)} ({format_number(r.se_mixed)})",
            f"{r.n_models}",
            f"{r.df_resid}",
            latex_escape(r.verdict if isinstance(r.verdict, str) else ""),
        ]
        for r in table.itertuples()
    ]
    head = ["Question", "Measure", "Term", "Estimate", "CI", "Mixed (SE)", "Models", "df", "Verdict"]
    body = tabular("lllrrrrrp{4cm}", head, cells)
    level = f"{float(table['level'].iloc[0]):.0%}".replace("%", "\\%") if len(table) else "95\\%"
    replicates = int(table["replicates"].iloc[0]) if len(table) else 0
    caption = (
        "What predicts a measure across models: each question's coefficients, the least squares of each model's "
        f"mean (over tests and seeds) on its covariates, with the {level} cluster-bootstrap interval over models "
        f"({replicates} replicates; expanded percentile), beside the mixed model's estimate (random intercepts for "
        "the test and the model) and its standard error; counts enter as log10, categories as contrasts with "
        "their reference level; df: the residual degrees of freedom of the model means. A question with fewer "
        "than 10 models per coefficient has too few models."
    )
    few = [
        f"{q} ({int(rows['n_models'].iloc[0])} models, {int(rows['models_needed'].iloc[0])} needed)"
        for q, rows in table[table["too_few"].astype(bool)].groupby("question", sort=False)
    ]
    if few:
        caption += " Too few models: " + "; ".join(map(latex_escape, few)) + "."
    left_out = {r.question: r.left_out for r in table.itertuples() if isinstance(r.left_out, str) and r.left_out}
    if left_out:
        caption += (
            " Left out (measured in no table): "
            + "; ".join(latex_escape(f"{q}: {v}") for q, v in left_out.items())
            + "."
        )
    return standalone_document(body, caption, landscape=True)


def _positions(values: pd.Series) -> tuple[np.ndarray, list[str] | None]:
    """x positions of a covariate's values: the numbers, or the index of each sorted level (and the levels)."""
    numeric = pd.to_numeric(values, errors="coerce")
    if numeric.notna().all():
        return numeric.to_numpy(dtype=float), None
    levels = sorted(set(map(str, values)))
    return values.astype(str).map({level: i for i, level in enumerate(levels)}).to_numpy(dtype=float), levels


def factors_figure(values: pd.DataFrame, table: pd.DataFrame):
    """One panel per question: each model's mean value (its tests' and seeds' range as a bar) against the
    question's main covariate, and the main coefficient's estimate and interval in the title."""
    require_columns(values, VALUES_REQUIRED, where="factor values")
    require_columns(table, FACTORS_REQUIRED, where="factors table")
    questions = list(dict.fromkeys(table["question"]))
    with paper_style():
        rows = math.ceil(len(questions) / 2)
        fig, axes = paper_figure("double", 2.0 * rows, nrows=rows, ncols=2, squeeze=False)
        for ax, name in zip(axes.flat, questions):
            part = values[values["question"] == name]
            coefficients = table[table["question"] == name]
            main = str(part["covariate"].iloc[0])
            x, levels = _positions(part["covariate_value"])
            if levels is not None:
                x = x + np.random.default_rng(0).uniform(-0.15, 0.15, len(x))
                ax.set_xticks(range(len(levels)), [textwrap.fill(level, 14) for level in levels])
            colour = STAGE_COLOURS[1]
            ax.vlines(x, part["value_min"], part["value_max"], color=colour, linewidth=0.6, alpha=0.6, zorder=2)
            ax.plot(x, part["value"], "o", ms=3, color=colour, zorder=3)
            term = coefficients[coefficients["term"].astype(str).str.startswith(main)].iloc[0]
            ax.set_xlabel(main)
            ax.set_ylabel(str(coefficients["measure"].iloc[0]))
            title = (
                f"{name}: {term['term']} {term['estimate']:.3g} [{term['ci_low']:.3g}, {term['ci_high']:.3g}]; "
                f"{term['verdict']}"
            )
            ax.set_title(textwrap.fill(title, 56), fontsize=7)
        for ax in list(axes.flat)[len(questions) :]:
            ax.axis("off")
        fig.suptitle(
            "Each model's mean value (bar: its tests' and seeds' range) against the main covariate", fontsize=7
        )
    return fig
