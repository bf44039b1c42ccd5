"""Bias Transfer Scores of one model on one analysis set: pretrained vs each finetuned seed, and pooled.

Standalone: python workflow/scripts/bts.py --pretrained pre.csv --finetuned ft-d-seed0.csv ft-d-seed1.csv
--lists '{"intra": ["car", "surfboard", "person_a"]}' --pvalue asymptotic --dataset d --table B.csv
"""

import logging

import pandas as pd

from biastransfer.stats.results import bts_table
from biastransfer.atomic import write_csv
from biastransfer.config import parse_stage
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(
    pretrained: str, finetuned: list, table: str, lists: dict, pvalue: str, dataset: str,
) -> None:
    before = pd.read_csv(pretrained, keep_default_na=False)
    if (before["stage"] != "pretrained").any():
        raise ValueError(f"{pretrained}: not a similarity table of the pretrained stage")
    after = {}
    for path in finetuned:
        frame = pd.read_csv(path, keep_default_na=False)
        ft_dataset, seed = parse_stage(frame["stage"].iloc[0])
        if ft_dataset != dataset:
            raise ValueError(f"{path}: stage {frame['stage'].iloc[0]!r} is not finetuned on {dataset!r}")
        after[seed] = frame
    scores = bts_table(before, after, lists, pvalue=pvalue)
    front = {
        "analysis_set": before["analysis_set"].iloc[0],
        "model": before["model"].iloc[0],
        "finetune_dataset": dataset,
    }
    scores = pd.concat([pd.DataFrame(front, index=scores.index), scores], axis=1)
    write_csv(table, scores)
    for row in scores.itertuples():
        log.info("BTS %s seed %s: rho %.3f, p %.3g, n %d", row.kind, row.seed, row.statistic, row.pvalue, row.n)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
