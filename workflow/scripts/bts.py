"""Bias Transfer Scores of one model on one analysis set: pretrained vs each finetuned seed, and pooled.

Standalone: python workflow/scripts/bts.py --similarity pre.csv ft-d-seed0.csv ft-d-seed1.csv --table B.csv
[--lists '{"intra": ["car", "surfboard", "person_a"]}'] (the first table must be the pretrained one)
"""

import logging

import pandas as pd

from biastransfer.stats.results import bts_table
from biastransfer.atomic import write_csv
from biastransfer.config import parse_stage
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(
    similarity: list, table: str, lists: dict | None = None, pvalue: str = "asymptotic",
    wildcards: dict | None = None,
) -> None:
    frames = [pd.read_csv(path, keep_default_na=False) for path in similarity]
    pretrained, finetuned = frames[0], {}
    for path, frame in zip(similarity[1:], frames[1:]):
        _, seed = parse_stage(frame["stage"].iloc[0])
        finetuned[seed] = frame
    if (pretrained["stage"] != "pretrained").any():
        raise ValueError(f"{similarity[0]}: the first similarity table must be the pretrained one")
    scores = bts_table(pretrained, finetuned, lists, pvalue=pvalue)
    wc = wildcards or {}
    front = {
        "analysis_set": pretrained["analysis_set"].iloc[0],
        "model": pretrained["model"].iloc[0],
        "finetune_dataset": wc.get("dataset", ""),
    }
    scores = pd.concat([pd.DataFrame(front, index=scores.index), scores], axis=1)
    write_csv(table, scores)
    for row in scores.itertuples():
        log.info("BTS %s seed %s: rho %.3f, p %.3g, n %d", row.kind, row.seed, row.statistic, row.pvalue, row.n)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
