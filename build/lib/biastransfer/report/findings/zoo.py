"""The model zoo's findings in words (reStructuredText): which models failed, the ranking of the leading
test, each family's spread, and for every test how many models show the association in each direction.

Verdicts follow the run's one significance rule (report.formatting.Significance) on the ranked table's
adjusted p-values; a direction is called only where the interval of d
excludes 0. The ranking orders point estimates: two models whose intervals overlap are not shown to differ.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from biastransfer.report.findings.prose import estimate, value_range
from biastransfer.report.formatting import ADJUSTMENT_NAMES, Significance, adjusted_floor, p_text

ZOO_SCOPE = (
    "Each row is one pretrained network's embeddings of the same images; no model was finetuned. The ranking "
    "orders point estimates of d: models whose intervals overlap are not shown to differ (no test between "
    "models is made here), and a model's d depends on its preprocessing and embedding layer as configured."
)


def _effect(row) -> str:
    return estimate("d", row.effect_size, row.ci_low, row.ci_high)


def _title(text: str, underline: str = "-") -> list[str]:
    return [text, underline * len(text), ""]


def describe_zoo(
    ranking: pd.DataFrame, status: pd.DataFrame, *, analysis_set: str, test: str, alpha: float = 0.05
) -> str:
    """The zoo's findings as reStructuredText."""
    lines = _title("Model zoo: pretrained iEATs across models", "=")
    failed = status[~status["ok"]]
    lines.append(
        f"{len(status)} models configured, {int(status['ok'].sum())} audited, {len(failed)} failed their check "
        "(weights fetched and model built before any analysis) and are left out:"
    )
    lines.append("")
    lines += [f"- **{r.model}**: {r.error.splitlines()[0]}" for r in failed.itertuples()] or ["- none"]
    lines += ["", ZOO_SCOPE, ""]
    if ranking.empty:
        return "\n".join(lines + ["No model passed its check: nothing was measured.", ""])
    rule = Significance(alpha, ranking["adjust"].iloc[0])
    adjust = ADJUSTMENT_NAMES[rule.adjust].replace("--", "-")
    level = f"{float(ranking['ci_level'].iloc[0]):.0%}"
    lead = ranking[(ranking["analysis_set"] == analysis_set) & (ranking["test"] == test)]
    if not lead.empty:
        first = lead.iloc[0]
        lines += _title(f"Ranking by {test} on {analysis_set}")
        lines.append(
            f"X = {first.X}, Y = {first.Y}, A = {first.A}, B = {first.B}; {level} intervals, "
            f"{adjust}-adjusted p across every model and test of {analysis_set}."
        )
        lines.append("")
        for word, row in (("Largest", lead.iloc[0]), ("Smallest", lead.iloc[-1])):
            lines.append(
                f"- {word} d: **{row.model}** ({row.family}, {row.data}): {_effect(row)}, "
                f"adjusted {p_text(row.pvalue_adjusted, adjusted_floor(row.pvalue, row.pvalue_floor, row.pvalue_adjusted))}."
            )
        lines.append("")
        for family, rows in lead.groupby("family", sort=True):
            sig = int(rows["pvalue_adjusted"].map(rule.significant).sum())
            lines.append(
                f"- {family} ({len(rows)} model{'s' if len(rows) != 1 else ''}): median d {rows['effect_size'].median():.2f}, range "
                f"{value_range(rows['effect_size'].min(), rows['effect_size'].max())}; {sig} with adjusted p < {alpha:g}."
            )
        lines.append("")
    lines += _title("Every test")
    for (aset, name), rows in ranking.groupby(["analysis_set", "test"], sort=True):
        positive = int((rows["ci_low"] > 0).sum())
        negative = int((rows["ci_high"] < 0).sum())
        sig = int(rows["pvalue_adjusted"].map(rule.significant).sum())
        alternative = rows["alternative"].iloc[0]
        top = rows.iloc[0]
        lines.append(
            f"- {aset}: {name}: {positive} of {len(rows)} models have an interval above 0 and {negative} "
            f"below 0; {sig} have adjusted p < {alpha:g} ({alternative}). Largest: {top.model}, {_effect(top)}."
        )
    lines.append("")
    missing = ranking[np.isnan(ranking["effect_size"])]
    if len(missing):
        lines.append(
            f"d is undefined (no spread of association scores) for: {', '.join(sorted(set(missing['model'])))}."
        )
        lines.append("")
    return "\n".join(lines)
