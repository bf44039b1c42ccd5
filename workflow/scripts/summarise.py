"""One summary table: the per-job similarity, BTS, CKA or iEAT tables concatenated, with Holm and BH p-values.

One family per report table: BTS p-values are adjusted within each (analysis set, finetune dataset,
seed) across models and both kinds (the pooled rows are one BTS table); iEAT p-values within each
analysis set across models, stages and tests (one iEAT table); the scratch reference networks' iEATs
(ieat_scratch, shown beside the finetuned rows) within each analysis set as a family of their own, so
that they leave the finetuning study's p-values as they are. Stars, findings and verdicts all read
these adjusted p-values. The trajectory tables (one per analysis set, model and finetune dataset) are
only concatenated: their p-values describe single epochs, not a reported family; so are the CKA tables
(intervals, no p-values), which the BTS summary's job gathers beside it (--cka, --cka_table).

Standalone: python workflow/scripts/summarise.py --settings '{"summary": "bts"}' --tables b1.csv b2.csv ... --table B.csv
[--cka c1.csv c2.csv ... --cka_table C.csv]
"""

import logging

import pandas as pd

from biastransfer.atomic import write_csv
from biastransfer.scripting import run
from biastransfer.stats.results import add_adjusted_pvalues
from biastransfer.workflow.rules.analysis import SummaryTable

log = logging.getLogger(__name__)
SUMMARIES = ("similarity", "bts", "ieat", "ieat_scratch", "trajectory", "layer_profile")


def _concatenated(tables: list) -> pd.DataFrame:
    return pd.concat([pd.read_csv(p, keep_default_na=False, na_values=[""]) for p in tables], ignore_index=True)


def main(settings: SummaryTable, tables: list, table: str, cka: list | None = None, cka_table: str = "") -> None:
    summary = settings.summary
    if summary not in SUMMARIES:
        raise ValueError(f"summary must be one of {', '.join(SUMMARIES)}, not {summary!r}")
    if bool(cka) != bool(cka_table) or (cka and summary != "bts"):
        raise ValueError("--cka and --cka_table go together, with the bts summary (the BTS jobs write both)")
    frame = _concatenated(tables)
    if summary == "bts":
        frame = add_adjusted_pvalues(frame, by=["analysis_set", "finetune_dataset", "seed"])
    elif summary in ("ieat", "ieat_scratch"):
        frame = add_adjusted_pvalues(frame, by=["analysis_set"])
    write_csv(table, frame)
    log.info("%s: %d rows from %d tables", table, len(frame), len(tables))
    if cka:
        write_csv(cka_table, _concatenated(cka))
        log.info("%s: from %d tables", cka_table, len(cka))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
