"""Did an intervention on the finetuning data move the association? The intervened network against the
untouched one, finetuned from the same pretrained weights with the same seed, on the same analysis images.

Two units (docs/statistics.md): per seed, the paired change of d between the two finetuned networks with
the images as units (:func:`~biastransfer.stats.bootstrap.ieat_changes`, the change test the workflow uses
between pretrained and finetuned networks: one bootstrap resamples the same images in both); over seeds,
the mean of the per-seed differences with the seeds as units (:func:`~biastransfer.stats.claims.compare_paired`:
sign flips and a t interval; with few seeds its p-value has a floor, ``min_pvalue``, which the verdict names).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from biastransfer.embeddings import EmbeddingTable
from biastransfer.stats.attribution import Design
from biastransfer.stats.bootstrap import IEATBlocks, ieat_changes
from biastransfer.stats.change_tables import aligned_classes
from biastransfer.stats.claims import compare_paired

#: The columns of a change's interval, its paired test and the verdict, last in both tables.
_CHANGE_TEST = ("ci_low", "ci_high", "ci_level", "pvalue", "min_pvalue", "method", "verdict")
COLUMNS = (
    "test",
    "role",
    "unit",
    "seed",
    "n",
    "d_untouched",
    "d_intervened",
    "delta_d",
    *_CHANGE_TEST,
)


def direction(ci_low: float, ci_high: float) -> str:
    """``lowered`` / ``raised`` when the interval of intervened minus untouched d excludes 0, else
    ``unchanged``, or ``untested`` when there is no interval."""
    if not (np.isfinite(ci_low) and np.isfinite(ci_high)):
        return "untested"
    return "lowered" if ci_high < 0 else "raised" if ci_low > 0 else "unchanged"


def verdict(row: Mapping, alpha: float) -> str:
    """One row's result in words: which way d moved, with the interval, or why it cannot tell."""
    moved = direction(row["ci_low"], row["ci_high"])
    unit = f"seed {row['seed']}, {row['n']} images per class pair" if row["unit"] == "images" else f"{row['n']} seeds"
    if moved == "untested":
        why = "fewer than 2 seeds" if row["unit"] == "seeds" else "too few images to resample"
        return f"not tested ({why})"
    span = f"delta d = {row['delta_d']:+.3f} [{row['ci_low']:+.3f}, {row['ci_high']:+.3f}] ({unit})"
    text = {
        "lowered": "the intervention lowered d",
        "raised": "the intervention raised d",
        "unchanged": "no change of d shown (the interval contains 0)",
    }[moved]
    if row["unit"] == "seeds" and row["min_pvalue"] > alpha:
        text += f"; the sign-flip p cannot go below {row['min_pvalue']:.3g} with {row['n']} seeds"
    return f"{text}: {span}"


def intervention_table(
    untouched: Mapping[int, EmbeddingTable],
    intervened: Mapping[int, EmbeddingTable],
    tests: Sequence[Mapping],
    *,
    bootstrap: int,
    ci_level: float = 0.95,
    seed: int = 0,
    permutations: int = 100_000,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Per test: one row per seed (``unit`` images) and one over the seeds (``unit`` seeds) of
    ``d_intervened - d_untouched`` (:data:`COLUMNS`). Both mappings are ``{finetuning seed: embeddings}``
    of the same seeds; ValueError naming the seeds that only one of them has."""
    if set(untouched) != set(intervened) or not untouched:
        raise ValueError(
            f"untouched seeds {sorted(untouched)} and intervened seeds {sorted(intervened)} must "
            f"be the same, and at least one"
        )
    seeds = sorted(untouched)
    groups = aligned_classes({**{("u", s): untouched[s] for s in seeds}, **{("i", s): intervened[s] for s in seeds}})
    rows = []
    for test in tests:
        per_seed = []
        for s in seeds:
            blocks = [IEATBlocks(*(groups[(k, s)][test[r]] for r in "XYAB")) for k in ("u", "i")]
            (r,) = ieat_changes(blocks, bootstrap, ci_level, seed)
            n = min(blocks[0].sizes.values())
            per_seed.append(r)
            rows.append(
                {
                    "test": test["name"],
                    "role": test.get("role", ""),
                    "unit": "images",
                    "seed": s,
                    "n": n,
                    "d_untouched": r.before,
                    "d_intervened": r.after,
                    "delta_d": r.delta,
                    "ci_low": r.ci_low,
                    "ci_high": r.ci_high,
                    "ci_level": ci_level,
                    "pvalue": r.pvalue,
                    "min_pvalue": r.pvalue_floor,
                    "method": r.method,
                }
            )
        before = np.array([r.before for r in per_seed])
        after = np.array([r.after for r in per_seed])
        row = {
            "test": test["name"],
            "role": test.get("role", ""),
            "unit": "seeds",
            "seed": "all",
            "n": len(seeds),
            "d_untouched": float(before.mean()),
            "d_intervened": float(after.mean()),
            "delta_d": float((after - before).mean()),
            "ci_level": ci_level,
        }
        if len(seeds) >= 2:
            c = compare_paired(after, before, Design(permutations=permutations, level=ci_level, alpha=alpha, seed=seed))
            row |= {
                "ci_low": c.ci_low,
                "ci_high": c.ci_high,
                "pvalue": c.pvalue,
                "min_pvalue": c.min_pvalue,
                "method": f"sign flips ({c.method}), t interval",
            }
        else:
            row |= {"ci_low": np.nan, "ci_high": np.nan, "pvalue": np.nan, "min_pvalue": np.nan, "method": "none"}
        rows.append(row)
    frame = pd.DataFrame(rows, columns=[c for c in COLUMNS if c != "verdict"])
    frame["verdict"] = [verdict(r, alpha) for r in frame.to_dict("records")]
    return frame


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
    *_CHANGE_TEST,
)
#: The prediction-level measures set side by side (rows of results/summary/amplification.csv).
PREDICTION_MEASURES = ("directional", "zhao", "leakage_model", "leakage_embedding", "leakage_amplification")


def embedding_rows(table: pd.DataFrame, intervention: str, source: str, analysis_set: str, model: str) -> pd.DataFrame:
    """An :func:`intervention_table` in the summary's columns (``level`` embedding, ``name`` the test)."""
    return pd.DataFrame(
        {
            "intervention": intervention,
            "from": source,
            "analysis_set": analysis_set,
            "model": model,
            "level": "embedding",
            "name": table["test"],
            "role": table["role"],
            "threshold": "",
            "unit": table["unit"],
            "seed": table["seed"].astype(str),
            "n": table["n"],
            "untouched": table["d_untouched"],
            "untouched_low": np.nan,
            "untouched_high": np.nan,
            "intervened": table["d_intervened"],
            "intervened_low": np.nan,
            "intervened_high": np.nan,
            "delta": table["delta_d"],
            "ci_low": table["ci_low"],
            "ci_high": table["ci_high"],
            "ci_level": table["ci_level"],
            "pvalue": table["pvalue"],
            "min_pvalue": table["min_pvalue"],
            "method": table["method"],
            "verdict": table["verdict"],
        },
        columns=list(SUMMARY_COLUMNS),
    )


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
