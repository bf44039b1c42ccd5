"""The claims about groups of models in words (results/summary/claims.csv): each claim's verdict, the
difference with its interval, the smallest p its number of models allows, and the models left out."""

from __future__ import annotations

import pandas as pd

from biastransfer.report.claims import left_out_text
from biastransfer.report.findings.prose import estimate

_DIRECTION_WORDS = {"greater": ">", "less": "<", "two-sided": "≠"}


def claim_words(row) -> str:
    """``x - y > 0`` for one claim, with what x and y are."""
    return f"{row['measure']}: {row['x']} - {row['y']} {_DIRECTION_WORDS[row['direction']]} 0"


def describe_claims(table: pd.DataFrame | None) -> list[str]:
    """The claims in words (reStructuredText lines); empty when the run tests none."""
    if table is None or table.empty:
        return []
    title = "Claims about groups of models"
    lines = [title, "-" * len(title), ""]
    lines.append(
        "Each claim compares models, not images: every model is one unit (its seeds averaged), so the smallest "
        "p a claim can reach is set by how many models it has, whatever the data. p-values are exact "
        "permutation p-values over the models, Holm-adjusted over the claims.\n"
    )
    for r in table.to_dict("records"):
        lines.append(
            f"- **{r['claim']}** ({claim_words(r)}, on {r['analysis_set']}; {r['n_x']} and {r['n_y']} models): "
            f"{r['verdict']}. Difference {estimate('x - y', r['difference'], r['ci_low'], r['ci_high'])}, "
            f"adjusted p = {r['p_adjusted']:.2g} (smallest attainable p {r['p_floor']:.2g})."
            + (f" Left out of its groups: {left_out_text(r['left_out'])}." if left_out_text(r.get("left_out")) else "")
        )
    lines.append("")
    return lines


def claims_sentence(table: pd.DataFrame) -> str:
    """One sentence for the report's landing page: how many claims each verdict got."""
    verdicts = table["verdict"].astype(str)
    counts = {
        "supported": int((verdicts == "supported").sum()),
        "contradicted": int((verdicts == "contradicted").sum()),
        "not testable with so few models": int(verdicts.str.startswith("not testable").sum()),
        "not supported": int(verdicts.str.startswith("not supported").sum()),
    }
    parts = ", ".join(f"{n} {word}" for word, n in counts.items() if n)
    return f"Claims about groups of models, with models as units: of {len(table)}, {parts} (see the findings)."
