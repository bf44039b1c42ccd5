"""The observations of the config's ``factors`` questions, from the run's summary tables, and their
meta-regressions (:func:`biastransfer.stats.factors.meta_regression`).

Each question's observations are rows ``model, dataset, test, seed, value`` of one analysis set: the iEAT
effect size (``d``: pretrained, or finetuned per seed), its change (``change_d``, ``abs_change_d``: per test
and seed), the share of the set's iEATs that gain an association (``new_associations``, per seed; see
``biastransfer.stats.claim_measures``) or the per-seed Bias Transfer Score (``bts_intra``, ``bts_inter``);
a row without a value (an undefined d) is no observation.
Counts among the covariates (``biastransfer.covariates.LOG10``) enter as log10.

The covariate ``cka`` (how much finetuning kept of the pretrained representation) is measured, not given: for each
model and finetuning dataset, the ``pooled`` row of ``cka.csv`` of the question's analysis set whose network is
``finetuned`` (the mean over that dataset's seeds of the linear CKA between the pretrained and the finetuned final
embeddings of the set's analysis images), a column of the observations (:func:`with_cka`); a model observed on
several datasets thus has one CKA per dataset, and its unit means average them as they average the measure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from biastransfer.covariates import CKA, LOG10, MEASURED, missing_covariate
from biastransfer.stats.claim_measures import new_associations_by_seed
from biastransfer.stats.factors import DATASET, meta_regression

COLUMNS = ["model", DATASET, "test", "seed", "value"]


def _rows(table: pd.DataFrame, analysis_set: str, models: Sequence[str], **equal) -> pd.DataFrame:
    keep = (table["analysis_set"] == analysis_set) & table["model"].isin(models)
    for column, value in equal.items():
        keep &= table[column] == value
    return table[keep]


def observations(
    question: Mapping,
    summaries: Mapping[str, pd.DataFrame],
    *,
    models: Sequence[str],
    datasets: Sequence[str],
    alpha: float,
    adjust: str,
) -> pd.DataFrame:
    """The rows of one question (``COLUMNS``) for ``models`` on the finetuning ``datasets`` (none: pretrained d)."""
    measure, aset, test = question["measure"], question["analysis_set"], question.get("test")
    frames = []
    if measure == "d" and not datasets:
        ieat = _rows(summaries["ieat"], aset, models, stage="pretrained")
        frames.append(ieat.assign(**{DATASET: "", "seed": "", "value": ieat["effect_size"]}))
    for dataset in datasets:
        if measure == "d":
            ieat = _rows(summaries["ieat"], aset, models, finetune_dataset=dataset)
            frames.append(ieat.assign(**{DATASET: dataset, "value": ieat["effect_size"]}))
        elif measure in ("change_d", "abs_change_d"):
            change = _rows(summaries["change"], aset, models, finetune_dataset=dataset)
            value = change["delta_d"].abs() if measure == "abs_change_d" else change["delta_d"]
            frames.append(change.assign(**{DATASET: dataset, "value": value}))
        elif measure == "new_associations":
            for model in models:
                ieat = _rows(summaries["ieat"], aset, [model])
                ieat = ieat[(ieat["stage"] == "pretrained") | (ieat["finetune_dataset"] == dataset)]
                shares = new_associations_by_seed(
                    ieat, _rows(summaries["change"], aset, [model], finetune_dataset=dataset), alpha, adjust
                )
                frames.append(
                    pd.DataFrame(
                        {"model": model, DATASET: dataset, "test": "", "seed": shares.index, "value": shares.to_numpy()}
                    )
                )
        else:
            bts = _rows(summaries["bts"], aset, models, finetune_dataset=dataset, kind=measure.removeprefix("bts_"))
            bts = bts[bts["seed"].astype(str) != "pooled"]
            frames.append(bts.assign(**{DATASET: dataset, "test": "", "value": bts["statistic"]}))
    found = pd.concat([f.reindex(columns=COLUMNS) for f in frames], ignore_index=True) if frames else None
    if found is None or found.empty:
        raise ValueError(f"factors question {question['name']!r}: no rows of measure {measure} on {aset!r}")
    if test is not None and measure in ("d", "change_d", "abs_change_d"):
        found = found[found["test"] == test]
    found = found[np.isfinite(found["value"].astype(float))]  # an undefined d (0/0) is no observation
    found["test"] = found["test"].fillna("").astype(str)
    found["seed"] = found["seed"].astype(str)
    return found.reset_index(drop=True)


def with_cka(rows: pd.DataFrame, cka: pd.DataFrame, analysis_set: str) -> tuple[pd.DataFrame, list[str]]:
    """(the observations with a column ``cka``: the pooled CKA of each row's model and finetuning dataset on
    ``analysis_set`` (module docstring), the models with an observation that has no CKA)."""
    pooled = cka[
        (cka["analysis_set"] == analysis_set)
        & (cka["network"] == "finetuned")
        & (cka["seed"].astype(str) == "pooled")
        & np.isfinite(cka["cka"].astype(float))
    ]
    values = pooled.set_index(["model", "finetune_dataset"])["cka"].astype(float)
    keys = pd.MultiIndex.from_arrays([rows["model"], rows[DATASET]])
    found = rows.assign(**{CKA: values.reindex(keys).to_numpy()})
    lacking = list(dict.fromkeys(found.loc[found[CKA].isna(), "model"]))
    return found, lacking


def regression_covariates(covariates: Mapping[str, Mapping], terms: Sequence[str]) -> tuple[dict, list[str]]:
    """(``{model: {term: value}}``, term names) with the counts of ``LOG10`` as ``log10 <name>``."""
    names = [f"log10 {t}" if t in LOG10 else t for t in terms]
    values = {
        model: {
            name: (math.log10(given[term]) if term in LOG10 else given[term])
            for term, name in zip(terms, names)
            if given.get(term) is not None
        }
        for model, given in covariates.items()
    }
    return values, names


def factors_from_summaries(
    factors: Mapping,
    summaries: Mapping[str, pd.DataFrame],
    covariates: Mapping[str, Mapping],
    *,
    models: Mapping[str, Sequence[str]],
    datasets: Mapping[str, Sequence[str]],
    alpha: float = 0.05,
    adjust: str = "holm",
    left_out: Mapping[str, str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per question and coefficient, each model's mean value per question and dataset) for the
    config's ``factors`` section (filled and checked). ``covariates``: ``{model: {covariate: value}}``;
    ``models`` and ``datasets``: each question's (``biastransfer.factors``); ``left_out``: ``{model: why}``
    of models the summaries do not measure (a zoo model that failed its check), left out and named."""
    left_out = left_out or {}
    tables, values = [], []
    for question in factors["questions"]:
        kept = [m for m in models[question["name"]] if m not in left_out]
        rows = observations(
            question, summaries, models=kept, datasets=datasets[question["name"]], alpha=alpha, adjust=adjust
        )
        unmeasured = [m for m in kept if m not in set(rows["model"])]
        if unmeasured:
            raise ValueError(
                f"factors question {question['name']!r}: no rows of measure {question['measure']} on "
                f"{question['analysis_set']!r} for model(s) {', '.join(unmeasured)}"
            )
        terms = list(question["covariates"])
        if CKA in terms:
            if "cka" not in summaries:
                raise ValueError(f"factors question {question['name']!r} names cka, and no CKA summary was given")
            rows, lacking = with_cka(rows, summaries["cka"], question["analysis_set"])
            if lacking:
                raise ValueError(missing_covariate(f"factors.questions.{question['name']}", CKA, lacking))
        given = [t for t in terms if t != DATASET and t not in MEASURED]
        model_terms, names = regression_covariates({m: covariates[m] for m in kept}, given)
        names = [t if t == DATASET or t in MEASURED else names.pop(0) for t in terms]
        references = {(f"log10 {k}" if k in LOG10 else k): v for k, v in question["references"].items()}
        result = meta_regression(
            rows,
            model_terms,
            names,
            level=factors["level"],
            replicates=factors["replicates"],
            seed=factors["seed"],
            references=references,
            per_coefficient=factors["per_coefficient"],
        )
        table = result.table()
        table.insert(0, "question", question["name"])
        table.insert(1, "measure", question["measure"])
        table.insert(2, "analysis_set", question["analysis_set"])
        table["left_out"] = "; ".join(f"{m} ({left_out[m]})" for m in models[question["name"]] if m in left_out)
        tables.append(table)
        units = rows.groupby(["model", DATASET], sort=False)
        means = units["value"].agg(["mean", "min", "max", "size"]).reset_index()
        main = names[0]
        means["covariate"] = main
        if main == DATASET:
            means["covariate_value"] = means[DATASET]
        elif main in MEASURED:
            means["covariate_value"] = units[main].mean().to_numpy()
        else:
            means["covariate_value"] = means["model"].map({m: v[main] for m, v in model_terms.items()})
        values.append(means.assign(question=question["name"]))
    return pd.concat(tables, ignore_index=True), pd.concat(values, ignore_index=True).rename(
        columns={"mean": "value", "min": "value_min", "max": "value_max", "size": "n_observations"}
    )
