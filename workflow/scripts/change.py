"""What finetuning changed, for one model on one analysis set, for each finetuning dataset (``datasets[i]``):
the same images before and after.

Writes three tables per dataset (docs/formats.md): the change of every iEAT's d per seed (``ieat[i]``), the
change of every listed intra- and inter-class similarity per seed (``similarity[i]``), both with paired
bootstrap intervals and p-values, and d over the seeds with one combined test (``seeds[i]``). The finetuned
embeddings of every dataset come in one list, each file named by its network's stage (``ft-<dataset>-seed<n>``),
which assigns it to its dataset.

Standalone: python workflow/scripts/change.py --pretrained_embeddings pre.parquet
--finetuned_embeddings ft-d-seed0.parquet ft-d-seed1.parquet ft-e-seed0.parquet
--settings '{"tests": [{"name": "t", "X": "person_a", "Y": "person_b", "A": "surfboard", "B": "car"}], "lists": {},
"ieat": {"permutations": 100000, "alternative": "greater", "method": "auto", "seed": 0, "bootstrap": 2000,
"ci_level": 0.95}, "bts": {"bootstrap": 2000, "ci_level": 0.95, "seed": 0}}'
--analysis_set synthetic --model m --datasets d e --ieat I-d.csv I-e.csv --similarity S-d.csv S-e.csv
--seeds K-d.csv K-e.csv
"""

import logging
from pathlib import Path

import pandas as pd

from biastransfer.atomic import write_csv
from biastransfer.embeddings import read_embeddings
from biastransfer.scripting import dataset_files, run, stage_files
from biastransfer.stages import PRETRAINED, parse_stage
from biastransfer.stats.change_tables import (
    ieat_change_table,
    ieat_seeds_table,
    similarity_change_table,
    stage_replicates,
)
from biastransfer.workflow.rules.analysis import ChangeSettings

log = logging.getLogger(__name__)


def main(
    pretrained_embeddings: str,
    finetuned_embeddings: list,
    ieat: list,
    similarity: list,
    seeds: list,
    settings: ChangeSettings,
    analysis_set: str,
    model: str,
    datasets: list,
) -> None:
    base = read_embeddings(pretrained_embeddings)
    finetuned = dataset_files(datasets, finetuned_embeddings)
    for dataset, *outputs in stage_files(datasets, ieat, similarity, seeds):
        stages = {PRETRAINED: base}
        stages.update((parse_stage(Path(p).stem)[1], read_embeddings(p)) for p in finetuned[dataset])
        dataset_change(stages, *outputs, settings=settings, analysis_set=analysis_set, model=model, dataset=dataset)


def dataset_change(
    stages: dict,
    ieat: str,
    similarity: str,
    seeds: str,
    settings: ChangeSettings,
    analysis_set: str,
    model: str,
    dataset: str,
) -> None:
    """The three change tables of one finetuning dataset; ``stages`` maps ``pretrained`` and each seed finetuned
    on it to its embeddings."""
    front = {"analysis_set": analysis_set, "model": model, "finetune_dataset": dataset}
    tables, tests, test, bts = {}, settings.tests, settings.ieat, settings.bts
    if tests and test.bootstrap:
        tables[ieat] = ieat_change_table(
            stages, tests, bootstrap=test.bootstrap, ci_level=test.ci_level, seed=test.seed
        )
    if tests:
        finetuned = {s: t for s, t in stages.items() if s != PRETRAINED}
        tables[seeds] = ieat_seeds_table(
            finetuned,
            tests,
            permutations=test.permutations,
            alternative=test.alternative,
            method=test.method,
            seed=test.seed,
        )
    if bts.bootstrap:
        reps = stage_replicates(stages, settings.lists, bootstrap=bts.bootstrap, seed=bts.seed)
        tables[similarity] = similarity_change_table(reps, ci_level=bts.ci_level)
    for path in (ieat, similarity, seeds):
        frame = tables.get(path, pd.DataFrame())
        write_csv(path, pd.concat([pd.DataFrame(front, index=frame.index), frame], axis=1))
    for row in tables.get(ieat, pd.DataFrame()).itertuples():
        log.info(
            "%s, %s seed %s: delta d = %.3f [%.3f, %.3f], p = %.3g",
            *(dataset, row.test, row.seed, row.delta_d, row.ci_low, row.ci_high, row.pvalue),
        )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
