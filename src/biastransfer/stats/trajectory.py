"""Statistics of a finetuning trajectory: similarity, iEAT and BTS at every embedded epoch (docs/formats.md).

One tidy table per (analysis set, model, finetune dataset): a row per (measure, seed, epoch, item).
Epoch 0 is the pretrained network (the same embeddings for every seed); each later epoch is the
finetuned network after that epoch, embedded by the finetune job. The per-epoch tables are the
workflow's own (:mod:`biastransfer.stats.results`), so an epoch's rows equal what the similarity,
iEAT and BTS rules give for the same embeddings and resampling counts. Beside them, the linear CKA between
the pretrained embeddings and each epoch's (``measure`` ``cka``, key ``cka``), with its delete-one jackknife
interval over the images at the BTS's ``ci_level`` (:mod:`biastransfer.stats.cka`): when the representation
moved, as opposed to when the associations did. Epoch 0 has CKA 1 (the pretrained network against itself).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from biastransfer.embeddings import EmbeddingTable
from biastransfer.stages import PRETRAINED
from biastransfer.stats.change_tables import stage_replicates
from biastransfer.stats.cka import paired_cka
from biastransfer.stats.results import aligned_rows, bts_table, ieat_table, similarity_table

#: The key of the CKA rows.
CKA = "cka"

TRAJECTORY_COLUMNS = [
    "measure",
    "seed",
    "epoch",
    "kind",
    "key",
    "role",
    "value",
    "ci_low",
    "ci_high",
    "ci_level",
    "bootstrap",
    "pvalue",
    "pvalue_floor",
    "n",
]


def _similarity_rows(table: EmbeddingTable, similarity: Mapping) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(trajectory rows, the similarity table itself)."""
    sims = similarity_table(table, **similarity)
    return sims.assign(
        measure="similarity",
        role="",
        ci_low=np.nan,
        ci_high=np.nan,
        ci_level=np.nan,
        bootstrap=0,
        pvalue=np.nan,
        pvalue_floor=np.nan,
    ), sims


def _ieat_rows(table: EmbeddingTable, tests: Sequence[Mapping], ieat: Mapping) -> pd.DataFrame:
    rows = ieat_table(table, tests, **ieat)
    roles = {t["name"]: t.get("role", "") for t in tests}
    return rows.assign(
        measure="ieat",
        kind="",
        key=rows["test"],
        role=rows["test"].map(roles),
        value=rows["effect_size"],
        n=rows[["n_x", "n_y", "n_a", "n_b"]].sum(axis=1),
    )


def cka_rows(pretrained: EmbeddingTable, by_seed: Mapping[int, EmbeddingTable], ci_level: float) -> pd.DataFrame:
    """The linear CKA of each seed's embeddings against ``pretrained`` (the same images, aligned by image id) and,
    for several seeds, their mean (seed ``pooled``), each with its jackknife interval at ``ci_level``."""
    aligned = {seed: aligned_rows(pretrained, table, f"seed {seed}") for seed, table in by_seed.items()}
    each, mean = paired_cka(pretrained.embeddings, aligned, ci_level, name="the pretrained embedding")
    results = [*each.items(), *([("pooled", mean)] if len(each) > 1 else [])]
    return pd.DataFrame(
        [
            {
                "measure": CKA,
                "seed": seed,
                "kind": "",
                "key": CKA,
                "role": "",
                "value": r.estimate,
                "ci_low": r.ci_low,
                "ci_high": r.ci_high,
                "ci_level": r.level,
                "bootstrap": 0,
                "pvalue": np.nan,
                "pvalue_floor": np.nan,
                "n": r.n,
            }
            for seed, r in results
        ]
    )


def epoch_rows(
    pretrained: EmbeddingTable,
    by_seed: Mapping[int, EmbeddingTable],
    epoch: int,
    *,
    before: pd.DataFrame,
    tests: Sequence[Mapping],
    lists: Mapping | None,
    similarity: Mapping,
    ieat: Mapping,
    bts: Mapping,
) -> pd.DataFrame:
    """Rows of one epoch: each seed's similarities and iEATs, its linear CKA against ``pretrained``
    (:func:`cka_rows`), and the BTS of each seed and of the seed-pooled similarities against ``pretrained``
    (epoch 0: ``by_seed`` holds the pretrained embeddings and no BTS is computed, rho being 1 by
    construction). ``before`` is the similarity table of ``pretrained``, computed once for all epochs.

    ``similarity``: keywords of :func:`similarity_table`; ``ieat``: of :func:`ieat_table`; ``bts``:
    ``pvalue``, ``bootstrap``, ``ci_level`` and ``seed`` of the BTS and its interval.
    """
    frames, sims = [], {}
    for seed, table in by_seed.items():
        rows, sims[seed] = _similarity_rows(table, similarity)
        frames += [rows.assign(seed=seed), _ieat_rows(table, tests, ieat).assign(seed=seed)]
    frames.append(cka_rows(pretrained, by_seed, bts["ci_level"]))
    if epoch > 0:
        replicates = None
        if bts["bootstrap"]:
            replicates = stage_replicates(
                {PRETRAINED: pretrained, **by_seed}, lists or {}, bootstrap=bts["bootstrap"], seed=bts["seed"]
            )
        scores = bts_table(before, sims, lists, pvalue=bts["pvalue"], replicates=replicates, ci_level=bts["ci_level"])
        frames.append(scores.assign(measure="bts", key=scores["kind"], role="", value=scores["statistic"]))
    out = pd.concat(frames, ignore_index=True).assign(epoch=epoch)
    return out[TRAJECTORY_COLUMNS]


def curve_rows(history: Sequence[Mapping], seed: int, metric: str) -> pd.DataFrame:
    """The training curve of one run (metrics.json ``history``) as trajectory rows (measure ``curve``,
    key ``train_loss``, ``val_loss`` or ``val_<metric>``)."""
    rows = [
        {
            "measure": "curve",
            "seed": seed,
            "epoch": int(r["epoch"]),
            "kind": "",
            "key": key,
            "role": "",
            "value": float(r[column]),
            "bootstrap": 0,
        }
        for r in history
        for key, column in (("train_loss", "train_loss"), ("val_loss", "val_loss"), (f"val_{metric}", "metric"))
    ]
    return pd.DataFrame(rows).reindex(columns=TRAJECTORY_COLUMNS)


def trajectory_table(
    pretrained: EmbeddingTable,
    epochs: Mapping[int, Mapping[int, EmbeddingTable]],
    **options,
) -> pd.DataFrame:
    """Epoch 0 (pretrained, repeated for every seed) and every epoch of ``epochs`` (``{epoch: {seed:
    table}}``, the same seeds at every epoch), by :func:`epoch_rows` with ``options``."""
    seeds = {tuple(sorted(by_seed)) for by_seed in epochs.values()}
    if len(seeds) > 1:
        raise ValueError(f"the epochs hold different seeds: {sorted(seeds)}")
    if not epochs:
        raise ValueError("no trajectory epochs to analyse")
    before = similarity_table(pretrained, **options["similarity"])
    first = epoch_rows(pretrained, {0: pretrained}, 0, before=before, **options)
    frames = [first.assign(seed=seed) for seed in next(iter(seeds))]
    frames += [
        epoch_rows(pretrained, by_seed, epoch, before=before, **options) for epoch, by_seed in sorted(epochs.items())
    ]
    return pd.concat(frames, ignore_index=True)
