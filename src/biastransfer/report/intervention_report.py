"""Interventions in the report: a LaTeX table per intervention of the intervention summary
(results/summary/intervention.csv, docs/formats.md), and its rows for the HTML report."""

from __future__ import annotations

import pandas as pd

from biastransfer.report.formatting import estimate_cell, latex_escape, model_label, rows_where
from biastransfer.report.latex import standalone_document, tabular
from biastransfer.stats.intervention import SUMMARY_COLUMNS

INTERVENTION_REQUIRED = SUMMARY_COLUMNS


def _rows(summary: pd.DataFrame, intervention: str) -> pd.DataFrame:
    return rows_where(summary, INTERVENTION_REQUIRED, "intervention", intervention, where="intervention summary")


def intervention_frame(summary: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """The table's rows: every comparison of the intervention ``dataset`` with its interval and verdict."""
    return _rows(summary, dataset)[list(INTERVENTION_REQUIRED)].reset_index(drop=True)


def intervention_latex(summary: pd.DataFrame, dataset: str) -> str:
    """A LaTeX document: d of the untouched and the intervened networks and the change over seeds (per seed
    when there is one), then the prediction-level measures side by side (seeds pooled where there are several);
    what the intervention did to the training split in the caption."""
    rows = _rows(summary, dataset).astype({"threshold": object, "role": object}).fillna({"threshold": "", "role": ""})
    embedding = rows[rows["level"] == "embedding"]
    many = (embedding["unit"] == "seeds").any() and (embedding["n"][embedding["unit"] == "seeds"] >= 2).any()
    embedding = embedding[embedding["unit"] == ("seeds" if many else "images")]
    prediction = rows[rows["level"] == "prediction"]
    if (prediction["seed"].astype(str) == "pooled").any():
        prediction = prediction[prediction["seed"].astype(str) == "pooled"]
    header = ["Model", "Measure", "Untouched", "Intervened", "Change"]
    body = []
    for r in embedding.itertuples():
        what = f"iEAT {latex_escape(r.name)} on {latex_escape(r.analysis_set)}"
        body.append(
            [
                model_label(r.model),
                what,
                estimate_cell(r.untouched),
                estimate_cell(r.intervened),
                estimate_cell(r.delta, r.ci_low, r.ci_high),
            ]
        )
    for r in prediction.itertuples():
        what = latex_escape(r.name + (f" at {r.threshold}" if r.threshold else ""))
        body.append(
            [
                model_label(r.model),
                what,
                estimate_cell(r.untouched, r.untouched_low, r.untouched_high),
                estimate_cell(r.intervened, r.intervened_low, r.intervened_high),
                estimate_cell(r.delta),
            ]
        )
    table = tabular("llrrr", header, body)
    measured = rows[rows["level"] != "data"]
    first = (measured if not measured.empty else rows).iloc[0]
    unit = "seeds as units (sign flips, t interval)" if many else "images as units (paired bootstrap)"
    split = "".join(
        f" Training split: {latex_escape(str(r.verdict))}." for r in rows[rows["level"] == "data"].itertuples()
    )
    caption = (
        f"The intervention {latex_escape(dataset)} against the untouched finetuning on "
        f"{latex_escape(str(first['from']))}: the same pretrained weights, seeds and analysis images. iEAT d "
        f"(mean over seeds) and its change with its {float(first['ci_level']):.0%} interval, {unit}; the "
        "prediction-level measures of the same networks on the same test split, each with its own bootstrap "
        f"interval (side by side: no paired interval of their difference).{split}"
    ).replace("%", "\\%")
    return standalone_document(table, caption)
