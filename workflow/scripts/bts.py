"""Bias Transfer Scores of one model on one analysis set, for each finetuning dataset (``datasets[i]``, written to
``table[i]``): pretrained vs each seed finetuned on it, and pooled; and the linear CKA of each finetuned and
scratch network's embedding against the pretrained one (``cka[i]``).

The finetuned and scratch files of every dataset come in one list each, every file named by its network's stage
(``ft-<dataset>-seed<n>``, ``scratch-<dataset>-seed<n>``), which assigns it to its dataset. With scratch reference
tables, each row also gets rho(scratch, finetuned) (``scratch_statistic``, ``scratch_pvalue``; the scratch
similarities averaged over their seeds into one ranking), rho(pretrained, scratch) (``pretrained_vs_scratch``)
and the retention verdict from a paired interval of rho(pretrained, finetuned) - rho(scratch, finetuned)
(:func:`biastransfer.stats.results.scratch_columns`).

Standalone: python workflow/scripts/bts.py --pretrained pre.csv --finetuned ft-d-seed0.csv ft-d-seed1.csv
ft-e-seed0.csv --settings '{"lists": {"intra": ["car", "surfboard", "person_a"]}, "pvalue": "asymptotic",
"bootstrap": 2000, "ci_level": 0.95, "seed": 0}' --datasets d e --table B-d.csv B-e.csv
[--reference scratch-d-seed0.csv scratch-e-seed0.csv ...] [--pretrained_embeddings pre.parquet
--finetuned_embeddings ft-d-seed0.parquet ft-d-seed1.parquet ft-e-seed0.parquet] (the embeddings give bootstrap
intervals of rho, resampling images within classes and recomputing both rankings on the same images; without
them, or with bootstrap 0, no interval) [--cka C-d.csv C-e.csv --reference_embeddings scratch-d-seed0.parquet ...]
(the CKA tables need the embeddings: each network against the pretrained one, each family's seeds pooled, with
jackknife intervals at ci_level; biastransfer.stats.results.cka_table)
"""

import logging
from pathlib import Path

import pandas as pd

from biastransfer.atomic import write_csv
from biastransfer.embeddings import EmbeddingTable, read_embeddings
from biastransfer.scripting import dataset_files, run, stage_files
from biastransfer.stages import PRETRAINED, parse_stage, stage_kind
from biastransfer.stats.bootstrap import BOOTSTRAP
from biastransfer.stats.change_tables import stage_replicates
from biastransfer.stats.results import CKA_COLUMNS, bts_table, cka_table, scratch_columns
from biastransfer.workflow.rules.analysis import BTSSettings

log = logging.getLogger(__name__)


def main(
    pretrained: str,
    finetuned: list,
    datasets: list,
    table: list,
    settings: BTSSettings,
    reference: list | None = None,
    pretrained_embeddings: str | None = None,
    finetuned_embeddings: list | None = None,
    reference_embeddings: list | None = None,
    cka: list | None = None,
) -> None:
    if cka and not (pretrained_embeddings and finetuned_embeddings):
        raise ValueError("--cka needs --pretrained_embeddings and --finetuned_embeddings")
    before = pd.read_csv(pretrained, keep_default_na=False)
    if (before["stage"] != "pretrained").any():
        raise ValueError(f"{pretrained}: not a similarity table of the pretrained stage")
    base = read_embeddings(pretrained_embeddings) if pretrained_embeddings else None
    files = {
        "finetuned": finetuned,
        "reference": reference,
        "finetuned_embeddings": finetuned_embeddings,
        "reference_embeddings": reference_embeddings,
    }
    grouped = {name: dataset_files(datasets, named or []) for name, named in files.items()}
    for dataset, out, cka_out in stage_files(datasets, table, cka or [""] * len(datasets)):
        dataset_bts(
            before,
            **{name: of_dataset[dataset] for name, of_dataset in grouped.items()},
            table=out,
            cka=cka_out,
            settings=settings,
            dataset=dataset,
            base=base,
        )


def dataset_bts(
    before: pd.DataFrame,
    finetuned: list,
    reference: list,
    finetuned_embeddings: list,
    reference_embeddings: list,
    table: str,
    cka: str,
    settings: BTSSettings,
    dataset: str,
    base: EmbeddingTable | None,
) -> None:
    """The BTS table (and, with ``cka``, the CKA table) of one finetuning dataset; ``before`` is the pretrained
    similarity table, ``base`` the pretrained embeddings (None without them)."""
    lists, pvalue, ci_level, seed = settings.lists, settings.pvalue, settings.ci_level, settings.seed
    after = {}
    for path in finetuned:
        frame = pd.read_csv(path, keep_default_na=False)
        ft_dataset, ft_seed = parse_stage(frame["stage"].iloc[0])
        if ft_dataset != dataset or stage_kind(frame["stage"].iloc[0]) != "finetuned":
            raise ValueError(f"{path}: stage {frame['stage'].iloc[0]!r} is not finetuned on {dataset!r}")
        after[ft_seed] = frame
    embedded = {Path(p).stem: read_embeddings(p) for p in finetuned_embeddings} if base is not None else {}
    replicates = None
    if base is not None and settings.bootstrap:
        stages = {PRETRAINED: base}
        stages.update((parse_stage(stage)[1], t) for stage, t in embedded.items())
        replicates = stage_replicates(stages, lists, bootstrap=settings.bootstrap, seed=seed)
    scores = bts_table(before, after, lists, pvalue=pvalue, replicates=replicates, ci_level=ci_level)
    if reference:
        refs = [pd.read_csv(path, keep_default_na=False) for path in reference]
        extra = scratch_columns(
            before,
            after,
            refs,
            lists,
            pvalue=pvalue,
            bootstrap=settings.bootstrap or BOOTSTRAP,
            ci_level=ci_level,
            seed=seed,
        )
        scores = pd.concat([scores, extra], axis=1)
    front = {
        "analysis_set": before["analysis_set"].iloc[0],
        "model": before["model"].iloc[0],
        "finetune_dataset": dataset,
    }
    scores = pd.concat([pd.DataFrame(front, index=scores.index), scores], axis=1)
    if cka:
        networks = {**embedded, **{Path(p).stem: read_embeddings(p) for p in reference_embeddings}}
        similarity = cka_table(base, networks, ci_level=ci_level)
        write_csv(cka, similarity.assign(**front)[["analysis_set", "model", *CKA_COLUMNS]])
        for row in similarity.itertuples():
            log.info("CKA pretrained vs %s: %.3f [%.3f, %.3f]", row.stage, row.cka, row.ci_low, row.ci_high)
    write_csv(table, scores)
    for row in scores.itertuples():
        log.info(
            "BTS %s, %s seed %s: rho %.3f, p %.3g, n %d",
            *(dataset, row.kind, row.seed, row.statistic, row.pvalue, row.n),
        )
        if reference:
            log.info(
                "  against the scratch reference: rho %.3f, p %.3g; retention %.3f [%.3f, %.3f]: %s",
                row.scratch_statistic,
                row.scratch_pvalue,
                row.retention_difference,
                row.retention_ci_low,
                row.retention_ci_high,
                row.retention_verdict,
            )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
