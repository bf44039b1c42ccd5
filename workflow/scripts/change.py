"""What finetuning changed, for one model on one analysis set: the same images before and after.

Writes three tables (docs/formats.md): the change of every iEAT's d per seed (``ieat``), the change of
every listed intra- and inter-class similarity per seed (``similarity``), both with paired bootstrap
intervals and p-values, and d over the seeds with one combined test (``seeds``).

Standalone: python workflow/scripts/change.py --pretrained_embeddings pre.parquet
--finetuned_embeddings ft-d-seed0.parquet ft-d-seed1.parquet
--settings '{"tests": [{"name": "t", "X": "person_a", "Y": "person_b", "A": "surfboard", "B": "car"}], "lists": {},
"ieat": {"permutations": 100000, "alternative": "greater", "method": "auto", "seed": 0, "bootstrap": 2000,
"ci_level": 0.95}, "bts": {"bootstrap": 2000, "ci_level": 0.95, "seed": 0}}'
--analysis_set synthetic --model m --dataset d --ieat I.csv --similarity S.csv --seeds K.csv
"""

import logging
from pathlib import Path

import pandas as pd

from biastransfer.atomic import write_csv
from biastransfer.embeddings import read_embeddings
from biastransfer.scripting import run
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
    ieat: str,
    similarity: str,
    seeds: str,
    settings: ChangeSettings,
    analysis_set: str,
    model: str,
    dataset: str,
) -> None:
    stages = {PRETRAINED: read_embeddings(pretrained_embeddings)}
    for path in finetuned_embeddings:
        ft_dataset, ft_seed = parse_stage(Path(path).stem)
        if ft_dataset != dataset:
            raise ValueError(f"{path}: not the embeddings of a model finetuned on {dataset!r}")
        stages[ft_seed] = read_embeddings(path)
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
            "%s seed %s: delta d = %.3f [%.3f, %.3f], p = %.3g",
            *(row.test, row.seed, row.delta_d, row.ci_low, row.ci_high, row.pvalue),
        )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
