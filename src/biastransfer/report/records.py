"""The results model's records of single results (``results/summary/results.json``, :mod:`.results`): a summary
table's rows as plain mappings (NaN as None), and each iEAT of each network and seed with its verdict by the
run's significance rule. The results model and the iEAT findings (:mod:`.findings.ieat`) both read them, so a
sentence and the number it cites in results.json come from one record."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

import pandas as pd

from biastransfer.report.formatting import PREDICTION_VERDICTS, Significance, opposite_direction, require_columns
from biastransfer.stages import stage_kind

#: The words of every verdict, by level: the report prints no other.
VERDICT_WORDS = {
    "test": ("significant", "not significant"),
    "prediction": PREDICTION_VERDICTS[:3],
}


#: The iEAT summary's columns that every iEAT record reads (the others it reads where the summary has them).
IEAT_RECORD_COLUMNS = (
    "analysis_set",
    "test",
    "X",
    "Y",
    "A",
    "B",
    "alternative",
    "model",
    "stage",
    "finetune_dataset",
    "seed",
    "effect_size",
    "ci_low",
    "ci_high",
    "pvalue",
    "pvalue_two_sided",
    "pvalue_floor",
)


def number(value) -> float | None:
    """A cell as a float, None for an empty or NaN one."""
    if value is None or isinstance(value, str) and value == "":
        return None
    x = float(value)
    return None if math.isnan(x) else x


def table_records(frame: pd.DataFrame | None) -> list[dict]:
    """A table's rows as JSON records: NaN becomes null, numpy scalars plain numbers."""
    if frame is None or frame.empty:
        return []
    clean = frame.astype(object).where(frame.notna(), None)
    return json.loads(clean.to_json(orient="records"))


def _name(value) -> str | None:
    """A name cell as a string, None for an empty or NaN one (a summary read with or without its names as text)."""
    return str(value) if isinstance(value, str) and value else None


def _count(value) -> int | None:
    x = number(value)
    return None if x is None else int(x)


def ieat_records(
    ieat: pd.DataFrame,
    scratch: pd.DataFrame | None,
    roles: Mapping[tuple[str, str], str],
    rule: Significance,
) -> list[dict]:
    """Every iEAT of every network and seed: pretrained, each finetuned seed, each scratch network (``ieat`` and
    ``scratch``: the iEAT summaries, each with the :data:`IEAT_RECORD_COLUMNS` and ``rule``'s adjusted p)."""
    frames = [ieat] + ([scratch] if scratch is not None and not scratch.empty else [])
    for frame, what in zip(frames, ("iEAT summary", "scratch iEAT summary")):
        require_columns(frame, (*IEAT_RECORD_COLUMNS, rule.column), where=what)
    records = []
    for frame in frames:
        for r in frame.itertuples(index=False):
            p_adjusted = number(getattr(r, rule.column))
            why = getattr(r, "not_estimable", None)
            records.append(
                {
                    "analysis_set": r.analysis_set,
                    "test": r.test,
                    "role": roles.get((r.analysis_set, r.test), "exploratory"),
                    "X": r.X,
                    "Y": r.Y,
                    "A": r.A,
                    "B": r.B,
                    "alternative": r.alternative,
                    "model": r.model,
                    "network": stage_kind(r.stage),
                    "finetune_dataset": _name(r.finetune_dataset),
                    "seed": _count(r.seed),
                    "d": number(r.effect_size),
                    "association": number(getattr(r, "mean_difference", None)),
                    "sd": number(getattr(r, "pooled_sd", None)),
                    "ci_low": number(r.ci_low),
                    "ci_high": number(r.ci_high),
                    "ci_level": number(getattr(r, "ci_level", None)),
                    "p": number(r.pvalue),
                    "p_two_sided": number(r.pvalue_two_sided),
                    "p_floor": number(r.pvalue_floor),
                    "p_method": str(getattr(r, "method", "")),
                    "p_adjusted": p_adjusted,
                    "n_x": _count(getattr(r, "n_x", None)),
                    "n_y": _count(getattr(r, "n_y", None)),
                    "detectable_d": number(getattr(r, "detectable_d", None)),
                    "detectable_power": number(getattr(r, "detectable_power", None)),
                    "detectable_alpha": number(getattr(r, "detectable_alpha", None)),
                    "not_estimable": why if isinstance(why, str) and why else None,
                    "verdict": VERDICT_WORDS["test"][0 if rule.significant(p_adjusted) else 1],
                    "opposite": opposite_direction(float(r.effect_size), r.alternative),
                }
            )
    return records
