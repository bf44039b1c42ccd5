"""The factors questions in words (results/summary/factors.csv): each question's verdict, its coefficients
with their intervals, the models and degrees of freedom behind them, and the models left out."""

from __future__ import annotations

import pandas as pd

from biastransfer.report.findings.prose import estimate


def describe_factors(table: pd.DataFrame | None) -> list[str]:
    """The factors questions in words (reStructuredText lines); empty when the run asks none."""
    if table is None or table.empty:
        return []
    title = "What predicts the measures across models"
    lines = [title, "-" * len(title), ""]
    first = table.iloc[0]
    lines.append(
        "Each question regresses a measure of the models on their covariates (counts as log10, categories "
        "against their reference level), with random intercepts for the iEAT test and the model; each "
        f"coefficient's {float(first['level']):.0%} interval is a cluster bootstrap over models "
        f"({int(first['replicates'])} replicates). A question needs 10 models per coefficient; with fewer it "
        "has too few models, whatever its intervals say.\n"
    )
    for name, rows in table.groupby("question", sort=False):
        head = rows.iloc[0]
        terms = [
            estimate(str(r["term"]), r["estimate"], r["ci_low"], r["ci_high"], digits=3) + f" ({r['verdict']})"
            for r in rows.to_dict("records")
            if r["term"] != "intercept"
        ]
        left = head["left_out"] if isinstance(head["left_out"], str) and head["left_out"] else ""
        lines.append(
            f"- **{name}** ({head['measure']} on {head['analysis_set']}; {int(head['n_models'])} models, "
            f"{int(head['n_observations'])} observations, {int(head['df_resid'])} residual degrees of freedom): "
            f"{head['question_verdict']}. " + "; ".join(terms) + "." + (f" Left out: {left}." if left else "")
        )
    lines.append("")
    return lines
