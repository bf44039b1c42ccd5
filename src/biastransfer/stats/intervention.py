"""Did an intervention on the finetuning data move the association? The intervention summary
(results/summary/intervention.csv): the paired change of d between the intervened networks and the untouched
ones (:func:`biastransfer.stats.comparison.paired_change_table`, the tables of the pair the intervention makes
with its ``from``), the prediction-level measures of the same networks side by side, and what the
intervention did to its training split.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from biastransfer.stats import comparison
from biastransfer.stats.comparison import CHANGE_TEST

#: The intervention summary's columns (results/summary/intervention.csv, docs/formats.md).
SUMMARY_COLUMNS = (
    "intervention",
    "from",
    "analysis_set",
    "model",
    "level",
    "name",
    "role",
    "threshold",
    "unit",
    "seed",
    "n",
    "untouched",
    "untouched_low",
    "untouched_high",
    "intervened",
    "intervened_low",
    "intervened_high",
    "delta",
    *CHANGE_TEST,
)
#: This summary's names of the comparison summary's columns (the rest keep theirs).
COMPARISON_NAMES = {
    "arm": "intervention",
    "against": "from",
    "value_against": "untouched",
    "against_low": "untouched_low",
    "against_high": "untouched_high",
    "value_arm": "intervened",
    "arm_low": "intervened_low",
    "arm_high": "intervened_high",
}
#: The prediction-level measures set side by side (rows of results/summary/amplification.csv).
PREDICTION_MEASURES = ("directional", "zhao", "leakage_model", "leakage_embedding", "leakage_amplification")


def embedding_rows(table: pd.DataFrame, intervention: str, source: str, analysis_set: str, model: str) -> pd.DataFrame:
    """A :func:`~biastransfer.stats.comparison.paired_change_table` of the intervention (the arm) against its
    ``source`` in the summary's columns (``level`` embedding, ``name`` the test): the comparison's rows
    (:func:`biastransfer.stats.comparison.embedding_rows`) under this summary's names."""
    rows = comparison.embedding_rows(table, intervention, source, analysis_set, model)
    return rows.rename(columns=COMPARISON_NAMES).reindex(columns=list(SUMMARY_COLUMNS))


def training_split_verdict(kept: int, images: int, changed: bool, method: str) -> str:
    """What an intervention did to its training split, in words; for one that changed nothing, what that
    means for every comparison of its networks."""
    if not changed:
        return (
            f"the intervention changed nothing in the training split ({kept} of {images} images kept, every "
            "weight 1: each object was already at its target), so its networks learn from the same data as the "
            "untouched ones and any difference between them is not the intervention's"
        )
    if method == "reweight":
        return f"every one of the {images} training images kept, drawn by its sampling weight (reweight)"
    return f"{kept} of {images} training images kept (subsample)"


def data_rows(cooccurrence: pd.DataFrame, intervention: str, source: str) -> pd.DataFrame:
    """The intervention's training split in the summary's columns (``level`` data, ``name`` training split):
    ``untouched`` its source's images, ``intervened`` those kept, and the verdict of
    :func:`training_split_verdict`, from its co-occurrence table (results/interventions/{name}/cooccurrence.csv)."""
    first = cooccurrence.iloc[0]
    images, kept, changed = int(first["split_images"]), int(first["split_kept"]), bool(first["changed"])
    return pd.DataFrame(
        [
            {
                "intervention": intervention,
                "from": source,
                "analysis_set": "",
                "model": "",
                "level": "data",
                "name": "training split",
                "role": "",
                "threshold": "",
                "unit": "images",
                "seed": "",
                "n": images,
                "untouched": images,
                "intervened": kept,
                "delta": kept - images,
                "method": first["method"],
                "verdict": training_split_verdict(kept, images, changed, first["method"]),
            }
        ],
        columns=list(SUMMARY_COLUMNS),
    )


def side_by_side(low_u: float, high_u: float, low_i: float, high_i: float, zero_u: bool) -> str:
    """Two networks' intervals of one prediction-level measure in words (each its own bootstrap: no paired
    interval of the difference, so only disjoint intervals count as a difference)."""
    if high_i < low_u:
        text = "lower after the intervention (the intervals do not overlap)"
    elif low_i > high_u:
        text = "higher after the intervention (the intervals do not overlap)"
    else:
        text = "no difference shown (the intervals overlap)"
    zero_i = low_i <= 0 <= high_i
    if zero_u != zero_i:
        text += "; the interval contains 0 " + ("after the intervention only" if zero_i else "before it only")
    return text


def prediction_rows(amplification: pd.DataFrame, intervention: str, source: str) -> pd.DataFrame:
    """The finetuned networks' prediction-level measures (:data:`PREDICTION_MEASURES`) on the intervention and
    on ``source``, matched by model, seed, measure and threshold, side by side (``level`` prediction)."""
    finetuned = amplification[
        (amplification["network"] == "finetuned") & amplification["measure"].isin(PREDICTION_MEASURES)
    ]
    finetuned = finetuned.assign(
        threshold=finetuned["threshold"].fillna("").astype(str), seed=finetuned["seed"].astype(str)
    )
    keys = ["model", "seed", "measure", "threshold"]
    both = finetuned[finetuned["dataset"] == source].merge(
        finetuned[finetuned["dataset"] == intervention], on=keys, suffixes=("_u", "_i")
    )
    return pd.DataFrame(
        {
            "intervention": intervention,
            "from": source,
            "analysis_set": "",
            "model": both["model"],
            "level": "prediction",
            "name": both["measure"],
            "role": "",
            "threshold": both["threshold"],
            "unit": "images",
            "seed": both["seed"],
            "n": both["n_images_i"],
            "untouched": both["estimate_u"],
            "untouched_low": both["ci_low_u"],
            "untouched_high": both["ci_high_u"],
            "intervened": both["estimate_i"],
            "intervened_low": both["ci_low_i"],
            "intervened_high": both["ci_high_i"],
            "delta": both["estimate_i"] - both["estimate_u"],
            "ci_low": np.nan,
            "ci_high": np.nan,
            "ci_level": both["level_i"],
            "pvalue": np.nan,
            "min_pvalue": np.nan,
            "method": "side by side",
            "verdict": [
                side_by_side(a, b, c, d, a <= 0 <= b)
                for a, b, c, d in zip(both["ci_low_u"], both["ci_high_u"], both["ci_low_i"], both["ci_high_i"])
            ],
        },
        columns=list(SUMMARY_COLUMNS),
    )
