"""The model zoo's ranked table (CSV and LaTeX) and its forest plot of iEAT effect sizes grouped by family.

Inputs: the iEAT summary (``results/summary/ieat.csv``, p-values adjusted within each analysis set across
models and tests), the per-model status records (``biastransfer.zoo``) and each model's ``about`` from the
config. Parameters are counted on the built image encoder by the status check; family and training data
are as the config states them (docs/zoo.md says where each comes from).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from biastransfer.report.formatting import (
    ADJUSTMENT_NAMES,
    ADJUSTMENTS,
    adjusted_floor,
    format_p,
    latex_escape,
    require_columns,
)
from biastransfer.report.latex import standalone_document
from biastransfer.report.style import OKABE_ITO, paper_figure, paper_style
from biastransfer.report.tables import IEAT_COLUMNS

#: The iEAT summary's columns the zoo reads: the pretrained networks' (no finetuning dataset or seed), and the
#: intervals' level.
ZOO_INPUT_COLUMNS = (*(c for c in IEAT_COLUMNS if c not in ("finetune_dataset", "seed")), "ci_level")
RANKING_COLUMNS = (
    "rank",
    "analysis_set",
    "test",
    "model",
    "family",
    "data",
    "params_m",
    "effect_size",
    "ci_low",
    "ci_high",
    "ci_level",
    "pvalue_two_sided",
    "pvalue",
    "alternative",
    "pvalue_adjusted",
    "adjust",
    "pvalue_floor",
    "X",
    "Y",
    "A",
    "B",
)
UNSTATED = "not stated"


def status_table(statuses: Sequence[Mapping], about: Mapping[str, Mapping]) -> pd.DataFrame:
    """One row per model: ok, error, counted parameters (millions), family and data as configured."""
    rows = []
    for s in statuses:
        meta = about.get(s["model"]) or {}
        params = s.get("params")
        rows.append(
            {
                "model": s["model"],
                "ok": bool(s["ok"]),
                "error": s.get("error") or "",
                "family": meta.get("family", UNSTATED),
                "data": meta.get("data", UNSTATED),
                "params_m": params / 1e6 if params else np.nan,
                "params_m_stated": meta.get("params_m", np.nan),
            }
        )
    return pd.DataFrame(rows, columns=["model", "ok", "error", "family", "data", "params_m", "params_m_stated"])


def ranking_table(ieat: pd.DataFrame, status: pd.DataFrame, *, adjust: str = "holm") -> pd.DataFrame:
    """Every pretrained iEAT of every model that passed its check, ranked by d within each test (1 = largest d).

    ``pvalue_adjusted`` is the summary's ``adjust`` column (Holm or BH within the analysis set).
    """
    if adjust not in ADJUSTMENTS:
        raise ValueError(f"adjust must be one of {sorted(ADJUSTMENTS)}, not {adjust!r}")
    require_columns(ieat, ZOO_INPUT_COLUMNS, where="iEAT summary")
    ok = status[status["ok"]].set_index("model")
    rows = ieat[(ieat["stage"] == "pretrained") & ieat["model"].isin(ok.index)].copy()
    rows["family"] = rows["model"].map(ok["family"])
    rows["data"] = rows["model"].map(ok["data"])
    rows["params_m"] = rows["model"].map(ok["params_m"]).round(1)
    rows["pvalue_adjusted"] = rows[ADJUSTMENTS[adjust]]
    rows["adjust"] = adjust
    rows = rows.sort_values(
        ["analysis_set", "test", "effect_size", "model"], ascending=[True, True, False, True], na_position="last"
    )
    rows["rank"] = rows.groupby(["analysis_set", "test"], sort=False).cumcount() + 1
    return rows.loc[:, list(RANKING_COLUMNS)].reset_index(drop=True)


def ranking_latex(ranking: pd.DataFrame, status: pd.DataFrame, *, analysis_set: str, test: str) -> str:
    """A standalone LaTeX document: the models ranked by d of one test, and the models that failed."""
    rows = ranking[(ranking["analysis_set"] == analysis_set) & (ranking["test"] == test)]
    if rows.empty:
        raise ValueError(f"the ranked table has no rows for test {test!r} of analysis set {analysis_set!r}")
    first = rows.iloc[0]
    adjust = ADJUSTMENT_NAMES[first["adjust"]]
    caption = (
        f"Models ranked by the iEAT effect size $d$ of {latex_escape(test)} on {latex_escape(analysis_set)} "
        f"(X = {latex_escape(first['X'])}, Y = {latex_escape(first['Y'])}, A = {latex_escape(first['A'])}, "
        f"B = {latex_escape(first['B'])}); pretrained embeddings, no finetuning. $p$ {adjust}: adjusted "
        f"across every model and test of the analysis set."
    )
    header = (
        f"\\toprule\n\\# & model & family & training data & params (M) & $d$ [{first['ci_level'] * 100:.0f}\\% CI] & "
        f"$p$ two-sided & $p$ ({latex_escape(first['alternative'])}) & $p$ {adjust} \\\\\n\\midrule\n"
    )
    head = (
        f"\\begin{{longtable}}{{rlllrrrrr}}\n\\caption*{{{caption}}} \\\\\n{header}\\endfirsthead\n{header}\\endhead\n"
    )
    body = "".join(
        f"{r.rank} & {latex_escape(r.model)} & {latex_escape(r.family)} & {latex_escape(r.data)} & "
        f"{'--' if np.isnan(r.params_m) else f'{r.params_m:.1f}'} & "
        f"${r.effect_size:.2f}$ [${r.ci_low:.2f}$, ${r.ci_high:.2f}$] & {format_p(r.pvalue_two_sided, r.pvalue_floor)} & "
        f"{format_p(r.pvalue, r.pvalue_floor)} & "
        f"{format_p(r.pvalue_adjusted, adjusted_floor(r.pvalue, r.pvalue_floor, r.pvalue_adjusted))} \\\\\n"
        for r in rows.itertuples()
    )
    failed = status[~status["ok"]]
    foot = "\\bottomrule\n"
    if len(failed):
        names = "; ".join(
            f"{latex_escape(r.model)} ({latex_escape(r.error.splitlines()[0][:120])})" for r in failed.itertuples()
        )
        foot += f"\\multicolumn{{9}}{{p{{0.95\\linewidth}}}}{{\\footnotesize Not audited (failed their check): {names}}} \\\\\n"
    table = head + body + foot + "\\end{longtable}\n"
    return standalone_document(table, caption, landscape=True)


def forest_figure(ranking: pd.DataFrame, status: pd.DataFrame, *, analysis_set: str, test: str) -> Figure:
    """d with its interval for every model on one test, rows grouped by family and ordered by d within it;
    the models that failed their check are named in the title."""
    rows = ranking[(ranking["analysis_set"] == analysis_set) & (ranking["test"] == test)]
    if rows.empty:
        raise ValueError(f"the ranked table has no rows for test {test!r} of analysis set {analysis_set!r}")
    rows = rows.sort_values(["family", "effect_size"], ascending=[False, True]).reset_index(drop=True)
    families = list(dict.fromkeys(rows["family"]))
    palette = [OKABE_ITO[c] for c in ("orange", "blue", "bluish_green", "vermillion", "reddish_purple", "sky_blue")]
    colours = {f: palette[i % len(palette)] for i, f in enumerate(families)}
    level = float(rows["ci_level"].iloc[0])
    failed = status.loc[~status["ok"], "model"].tolist()
    with paper_style(**{"axes.grid.axis": "x"}):
        fig, ax = paper_figure("double", 1.3 + 0.14 * len(rows))
        ax.axvline(0, color="0.5", lw=0.8)
        for family in families:
            sel = rows[rows["family"] == family]
            ax.errorbar(
                sel["effect_size"],
                sel.index,
                xerr=[sel["effect_size"] - sel["ci_low"], sel["ci_high"] - sel["effect_size"]],
                fmt="o",
                ms=3,
                capsize=1.5,
                color=colours[family],
                label=family,
            )
        for boundary in np.flatnonzero(rows["family"].to_numpy()[1:] != rows["family"].to_numpy()[:-1]):
            ax.axhline(boundary + 0.5, color="0.75", lw=0.6)
        ax.set_yticks(rows.index, rows["model"])
        ax.set_ylim(-0.7, len(rows) - 0.3)
        ax.set_xlabel(f"iEAT effect size d (unitless), {level:.0%} bootstrap interval")
        fig.legend(loc="outside lower center", ncols=min(4, len(families)), title="family")
        first = rows.iloc[0]
        title = (
            f"{analysis_set}: {test} (X = {first['X']}, Y = {first['Y']}, A = {first['A']}, B = {first['B']}), "
            f"pretrained, {len(rows)} models"
        )
        if failed:
            title += f". Not audited (failed their check): {', '.join(failed)}"
        fig.suptitle(textwrap.fill(title, 100))
    return fig
