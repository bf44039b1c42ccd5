"""Concatenate the per-job similarity, BTS and iEAT tables; add Holm and Benjamini-Hochberg p-values.

BTS p-values are adjusted within each (analysis set, kind, seed) across models and finetune datasets;
iEAT p-values within each (analysis set, stage kind: pretrained or finetuned) across models and tests.

Standalone: python workflow/scripts/summarise.py --similarity s1.csv ... --bts b1.csv ... --ieat i1.csv ...
--similarity_out S.csv --bts_out B.csv --ieat_out I.csv
"""

import logging

import pandas as pd

from biastransfer.stats.results import add_adjusted_pvalues
from biastransfer.atomic import write_csv
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def _concat(paths: list) -> pd.DataFrame:
    return pd.concat([pd.read_csv(p, keep_default_na=False, na_values=[""]) for p in paths], ignore_index=True)


def main(similarity: list, bts: list, ieat: list, similarity_out: str, bts_out: str, ieat_out: str) -> None:
    similarity_all = _concat(similarity)
    write_csv(similarity_out, similarity_all)
    bts_all = add_adjusted_pvalues(_concat(bts), by=["analysis_set", "kind", "seed"])
    write_csv(bts_out, bts_all)
    ieat_all = _concat(ieat)
    ieat_all["stage_kind"] = ieat_all["stage"].where(ieat_all["stage"] == "pretrained", "finetuned")
    ieat_all = add_adjusted_pvalues(ieat_all, by=["analysis_set", "stage_kind"]).drop(columns="stage_kind")
    write_csv(ieat_out, ieat_all)
    log.info("%d similarities, %d BTS rows, %d iEAT rows", len(similarity_all), len(bts_all), len(ieat_all))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
