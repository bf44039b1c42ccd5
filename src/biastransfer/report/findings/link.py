"""The link across levels in words (results/summary/link.csv, link_correlation.csv): whether each network
family's predictions act on each linked iEAT's association (the seeds-pooled contrast, with the verdict words
of :mod:`.amplification`), and whether the embedding-level d ranks the networks as their predictions do."""

from __future__ import annotations

import pandas as pd

from biastransfer.report.findings.amplification import verdict
from biastransfer.report.findings.prose import estimate, interval, value_range
from biastransfer.report.formatting import OPPOSITE_EFFECT

#: Said where a network's predictions act on a pair against the sign of its own embedding's large d.
SIGN_DISAGREEMENT = (
    " The two levels disagree in sign here, and need not agree: d says how the images lie in the embedding, "
    "the contrast what the classifier head predicts on the test split beyond its labels, and a head trained on "
    "the target labels can act against its embedding's association (docs/statistics.md)."
)


def _disagree(row, d: float) -> bool:
    """Whether the contrast's interval excludes 0 on the side opposite to a large (|d| >= 0.5) embedding d."""
    if pd.isna(d) or abs(d) < OPPOSITE_EFFECT:
        return False
    return bool(row.contrast_low > 0 > d or row.contrast_high < 0 < d)


def _families(table: pd.DataFrame) -> pd.DataFrame:
    """Each network family's pooled rows (its one seed's where it has one), per linked iEAT."""
    table = table.assign(seed=table["seed"].astype(str))
    parts = []
    for _, rows in table.groupby(["analysis_set", "test", "dataset", "network", "model"], sort=False):
        pooled = rows[rows["seed"] == "pooled"]
        parts.append(pooled if not pooled.empty else rows.iloc[:1])
    return pd.concat(parts) if parts else table


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


def _acts(row) -> str:
    word = verdict(row.contrast_low, row.contrast_high)
    return (
        f"{word} the {row.test} association ({row.first} rather than {row.second} with {row.attribute}): contrast "
        f"{row.contrast:+.3f} {interval(row.contrast_low, row.contrast_high, row.level, 3)}"
    )


def describe_link(table: pd.DataFrame | None, correlation: pd.DataFrame | None) -> list[str]:
    """Lines of the findings: per network family and linked iEAT, whether its predictions act on the association;
    per linked iEAT, the rank correlation between the levels across networks."""
    if table is None or table.empty:
        return []
    title = "Does the embedding's association show up in the predictions? (primary measure)"
    lines = ["", f"{title}\n{'-' * len(title)}\n"]
    for row in _families(table).itertuples():
        if row.seed != "pooled":
            embedding = estimate("d", row.d, row.d_low, row.d_high, level=row.level)
        else:
            own = _members(row, table)["d"].dropna()
            embedding = f"d {value_range(own.min(), own.max())} over its seeds" if len(own) else "no d"
        if row.network == "finetuned":
            embedding += f" (pretrained {estimate('d', row.d_pretrained)})"
        own_d = row.d if row.seed != "pooled" else _members(row, table)["d"].mean()
        lines.append(
            f"- {row.network.capitalize()} {row.model} ({row.dataset}, {_seeds(row, table)}) {_acts(row)}; its "
            f"embedding on {row.analysis_set}: {embedding}." + (SIGN_DISAGREEMENT if _disagree(row, own_d) else "")
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
        "images; rho's interval is Fisher's z with Bonett and Wright's variance (results/summary/link.csv, "
        "link_correlation.csv).",
        "",
    ]
    return lines
