"""Concatenate the per-job change tables; add Holm and Benjamini-Hochberg p-values.

Each table is one family per analysis set (similarity changes: per analysis set and kind), adjusted
across models, finetune datasets, seeds and tests.

Standalone: python workflow/scripts/summarise_change.py --ieat i1.csv ... --similarity s1.csv ... --seeds k1.csv ...
--ieat_out I.csv --similarity_out S.csv --seeds_out K.csv
"""

import logging

import pandas as pd

from biastransfer.atomic import write_csv
from biastransfer.scripting import run
from biastransfer.stats.results import add_adjusted_pvalues

log = logging.getLogger(__name__)


def _summary(paths: list, by: list) -> pd.DataFrame:
    frames = [pd.read_csv(p, keep_default_na=False, na_values=[""]) for p in paths]
    frames = [f for f in frames if not f.empty and "pvalue" in f.columns]
    if not frames:
        return pd.DataFrame()
    return add_adjusted_pvalues(pd.concat(frames, ignore_index=True), by=by)


def main(ieat: list, similarity: list, seeds: list, ieat_out: str, similarity_out: str, seeds_out: str) -> None:
    for paths, out, by in (
        (ieat, ieat_out, ["analysis_set"]),
        (similarity, similarity_out, ["analysis_set", "kind"]),
        (seeds, seeds_out, ["analysis_set"]),
    ):
        frame = _summary(paths, by)
        write_csv(out, frame)
        log.info("%s: %d rows", out, len(frame))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
