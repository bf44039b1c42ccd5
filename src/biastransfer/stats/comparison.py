"""Two finetuning arms of one model compared on the same networks' seeds and the same images: an arm (an
intervention, a mitigation method, any finetuning dataset) against what it is compared with (its ``from``,
or a declared ``analysis.comparisons`` pair).

Two units (docs/statistics.md): per seed, the paired change of d between the two finetuned networks with
the images as units (:func:`~biastransfer.stats.bootstrap.ieat_changes`, the change test the workflow uses
between pretrained and finetuned networks: one bootstrap resamples the same images in both); over seeds,
the mean of the per-seed differences with the seeds as units (:func:`~biastransfer.stats.claims.compare_paired`:
sign flips and a t interval; with few seeds its p-value has a floor, ``min_pvalue``, which the verdict names).
The other measures of each network (BTS, representation leakage, the prediction shift, validation mAP) are
set side by side per seed and compared over seeds the same way (:func:`paired_rows`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from biastransfer.embeddings import EmbeddingTable
from biastransfer.stats.attribution import Design
from biastransfer.stats.bootstrap import IEATBlocks, ieat_changes
from biastransfer.stats.change_tables import aligned_classes
from biastransfer.stats.claims import compare_paired

#: The columns of a change's interval, its paired test and the verdict, last in every comparison table.
CHANGE_TEST = ("ci_low", "ci_high", "ci_level", "pvalue", "min_pvalue", "method", "verdict")
#: One pair's table of d (results/compare/{arm}_vs_{against}/{analysis_set}/{model}.csv).
COLUMNS = ("test", "role", "unit", "seed", "n", "d_against", "d_arm", "delta_d", *CHANGE_TEST)


def direction(ci_low: float, ci_high: float) -> str:
    """``lowered`` / ``raised`` when the interval of arm minus against excludes 0, else ``unchanged``, or
    ``untested`` when there is no interval."""
    if not (np.isfinite(ci_low) and np.isfinite(ci_high)):
        return "untested"
    return "lowered" if ci_high < 0 else "raised" if ci_low > 0 else "unchanged"


def verdict(row: Mapping, alpha: float, subject: str = "the arm") -> str:
    """One row's change of d in words (``subject`` the arm: ``the intervention lowered d``), with the
    interval, or why it cannot tell."""
    moved = direction(row["ci_low"], row["ci_high"])
    unit = f"seed {row['seed']}, {row['n']} images per class pair" if row["unit"] == "images" else f"{row['n']} seeds"
    if moved == "untested":
        why = "fewer than 2 seeds" if row["unit"] == "seeds" else "too few images to resample"
        return f"not tested ({why})"
    span = f"delta d = {row['delta_d']:+.3f} [{row['ci_low']:+.3f}, {row['ci_high']:+.3f}] ({unit})"
    text = {
        "lowered": f"{subject} lowered d",
        "raised": f"{subject} raised d",
        "unchanged": "no change of d shown (the interval contains 0)",
    }[moved]
    if row["unit"] == "seeds" and row["min_pvalue"] > alpha:
        text += f"; the sign-flip p cannot go below {row['min_pvalue']:.3g} with {row['n']} seeds"
    return f"{text}: {span}"


def over_seeds(
    arm: np.ndarray, against: np.ndarray, *, ci_level: float, alpha: float, permutations: int, seed: int
) -> dict:
    """The mean of the per-seed differences ``arm - against`` with the seeds as units: its t interval and
    sign-flip p (``ci_low`` ... ``method``); with fewer than 2 seeds, no interval (method ``none``)."""
    if len(arm) < 2:
        return {"ci_low": np.nan, "ci_high": np.nan, "pvalue": np.nan, "min_pvalue": np.nan, "method": "none"}
    # a difference of rounding alone (0.3 - 0.1 against 0.4 - 0.2) is none: no interval of width 0 beside 0
    arm = np.where(np.isclose(arm, against, rtol=1e-12, atol=1e-12), against, arm)
    c = compare_paired(arm, against, Design(permutations=permutations, level=ci_level, alpha=alpha, seed=seed))
    return {
        "ci_low": c.ci_low,
        "ci_high": c.ci_high,
        "pvalue": c.pvalue,
        "min_pvalue": c.min_pvalue,
        "method": f"sign flips ({c.method}), t interval",
    }


def paired_change_table(
    against: Mapping[int, EmbeddingTable],
    arm: Mapping[int, EmbeddingTable],
    tests: Sequence[Mapping],
    *,
    bootstrap: int,
    ci_level: float = 0.95,
    seed: int = 0,
    permutations: int = 100_000,
    alpha: float = 0.05,
    subject: str = "the arm",
) -> pd.DataFrame:
    """Per test: one row per seed (``unit`` images) and one over the seeds (``unit`` seeds) of
    ``d_arm - d_against`` (:data:`COLUMNS`; ``subject`` names the arm in the verdict). Both mappings are
    ``{finetuning seed: embeddings}`` of the same seeds; ValueError naming the seeds that only one has."""
    if set(against) != set(arm) or not against:
        raise ValueError(
            f"the seeds compared against {sorted(against)} and the arm's seeds {sorted(arm)} must be the same, "
            "and at least one"
        )
    seeds = sorted(against)
    groups = aligned_classes({**{("u", s): against[s] for s in seeds}, **{("i", s): arm[s] for s in seeds}})
    rows = []
    for test in tests:
        per_seed = []
        for s in seeds:
            blocks = [IEATBlocks(*(groups[(k, s)][test[r]] for r in "XYAB")) for k in ("u", "i")]
            (r,) = ieat_changes(blocks, bootstrap, ci_level, seed)
            per_seed.append(r)
            rows.append(
                {
                    "test": test["name"],
                    "role": test.get("role", ""),
                    "unit": "images",
                    "seed": s,
                    "n": min(blocks[0].sizes.values()),
                    "d_against": r.before,
                    "d_arm": r.after,
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
        rows.append(
            {
                "test": test["name"],
                "role": test.get("role", ""),
                "unit": "seeds",
                "seed": "all",
                "n": len(seeds),
                "d_against": float(before.mean()),
                "d_arm": float(after.mean()),
                "delta_d": float((after - before).mean()),
                "ci_level": ci_level,
                **over_seeds(after, before, ci_level=ci_level, alpha=alpha, permutations=permutations, seed=seed),
            }
        )
    frame = pd.DataFrame(rows, columns=[c for c in COLUMNS if c != "verdict"])
    frame["verdict"] = [verdict(r, alpha, subject) for r in frame.to_dict("records")]
    return frame


#: The comparison summary's columns (results/summary/comparison.csv, docs/formats.md).
SUMMARY_COLUMNS = (
    "arm",
    "against",
    "analysis_set",
    "model",
    "level",
    "name",
    "role",
    "threshold",
    "unit",
    "seed",
    "n",
    "value_against",
    "against_low",
    "against_high",
    "value_arm",
    "arm_low",
    "arm_high",
    "delta",
    *CHANGE_TEST,
)
#: The levels of the summary's rows, in its order: d, the BTS of each network, its representation leakage,
#: its prediction shift (the contrast of each declared iEAT pair) and its validation metric.
LEVELS = ("embedding", "bts", "leakage", "prediction", "accuracy")


def embedding_rows(table: pd.DataFrame, arm: str, against: str, analysis_set: str, model: str) -> pd.DataFrame:
    """A :func:`paired_change_table` in the summary's columns (``level`` embedding, ``name`` the test)."""
    return pd.DataFrame(
        {
            "arm": arm,
            "against": against,
            "analysis_set": analysis_set,
            "model": model,
            "level": "embedding",
            "name": table["test"],
            "role": table["role"].fillna("").astype(str),
            "threshold": "",
            "unit": table["unit"],
            "seed": table["seed"].astype(str),
            "n": table["n"],
            "value_against": table["d_against"],
            "value_arm": table["d_arm"],
            "delta": table["delta_d"],
            **{c: table[c] for c in CHANGE_TEST},
        },
        columns=list(SUMMARY_COLUMNS),
    )


def change_words(delta: float, low: float, high: float, unit: str, n: int) -> str:
    """A change of a measure (arm minus against) with its interval in words, or why it has none."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return (
            "not tested (one seed: no interval over seeds)" if unit == "seeds" and n < 2 else "not tested (no interval)"
        )
    text = (
        "higher in the arm"
        if low > 0
        else "lower in the arm"
        if high < 0
        else "no change shown (the interval contains 0)"
    )
    return f"{text}: delta = {delta:+.3f} [{low:+.3f}, {high:+.3f}] ({n} {'seeds' if unit == 'seeds' else 'images'})"


def independent_change(arm: tuple, against: tuple, level: float) -> dict:
    """The change ``arm - against`` of one seed's two estimates, each ``(estimate, low, high)`` with its own
    bootstrap interval at ``level``: a normal interval and p from their standard errors taken as independent
    (conservative where the two networks are scored on the same images); none where either has no interval."""
    delta = arm[0] - against[0]
    z = stats.norm.ppf(0.5 + level / 2)
    se = np.hypot((arm[2] - arm[1]) / (2 * z), (against[2] - against[1]) / (2 * z))
    if not np.isfinite(se):
        return {"ci_low": np.nan, "ci_high": np.nan, "pvalue": np.nan, "min_pvalue": np.nan, "method": "none"}
    pvalue = float(2 * stats.norm.sf(abs(delta) / se)) if se > 0 else float(delta == 0)
    return {
        "ci_low": delta - z * se,
        "ci_high": delta + z * se,
        "pvalue": pvalue,
        "min_pvalue": 0.0,
        "method": "normal from the two intervals, taken as independent",
    }


def paired_rows(
    values: pd.DataFrame,
    arm: str,
    against: str,
    level: str,
    *,
    ci_level: float,
    alpha: float = 0.05,
    permutations: int = 100_000,
    seed: int = 0,
) -> pd.DataFrame:
    """One measure of both arms' networks side by side, in the summary's columns: per model, ``name``,
    ``analysis_set`` and ``threshold`` (``values``' keys besides ``dataset``, ``seed``, ``estimate``, ``low``,
    ``high``, ``n`` and ``role``), one row per seed the two share (the change with :func:`independent_change`'s
    interval) and one over those seeds (the mean change with the seeds as units, :func:`over_seeds`)."""
    keys = ["model", "analysis_set", "name", "threshold"]
    values = values.assign(seed=values["seed"].astype(str))
    both = values[values["dataset"] == against].merge(
        values[values["dataset"] == arm], on=[*keys, "seed"], suffixes=("_u", "_i")
    )
    rows = []
    for key, group in both.groupby(keys, sort=False):
        group = group.sort_values("seed", key=lambda s: s.astype(int))
        base = {
            **dict(zip(keys, key)),
            "arm": arm,
            "against": against,
            "level": level,
            "role": group["role_i"].iloc[0],
            "ci_level": ci_level,
        }
        for r in group.to_dict("records"):
            change = independent_change(
                (r["estimate_i"], r["low_i"], r["high_i"]), (r["estimate_u"], r["low_u"], r["high_u"]), ci_level
            )
            rows.append(
                {
                    **base,
                    "unit": "images",
                    "seed": r["seed"],
                    "n": r["n_i"],
                    "value_against": r["estimate_u"],
                    "against_low": r["low_u"],
                    "against_high": r["high_u"],
                    "value_arm": r["estimate_i"],
                    "arm_low": r["low_i"],
                    "arm_high": r["high_i"],
                    "delta": r["estimate_i"] - r["estimate_u"],
                    **change,
                    "verdict": change_words(
                        r["estimate_i"] - r["estimate_u"], change["ci_low"], change["ci_high"], "images", r["n_i"]
                    ),
                }
            )
        after, before = group["estimate_i"].to_numpy(float), group["estimate_u"].to_numpy(float)
        change = over_seeds(after, before, ci_level=ci_level, alpha=alpha, permutations=permutations, seed=seed)
        delta = float((after - before).mean())
        rows.append(
            {
                **base,
                "unit": "seeds",
                "seed": "all",
                "n": len(group),
                "value_against": float(before.mean()),
                "value_arm": float(after.mean()),
                "delta": delta,
                **change,
                "verdict": change_words(delta, change["ci_low"], change["ci_high"], "seeds", len(group)),
            }
        )
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))


def _values(frame: pd.DataFrame, **columns: str | pd.Series) -> pd.DataFrame:
    """``frame`` in :func:`paired_rows`' columns: each of them a column of ``frame`` by name, or a series."""
    return pd.DataFrame({k: frame[v] if isinstance(v, str) else v for k, v in columns.items()})


def bts_values(bts: pd.DataFrame) -> pd.DataFrame:
    """The BTS of each finetuned seed (results/summary/bts.csv; ``name`` bts_intra or bts_inter)."""
    rows = bts[bts["seed"].astype(str) != "pooled"]
    return _values(
        rows,
        dataset="finetune_dataset",
        model="model",
        seed="seed",
        analysis_set="analysis_set",
        name="bts_" + rows["kind"],
        threshold=pd.Series("", index=rows.index),
        role=pd.Series("", index=rows.index),
        estimate="statistic",
        low="ci_low",
        high="ci_high",
        n="n",
    )


def leakage_values(amplification: pd.DataFrame) -> pd.DataFrame:
    """The representation leakage of each finetuned seed (``leakage_embedding`` of
    results/summary/amplification.csv: how well an attacker reads the attribute from its embedding)."""
    rows = amplification[
        (amplification["network"] == "finetuned")
        & (amplification["measure"] == "leakage_embedding")
        & (amplification["seed"].astype(str) != "pooled")
    ]
    empty = pd.Series("", index=rows.index)
    return _values(
        rows,
        dataset="dataset",
        model="model",
        seed="seed",
        analysis_set=empty,
        name="measure",
        threshold=empty,
        role=empty,
        estimate="estimate",
        low="ci_low",
        high="ci_high",
        n="n_images",
    )


def prediction_values(link: pd.DataFrame) -> pd.DataFrame:
    """The prediction shift of each finetuned seed on each declared iEAT pair (``contrast`` of
    results/summary/link.csv: the first object's shift towards the attribute minus the second's; ``name`` the
    iEAT, so that it meets the pair's d)."""
    rows = link[(link["network"] == "finetuned") & (link["seed"].astype(str) != "pooled")]
    return _values(
        rows,
        dataset="dataset",
        model="model",
        seed="seed",
        analysis_set="analysis_set",
        name="test",
        threshold=rows["threshold"].astype(str),
        role=rows["role"].fillna("").astype(str),
        estimate="contrast",
        low="contrast_low",
        high="contrast_high",
        n="n_images",
    )


#: The keys of a finetuning run's metrics.json that the comparison reads: the validation metric of the
#: selected checkpoint, and its worst group's (absent or NaN where the dataset has no attribute file).
METRIC_KEYS = {"metric_value": "", "metric_worst_group": "_worst_group"}


def accuracy_values(metrics: Sequence[Mapping]) -> pd.DataFrame:
    """The validation metric (``name`` its metric name, e.g. map; and ``map_worst_group`` where recorded) of
    each finetuning run, from its metrics.json (no interval: one value per network)."""
    rows = []
    for m in metrics:
        for key, suffix in METRIC_KEYS.items():
            value = m.get(key)
            if value is None or not np.isfinite(value):
                continue
            rows.append(
                {
                    "dataset": m["dataset"],
                    "model": m["model"],
                    "seed": m["seed"],
                    "analysis_set": "",
                    "name": f"{m['metric_name']}{suffix}",
                    "threshold": "",
                    "role": m.get("selection", ""),
                    "estimate": float(value),
                    "low": np.nan,
                    "high": np.nan,
                    "n": np.nan,
                }
            )
    return pd.DataFrame(
        rows,
        columns=[
            "dataset",
            "model",
            "seed",
            "analysis_set",
            "name",
            "threshold",
            "role",
            "estimate",
            "low",
            "high",
            "n",
        ],
    )


def toward_zero(against: float, ci_low: float, ci_high: float) -> str:
    """Whether an arm's change (interval ``ci_low``, ``ci_high`` of arm minus against) moved a measure
    towards 0 from the value it is compared against: ``reduced``, ``increased`` (away from 0), ``unchanged``
    (the interval holds 0) or ``untested`` (no interval)."""
    moved = direction(ci_low, ci_high)
    if moved in ("untested", "unchanged"):
        return moved
    return "reduced" if (moved == "lowered") == (against >= 0) else "increased"


#: The overview's columns (one row per pair, model and declared iEAT pair: results/tables/comparison.csv).
OVERVIEW_COLUMNS = (
    "arm",
    "against",
    "model",
    "analysis_set",
    "test",
    "role",
    "seeds",
    "d_against",
    "delta_d",
    "delta_d_low",
    "delta_d_high",
    "shift_against",
    "delta_shift",
    "delta_shift_low",
    "delta_shift_high",
    "metric",
    "delta_metric",
    "delta_metric_low",
    "delta_metric_high",
    "representation",
    "predictions",
)


def _chosen(rows: pd.DataFrame) -> pd.DataFrame:
    """Each measure's row the overview reads: over seeds where there are at least 2, else the one seed's."""
    over = rows[(rows["unit"] == "seeds") & (rows["n"].astype(float) >= 2)]
    single = rows[rows["unit"] == "images"]
    keys = ["arm", "against", "model", "analysis_set", "name", "threshold"]
    return pd.concat([over, single[~single.set_index(keys).index.isin(over.set_index(keys).index)]], ignore_index=True)


def overview(summary: pd.DataFrame) -> pd.DataFrame:
    """Per pair, model and iEAT (those with a prediction shift where the pair has any, else every iEAT): the
    change of d, of the prediction shift and of the validation metric, each with its interval (over seeds with
    the seeds as units where there are at least 2, else the one seed's: d and the shift with the images as
    units, the metric without one), and whether each level moved towards 0 (:func:`toward_zero`)."""
    summary = summary.assign(
        threshold=summary["threshold"].astype(object).fillna("").astype(str),
        analysis_set=summary["analysis_set"].astype(object).fillna("").astype(str),
    )
    chosen = _chosen(summary[summary["level"].isin(["embedding", "prediction", "accuracy"])])
    rows = []
    for (arm, against, model), group in chosen.groupby(["arm", "against", "model"], sort=False):
        d = group[group["level"] == "embedding"]
        shift = group[group["level"] == "prediction"]
        metric = group[(group["level"] == "accuracy") & ~group["name"].str.endswith("_worst_group")]
        m = metric.iloc[0] if len(metric) else None
        tests = shift[["analysis_set", "name"]].drop_duplicates() if len(shift) else d[["analysis_set", "name"]]
        for analysis_set, test in tests.itertuples(index=False):
            e = d[(d["analysis_set"] == analysis_set) & (d["name"] == test)]
            p = shift[(shift["analysis_set"] == analysis_set) & (shift["name"] == test)]
            if e.empty:
                continue
            e, p = e.iloc[0], (p.iloc[0] if len(p) else None)
            rows.append(
                {
                    "arm": arm,
                    "against": against,
                    "model": model,
                    "analysis_set": analysis_set,
                    "test": test,
                    "role": e["role"],
                    "seeds": f"{int(e['n'])} seeds" if e["unit"] == "seeds" else f"seed {e['seed']}",
                    "d_against": e["value_against"],
                    "delta_d": e["delta"],
                    "delta_d_low": e["ci_low"],
                    "delta_d_high": e["ci_high"],
                    "shift_against": np.nan if p is None else p["value_against"],
                    "delta_shift": np.nan if p is None else p["delta"],
                    "delta_shift_low": np.nan if p is None else p["ci_low"],
                    "delta_shift_high": np.nan if p is None else p["ci_high"],
                    "metric": "" if m is None else m["name"],
                    "delta_metric": np.nan if m is None else m["delta"],
                    "delta_metric_low": np.nan if m is None else m["ci_low"],
                    "delta_metric_high": np.nan if m is None else m["ci_high"],
                    "representation": toward_zero(e["value_against"], e["ci_low"], e["ci_high"]),
                    "predictions": "untested"
                    if p is None
                    else toward_zero(p["value_against"], p["ci_low"], p["ci_high"]),
                }
            )
    return pd.DataFrame(rows, columns=list(OVERVIEW_COLUMNS))
