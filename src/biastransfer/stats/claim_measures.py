"""Each model's value of a claim's measure, from the run's summary tables, and the claims (config ``claims``)
built from them for :func:`biastransfer.stats.claims.claims_table`.

A model is one unit: its finetuning seeds are averaged, and their smallest and largest values are kept
beside the mean (the seeds' spread, not an interval). Measures, for one analysis set:

- ``d``: one iEAT's effect size, pretrained or finetuned on a dataset (``results/summary/ieat.csv``);
- ``change_d`` / ``abs_change_d``: finetuned - pretrained d, or its size, for one iEAT or the mean over the
  set's iEATs (``results/summary/ieat_change.csv``); a small ``abs_change_d`` is a retained association;
- ``new_associations``: the share of the set's iEATs that gain an association with finetuning: the
  finetuned interval excludes 0 where the pretrained one did not, or the change is significantly positive
  (its adjusted p below alpha);
- ``bts_intra`` / ``bts_inter``: the Bias Transfer Score, Spearman rho of the pretrained and the
  seed-pooled finetuned similarities (``results/summary/bts.csv``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from biastransfer.stats.attribution import Design
from biastransfer.stats.claims import claims_table

MEASURES = ("d", "change_d", "abs_change_d", "new_associations", "bts_intra", "bts_inter")
_ADJUSTED = {"holm": "pvalue_holm", "bh": "pvalue_bh"}


def read_summaries(
    ieat: str, change: str | None = None, bts: str | None = None, cka: str | None = None
) -> dict[str, pd.DataFrame]:
    """The summary tables a claim or factors question reads (``ieat``, and ``change``, ``bts`` and ``cka`` where
    given), empty cells as NaN."""
    paths = {"ieat": ieat, "change": change, "bts": bts, "cka": cka}
    return {name: pd.read_csv(path, keep_default_na=False, na_values=[""]) for name, path in paths.items() if path}


def _per_seed(frame: pd.DataFrame, value: str) -> pd.Series:
    """``value`` by seed (finetuned rows), or one value (pretrained rows)."""
    return frame.groupby(frame["seed"].astype(str), sort=True, dropna=False)[value].mean()


def _excludes_zero(frame: pd.DataFrame) -> pd.Series:
    return (frame["ci_low"] > 0) | (frame["ci_high"] < 0)


def new_associations_by_seed(ieat: pd.DataFrame, change: pd.DataFrame, alpha: float, adjust: str) -> pd.Series:
    """Per seed: the share of the tests that gain an association (see the module docstring)."""
    before = ieat[ieat["stage"] == "pretrained"].set_index("test")
    after = ieat[ieat["stage"] != "pretrained"]
    gained = after.assign(
        gained=_excludes_zero(after).to_numpy() & ~_excludes_zero(before.loc[after["test"]]).to_numpy()
    )
    rise = change.assign(rise=(change["delta_d"] > 0) & (change[_ADJUSTED[adjust]] < alpha))
    keys = ["seed", "test"]
    both = gained.assign(seed=gained["seed"].astype(float))[[*keys, "gained"]].merge(
        rise.assign(seed=rise["seed"].astype(float))[[*keys, "rise"]], on=keys, how="outer"
    )
    both["new"] = both["gained"].eq(True) | both["rise"].eq(True)
    return both.groupby(both["seed"].astype(str))["new"].mean()


def model_value(
    measure: str,
    summaries: Mapping[str, pd.DataFrame],
    *,
    analysis_set: str,
    model: str,
    dataset: str | None,
    test: str | None = None,
    stage: str = "finetuned",
    alpha: float = 0.05,
    adjust: str = "holm",
) -> dict:
    """``{value, value_min, value_max, n_seeds}`` of one model (``summaries``: ``ieat``, ``change``, ``bts``)."""
    where = f"measure {measure} of model {model!r} on analysis set {analysis_set!r}"

    def rows(name: str, **equal) -> pd.DataFrame:
        table = summaries[name]
        keep = (table["analysis_set"] == analysis_set) & (table["model"] == model)
        for column, value in equal.items():
            keep &= table[column] == value
        return table[keep]

    if measure == "d":
        ieat = rows("ieat", test=test)
        ieat = (
            ieat[ieat["stage"] == "pretrained"] if stage == "pretrained" else ieat[ieat["finetune_dataset"] == dataset]
        )
        values = _per_seed(ieat, "effect_size")
    elif measure in ("change_d", "abs_change_d"):
        change = rows("change", finetune_dataset=dataset)
        change = change if test is None else change[change["test"] == test]
        change = change.assign(value=change["delta_d"].abs() if measure == "abs_change_d" else change["delta_d"])
        values = _per_seed(change, "value")
    elif measure == "new_associations":
        ieat = rows("ieat")
        ieat = ieat[(ieat["stage"] == "pretrained") | (ieat["finetune_dataset"] == dataset)]
        values = new_associations_by_seed(ieat, rows("change", finetune_dataset=dataset), alpha, adjust)
    elif measure in ("bts_intra", "bts_inter"):
        bts = rows("bts", finetune_dataset=dataset, kind=measure.removeprefix("bts_"))
        pooled = bts[bts["seed"].astype(str) == "pooled"]["statistic"]
        seeds = bts[bts["seed"].astype(str) != "pooled"]["statistic"]
        if pooled.empty:
            raise ValueError(f"{where}: no pooled BTS row for finetuning dataset {dataset!r}")
        return {
            "value": float(pooled.iloc[0]),
            "value_min": float(seeds.min()),
            "value_max": float(seeds.max()),
            "n_seeds": int(seeds.size),
        }
    else:
        raise ValueError(f"unknown measure {measure!r} (known: {', '.join(MEASURES)})")
    if values.empty or values.isna().all():
        raise ValueError(f"{where}: no rows" + (f" for finetuning dataset {dataset!r}" if dataset else ""))
    return {
        "value": float(values.mean()),
        "value_min": float(values.min()),
        "value_max": float(values.max()),
        "n_seeds": int(values.size),
    }


def _members(groups: Mapping[str, Sequence[str]], labels: Sequence[str]) -> list[str]:
    return [m for label in (labels or groups) for m in groups[label]]


def claims_from_summaries(
    claims: Mapping,
    summaries: Mapping[str, pd.DataFrame],
    *,
    datasets: Sequence[str],
    adjust: str = "holm",
    left_out: Mapping[str, str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the claims table, every model's value) for the config's ``claims`` section (filled and checked);
    ``datasets``: finetune.datasets, the first of which is a group claim's dataset by default. ``left_out``:
    ``{model: why}`` of models the summaries do not measure (a zoo model that failed its check), left out of
    every group and named with their reason in the table's ``left_out`` column (empty where none is)."""
    left_out = left_out or {}
    groups = {label: [m for m in members if m not in left_out] for label, members in claims["groups"].items()}
    specs, values, omitted = [], [], []
    for test in claims["tests"]:
        labels = [test["x"], test["y"]] if test["compare"] == "groups" else test["models"]
        omitted.append("; ".join(f"{m} ({left_out[m]})" for m in _members(claims["groups"], labels) if m in left_out))
        common = dict(
            analysis_set=test["analysis_set"],
            test=test["test"],
            stage=test["stage"],
            alpha=claims["alpha"],
            adjust=adjust,
        )
        if test["compare"] == "groups":
            dataset = test["dataset"] or (datasets[0] if datasets else None)
            sides = [(side, label, dataset, groups[label]) for side, label in (("x", test["x"]), ("y", test["y"]))]
        else:
            models = _members(groups, test["models"])
            sides = [(side, test[side], test[side], models) for side in ("x", "y")]
        arrays = {}
        for side, label, dataset, models in sides:
            rows = [
                {
                    "claim": test["name"],
                    "side": side,
                    "label": label,
                    "model": m,
                    "dataset": dataset,
                    **model_value(test["measure"], summaries, model=m, dataset=dataset, **common),
                }
                for m in models
            ]
            values += rows
            arrays[side] = np.array([r["value"] for r in rows])
        kind = "groups" if test["compare"] == "groups" else "paired"
        specs.append(
            {"name": test["name"], "kind": kind, "direction": test["direction"], "measure": test["measure"], **arrays}
        )
    options = {k: claims[k] for k in ("alpha", "permutations", "level", "power", "simulations", "seed")}
    table = claims_table(specs, Design(**options))
    if not table.empty:
        by_name = {t["name"]: t for t in claims["tests"]}
        table.insert(1, "analysis_set", [by_name[c]["analysis_set"] for c in table["claim"]])
        table.insert(3, "x", [by_name[c]["x"] for c in table["claim"]])
        table.insert(4, "y", [by_name[c]["y"] for c in table["claim"]])
        table["left_out"] = omitted
    return table, pd.DataFrame(values)
