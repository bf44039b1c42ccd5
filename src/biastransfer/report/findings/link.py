"""The link across levels in words (results/summary/link.csv, link_correlation.csv): whether each network
family's predictions act on each linked iEAT's association (the primary measure: the seeds-pooled contrast,
judged by its p adjusted within the family's declared pairs, as the landing page and the tables judge it), and
whether the embedding-level d ranks the networks as their predictions do."""

from __future__ import annotations

import pandas as pd

from biastransfer.report.findings.prose import estimate, interval, value_range
from biastransfer.report.formatting import (
    ADJUSTMENT_WORDS,
    OPPOSITE_EFFECT,
    Significance,
    adjusted_floor,
    p_text,
    prediction_verdict,
    require_columns,
)

#: Said where a network's predictions act on a pair against the sign of its own embedding's large d.
SIGN_DISAGREEMENT = (
    " The two levels disagree in sign here, and need not agree: d says how the images lie in the embedding, "
    "the contrast what the classifier head predicts on the test split beyond its labels, and a head trained on "
    "the target labels can act against its embedding's association (docs/statistics.md)."
)


#: The prediction verdicts as the findings' verbs.
ACTS = {
    "amplifies": "amplifies",
    "reduces": "reduces",
    "neither": "neither amplifies nor reduces",
    "not estimable": "cannot be judged on",
}


def _disagree(word: str, d: float) -> bool:
    """Whether a primary verdict acts on the pair against the sign of a large (|d| >= 0.5) embedding d."""
    if pd.isna(d) or abs(d) < OPPOSITE_EFFECT:
        return False
    return (word == "amplifies" and d < 0) or (word == "reduces" and d > 0)


def _members(row, table: pd.DataFrame) -> pd.DataFrame:
    """The per-seed rows of a row's network family and linked iEAT."""
    same = (table["network"] == row.network) & (table["model"] == row.model) & (table["dataset"] == row.dataset)
    return table[
        same
        & (table["analysis_set"] == row.analysis_set)
        & (table["test"] == row.test)
        & (table["seed"].astype(str) != "pooled")
    ]


def _seeds(row, table: pd.DataFrame) -> str:
    return f"{len(_members(row, table))} seeds pooled" if row.seed == "pooled" else f"seed {row.seed}"


def _acts(row, rule: Significance) -> tuple[str, str]:
    """(the verdict, the sentence's verb phrase with its numbers) of a primary row."""
    p_adjusted = getattr(row, f"contrast_{rule.column}")
    word = prediction_verdict(row.contrast, p_adjusted, rule)
    p = "adjusted p not available"
    if not pd.isna(p_adjusted):
        bound = adjusted_floor(row.contrast_pvalue, row.contrast_pvalue_floor, p_adjusted)
        n = int(row.family_size)
        pairs = f"{n} pair{'s' if n != 1 else ''}"
        p = f"{ADJUSTMENT_WORDS[rule.adjust]}-adjusted {p_text(p_adjusted, bound)} over the network's {pairs}"
    return word, (
        f"{ACTS[word]} the {row.test} association ({row.first} rather than {row.second} with {row.attribute}): "
        f"contrast {row.contrast:+.3f} {interval(row.contrast_low, row.contrast_high, row.level, 3)}, {p}"
    )


def describe_link(
    table: pd.DataFrame | None, correlation: pd.DataFrame | None, alpha: float, adjust: str = "holm"
) -> list[str]:
    """Lines of the findings: per network family and linked iEAT, whether its predictions act on the association
    (the primary rows, judged by the run's ``alpha`` on the p adjusted by ``adjust`` within the family); per
    linked iEAT, the rank correlation between the levels across networks."""
    if table is None or table.empty:
        return []
    rule = Significance(alpha, adjust)
    require_columns(table, ("primary", "family_size", "contrast_pvalue_floor", f"contrast_{rule.column}"), where="link")
    title = "Does the embedding's association show up in the predictions? (primary measure)"
    lines = ["", f"{title}\n{'-' * len(title)}\n"]
    table = table.assign(seed=table["seed"].astype(str))
    for row in table[table["primary"].astype(bool)].itertuples():
        if row.seed != "pooled":
            embedding = estimate("d", row.d, row.d_low, row.d_high, level=row.level)
        else:
            own = _members(row, table)["d"].dropna()
            embedding = f"d {value_range(own.min(), own.max())} over its seeds" if len(own) else "no d"
        if row.network == "finetuned":
            embedding += f" (pretrained {estimate('d', row.d_pretrained)})"
        own_d = row.d if row.seed != "pooled" else _members(row, table)["d"].mean()
        word, acts = _acts(row, rule)
        lines.append(
            f"- {row.network.capitalize()} {row.model} ({row.dataset}, {_seeds(row, table)}) {acts}; its "
            f"embedding on {row.analysis_set}: {embedding}." + (SIGN_DISAGREEMENT if _disagree(word, own_d) else "")
        )
    for row in (correlation if correlation is not None else pd.DataFrame()).itertuples():
        bounds = interval(row.ci_low, row.ci_high, row.level)
        lines.append(
            f"- Across the {row.n} networks of {row.dataset} ({row.networks}), {row.test} on {row.analysis_set}: "
            f"Spearman's rho between {row.embedding} and the contrast is {row.estimate:.2f}"
            + (f" {bounds}" if bounds else "")
            + f"; {row.verdict}."
        )
    lines += [
        "",
        "The contrast is the first object's shift towards the first attribute minus the second's, in the "
        "predictions on the test split at the score threshold, with its percentile bootstrap interval over "
        "images and the two-sided bootstrap p that inverts it; the verdict reads that p adjusted "
        f"({ADJUSTMENT_WORDS[adjust]}) over the declared pairs of the network family, seeds pooled, against alpha = "
        f"{alpha:g}; the per-seed contrasts are exploratory. rho's interval is Fisher's z with Bonett and Wright's "
        "variance (results/summary/link.csv, link_correlation.csv).",
        "",
    ]
    return lines
