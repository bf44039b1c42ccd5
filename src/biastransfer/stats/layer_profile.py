"""Layer profiles: iEAT and BTS at every profiled layer of one model, pretrained and finetuned.

One tidy table (docs/formats.md, ``layer profile``): a row per (layer, measure, stage, item) with the
estimate and its bootstrap interval. ``measure`` ``ieat``: ``item`` is the test, ``stage`` the
embedded stage, ``estimate`` d. ``measure`` ``bts``: ``item`` is ``intra`` or ``inter``, ``stage`` the
finetuned stage compared with ``pretrained`` (``ft-{dataset}`` with seed ``pooled`` for the seeds'
similarities averaged first, as the paper's BTS), ``estimate`` Spearman's rho. ``measure`` ``cka``: ``item`` is
``linear``, ``stage`` a finetuned stage (or ``ft-{dataset}``, seeds pooled), ``estimate`` the linear CKA of its
embedding at that layer against the pretrained one's, with its jackknife interval (at the BTS's ``ci_level``)
and no p-value. ``pvalue_holm`` and
``pvalue_bh`` adjust within one model's (measure, stage, item) across its layers: the family asks
"at which of these layers is there an effect".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from biastransfer.embeddings import EmbeddingTable
from biastransfer.stages import PRETRAINED, parse_stage, stage_kind
from biastransfer.stats.change_tables import stage_replicates
from biastransfer.stats.results import add_adjusted_pvalues, bts_table, cka_table, ieat_table, similarity_table

PROFILE_COLUMNS = (
    "analysis_set",
    "model",
    "layer",
    "depth",
    "dim",
    "pool",
    "measure",
    "stage",
    "finetune_dataset",
    "seed",
    "item",
    "role",
    "estimate",
    "ci_low",
    "ci_high",
    "ci_level",
    "pvalue",
    "pvalue_floor",
    "pvalue_holm",
    "pvalue_bh",
    "n",
)


def _check_layers(stages: Mapping[str, Mapping[str, EmbeddingTable]]) -> list[str]:
    """The layers every stage has (in the pretrained stage's order); ValueError when stages disagree."""
    if PRETRAINED not in stages:
        raise ValueError(f"layer profile: no pretrained stage among {', '.join(stages)}")
    layers = list(stages[PRETRAINED])
    for stage, tables in stages.items():
        if list(tables) != layers:
            raise ValueError(f"layer profile: stage {stage!r} has layers {list(tables)}, pretrained has {layers}")
    return layers


def _ieat_rows(stage: str, table: EmbeddingTable, tests: Sequence[Mapping], options: Mapping) -> list[dict]:
    dataset, seed = parse_stage(stage)
    frame = ieat_table(table, tests, **options)
    roles = {t["name"]: t.get("role", "") for t in tests}
    return [
        {
            "measure": "ieat",
            "stage": stage,
            "finetune_dataset": dataset or "",
            "seed": "" if seed is None else seed,
            "item": r.test,
            "role": roles[r.test] or "",
            "estimate": r.effect_size,
            "ci_low": r.ci_low,
            "ci_high": r.ci_high,
            "ci_level": r.ci_level,
            "pvalue": r.pvalue,
            "pvalue_floor": r.pvalue_floor,
            "n": r.n_x + r.n_y + r.n_a + r.n_b,
        }
        for r in frame.itertuples()
    ]


def _bts_rows(
    tables: Mapping[str, EmbeddingTable],
    lists: Mapping,
    similarity: Mapping,
    *,
    pvalue: str,
    bootstrap: int,
    ci_level: float,
    seed: int,
) -> list[dict]:
    """BTS of every finetuning dataset's seeds (and pooled) against the pretrained stage at one layer."""
    sims = {stage: similarity_table(t, **similarity) for stage, t in tables.items()}
    rows = []
    datasets = dict.fromkeys(parse_stage(s)[0] for s in tables if stage_kind(s) == "finetuned")
    for dataset in datasets:
        after = {
            parse_stage(s)[1]: sims[s] for s in tables if stage_kind(s) == "finetuned" and parse_stage(s)[0] == dataset
        }
        replicates = None
        if bootstrap:
            chosen = {PRETRAINED: tables[PRETRAINED]}
            chosen.update(
                (parse_stage(s)[1], t)
                for s, t in tables.items()
                if parse_stage(s)[0] == dataset and stage_kind(s) == "finetuned"
            )
            replicates = stage_replicates(chosen, lists, bootstrap=bootstrap, seed=seed)
        scores = bts_table(sims[PRETRAINED], after, lists, pvalue=pvalue, replicates=replicates, ci_level=ci_level)
        for r in scores.itertuples():
            stage = f"ft-{dataset}" if r.seed == "pooled" else f"ft-{dataset}-seed{r.seed}"
            rows.append(
                {
                    "measure": "bts",
                    "stage": stage,
                    "finetune_dataset": dataset,
                    "seed": r.seed,
                    "item": r.kind,
                    "role": "",
                    "estimate": r.statistic,
                    "ci_low": r.ci_low,
                    "ci_high": r.ci_high,
                    "ci_level": ci_level,
                    "pvalue": r.pvalue,
                    "pvalue_floor": r.pvalue_floor,
                    "n": r.n,
                }
            )
    return rows


def _cka_rows(tables: Mapping[str, EmbeddingTable], ci_level: float) -> list[dict]:
    """Linear CKA of every finetuned stage (and each dataset's seeds pooled) against the pretrained one at one
    layer."""
    finetuned = {s: t for s, t in tables.items() if stage_kind(s) == "finetuned"}
    if not finetuned:
        return []
    frame = cka_table(tables[PRETRAINED], finetuned, ci_level=ci_level)
    return [
        {
            "measure": "cka",
            "stage": r.stage,
            "finetune_dataset": r.finetune_dataset,
            "seed": r.seed,
            "item": "linear",
            "role": "",
            "estimate": r.cka,
            "ci_low": r.ci_low,
            "ci_high": r.ci_high,
            "ci_level": r.ci_level,
            "pvalue": float("nan"),
            "pvalue_floor": float("nan"),
            "n": r.n_images,
        }
        for r in frame.itertuples()
    ]


def layer_profile_table(
    stages: Mapping[str, Mapping[str, EmbeddingTable]],
    layer_info: Mapping[str, Mapping],
    *,
    tests: Sequence[Mapping],
    lists: Mapping[str, Sequence],
    ieat_options: Mapping,
    bts_options: Mapping,
    similarity_options: Mapping | None = None,
) -> pd.DataFrame:
    """The profile of one model: ``stages`` maps each stage to ``{layer: embeddings}`` (the same layers
    and images everywhere), ``layer_info`` each layer to ``{depth, dim, pool}``. ``ieat_options`` go to
    :func:`ieat_table` (permutations, alternative, method, seed, bootstrap, ci_level); ``bts_options``
    are ``pvalue``, ``bootstrap``, ``ci_level`` and ``seed`` of the BTS; ``similarity_options`` go to
    :func:`similarity_table` (method, iterations, seed). The CKA's interval is at the BTS's ``ci_level``."""
    layers = _check_layers(stages)
    rows = []
    for layer in layers:
        info = layer_info[layer]
        per_stage = {stage: tables[layer] for stage, tables in stages.items()}
        found = [row for stage, table in per_stage.items() for row in _ieat_rows(stage, table, tests, ieat_options)]
        found += _bts_rows(per_stage, lists, similarity_options or {}, **bts_options)
        found += _cka_rows(per_stage, bts_options["ci_level"])
        rows += [
            {"layer": layer, "depth": int(info["depth"]), "dim": int(info["dim"]), "pool": info["pool"], **row}
            for row in found
        ]
    frame = pd.DataFrame(
        rows, columns=[c for c in PROFILE_COLUMNS if c not in ("analysis_set", "model", "pvalue_holm", "pvalue_bh")]
    )
    frame = frame.astype({"ci_low": float, "ci_high": float, "pvalue": float})
    return add_adjusted_pvalues(frame, by=["measure", "stage", "item"])
