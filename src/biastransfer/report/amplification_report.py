"""Prediction-level bias in the report: a LaTeX table per finetuning dataset of the amplification summary
(results/summary/amplification.csv, docs/formats.md), and its rows for the HTML report."""

from __future__ import annotations

import pandas as pd

from biastransfer.report.formatting import estimate_cell, latex_escape, model_label, rows_where
from biastransfer.report.latex import standalone_document, tabular
from biastransfer.stats.amplification import SUMMARY_COLUMNS

#: The summary's columns the table shows: all but the seeds pooled.
AMPLIFICATION_REQUIRED = tuple(c for c in SUMMARY_COLUMNS if c != "seeds")

#: The measures' words in the table, in its row order.
MEASURE_WORDS = {
    "directional": "BiasAmp$_{A\\to T}$",
    "zhao": "Zhao et al.",
    "leakage_model": "leakage (model)",
    "leakage_dataset_matched": "leakage (labels at matched F1)",
    "leakage_amplification": "leakage amplification",
    "leakage_embedding": "leakage (embedding)",
    "leakage_dataset": "leakage (ground truth)",
}


def _rows(summary: pd.DataFrame, dataset: str) -> pd.DataFrame:
    return rows_where(summary, AMPLIFICATION_REQUIRED, "dataset", dataset, where="amplification summary")


#: The columns beside a finetuned network's embedding leakage: the pretrained network's, its baseline.
BEFORE = ("pretrained", "pretrained_low", "pretrained_high")


def _baselines(rows: pd.DataFrame) -> pd.DataFrame:
    """Per row, the pretrained network's embedding leakage of its model (estimate and interval, :data:`BEFORE`)
    where the row is a finetuned network's embedding leakage, else empty: the pretrained network has no
    classifier head for the dataset's classes, so no other measure of it exists."""
    pre = rows[(rows["network"] == "pretrained") & (rows["measure"] == "leakage_embedding")]
    pre = pre.drop_duplicates("model").set_index("model")[["estimate", "ci_low", "ci_high"]]
    pre.columns = list(BEFORE)
    beside = (rows["network"] == "finetuned") & (rows["measure"] == "leakage_embedding")
    joined = rows[["model"]].join(pre, on="model")[list(BEFORE)]
    return joined.where(pd.DataFrame({c: beside for c in BEFORE}))


def amplification_frame(summary: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """The table's rows: every estimate with its interval, per trained network, model, seed, measure and
    threshold, and beside each finetuned network's embedding leakage the pretrained network's (:data:`BEFORE`)."""
    rows = _rows(summary, dataset)
    frame = pd.concat([rows[list(AMPLIFICATION_REQUIRED)], _baselines(rows)], axis=1)
    return frame[frame["network"] != "pretrained"].reset_index(drop=True)


def _cell(row: pd.Series) -> str:
    return estimate_cell(row["estimate"], row["ci_low"], row["ci_high"])


def amplification_latex(summary: pd.DataFrame, dataset: str) -> str:
    """A LaTeX document: per network family and model (seeds pooled where there are several), each measure at
    the threshold and at base rates, with its interval; the dataset's own leakage last."""
    rows = _rows(summary, dataset).fillna({"threshold": ""})
    rows = rows.assign(threshold=rows["threshold"].astype(str), seed=rows["seed"].astype(str))
    thresholds = [t for t in dict.fromkeys(rows["threshold"]) if t not in ("", "base_rate")]
    columns = [*thresholds, "base_rate"]
    header = [
        "Network",
        "Seeds",
        "Measure",
        *(f"at {latex_escape(t)}" if t != "base_rate" else "at base rate" for t in columns),
        "pretrained",
    ]
    before = _baselines(rows)
    body = []
    trained = rows[~rows["network"].isin(["dataset", "pretrained"])]
    for (network, model), m in trained.groupby(["network", "model"], sort=False):
        pooled = m[m["seed"] == "pooled"]
        chosen = pooled if not pooled.empty else m[m["seed"] == m["seed"].iloc[0]]
        seeds = "pooled" if not pooled.empty else f"seed {chosen['seed'].iloc[0]}"
        for measure, words in MEASURE_WORDS.items():
            at = chosen[chosen["measure"] == measure]
            if at.empty:
                continue
            if (at["threshold"] == "").all():  # a measure of no threshold (the embedding's): first column
                cells = [_cell(at.iloc[0]), *(["--"] * (len(columns) - 1))]
            else:
                cells = [_cell(hit.iloc[0]) if not (hit := at[at["threshold"] == t]).empty else "--" for t in columns]
            pre = before.loc[at.index[0]]
            cells.append("--" if pd.isna(pre["pretrained"]) else estimate_cell(*pre[list(BEFORE)]))
            body.append([f"{latex_escape(network)} {model_label(model)}", seeds, words, *cells])
    for _, row in rows[rows["network"] == "dataset"].iterrows():
        body.append(["dataset", "--", MEASURE_WORDS["leakage_dataset"], _cell(row), *(["--"] * len(columns))])
    table = tabular("lll" + "r" * (len(columns) + 1), header, body)
    first = rows.iloc[0]
    caption = (
        f"Prediction-level bias of the networks trained on {latex_escape(dataset)}, on its test split "
        f"({int(first['n_images'])} images with an attribute: {latex_escape(str(first['images_per_attribute']))}; "
        f"{int(first['n_excluded'])} without one left out). Bias amplification A$\\to$T and leakage of the "
        f"attribute, each with its {float(first['level']):.0%} percentile bootstrap interval over images "
        f"({int(first['replicates'])} replicates); positive amplification: predictions push each object towards "
        "the attribute it co-occurs with. Leakage is an attacker's held-out balanced accuracy (chance: 1 over the "
        "number of attribute values); the embedding's and the ground truth's depend on no threshold. Pretrained: "
        "the pretrained network's embedding leakage on the same images, beside each finetuned network's (the "
        "pretrained network has no classifier head for these classes, so no other measure of it exists: --)."
    ).replace("%", "\\%")
    return standalone_document(table, caption)
