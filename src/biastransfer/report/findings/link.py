"""The link across levels in words (results/summary/link.csv, link_correlation.csv): whether each network
family's predictions act on each linked iEAT's association (the seeds-pooled contrast, with the verdict words
of :mod:`.amplification`), and whether the embedding-level d ranks the networks as their predictions do."""

from __future__ import annotations

import pandas as pd

from biastransfer.report.findings.amplification import verdict
from biastransfer.report.findings.prose import estimate, interval, value_range


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
        lines.append(
            f"- {row.network.capitalize()} {row.model} ({row.dataset}, {_seeds(row, table)}) {_acts(row)}; its "
            f"embedding on {row.analysis_set}: {embedding}."
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


def link_sentences(table: pd.DataFrame) -> list[str]:
    """One line per finetuned model (and dataset) for the landing page: whether its seeds-pooled predictions act
    on each linked iEAT's association, with the contrast's interval."""
    lines = []
    fine = _families(table[table["network"] == "finetuned"]) if not table.empty else table
    for (model, dataset), rows in fine.groupby(["model", "dataset"], sort=False):
        seeds = _seeds(next(rows.itertuples()), table)
        parts = "; ".join(_acts(r) for r in rows.itertuples())
        lines.append(f"Predictions of {model} finetuned on {dataset} ({seeds}): {parts}.")
    return lines
