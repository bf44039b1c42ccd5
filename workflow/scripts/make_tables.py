"""One LaTeX table (a standalone booktabs document) of a run's results, laid out like the paper's.

--kind and the summary table it reads (--summary):
  analysis_set  Tables 5/6  analysis_sets.csv     with --analysis_set
  ieat          Tables 2/9  ieat.csv              with --analysis_set
  bts           Tables 3/4  bts.csv               with --analysis_set and --dataset (the finetuning dataset)
  finetune      Tables 7/8  finetune_metrics.csv  with --dataset

Snakemake: rules table_analysis_set, table_ieat, table_bts, table_finetune (rules/report.smk).
Standalone, for a reviewer:
python workflow/scripts/make_tables.py --kind bts --summary results/summary/bts.csv
    --analysis_set coco --dataset coco --table out/bts_coco_ft-coco.tex [--adjust holm|bh]
"""

import logging

from biastransfer.atomic import write_text
from biastransfer.report.figures import BTS_COLUMNS
from biastransfer.scripting import run
from biastransfer.report.formatting import read_summary
from biastransfer.report.tables import FINETUNE_COLUMNS, IEAT_COLUMNS, analysis_set_table, bts_table, finetune_table, ieat_table

log = logging.getLogger(__name__)


def main(
    kind: str, summary: str, table: str, analysis_set: str = "", dataset: str = "", adjust: str = "holm",
) -> None:
    if kind == "analysis_set":
        text = analysis_set_table(read_summary(summary, ("analysis_set", "class", "n")), analysis_set)
    elif kind == "ieat":
        text = ieat_table(read_summary(summary, IEAT_COLUMNS), analysis_set, adjust=adjust)
    elif kind == "bts":
        text = bts_table(read_summary(summary, BTS_COLUMNS), analysis_set, dataset, adjust=adjust)
    elif kind == "finetune":
        text = finetune_table(read_summary(summary, FINETUNE_COLUMNS), dataset)
    else:
        raise ValueError(f"kind must be analysis_set, ieat, bts or finetune, not {kind!r}")
    write_text(table, text)
    log.info("%s table from %s -> %s", kind, summary, table)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
