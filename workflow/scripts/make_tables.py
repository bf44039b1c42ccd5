"""One table of a run's results, laid out like the paper's: a standalone LaTeX document (--table, booktabs),
its ``tabular`` alone for ``\\input`` into a paper (--fragment) and its rows as numbers (--csv, for the
HTML report and for downloads).

--kind and the summary table it reads (--summary):
  analysis_set  Tables 5/6  analysis_sets.csv     with --analysis_set
  ieat          Tables 2/9  ieat.csv              with --analysis_set
  bts           Tables 3/4  bts.csv               with --analysis_set and --dataset (the finetuning dataset)
  finetune      Tables 7/8  finetune_metrics.csv  with --dataset

Snakemake: rules table_analysis_set, table_ieat, table_bts, table_finetune (rules/report.smk).
Standalone, for a reviewer:
python workflow/scripts/make_tables.py --kind bts --summary results/summary/bts.csv
    --analysis_set coco --dataset coco --table out/bts_coco_ft-coco.tex
    [--fragment out/bts_coco_ft-coco_tabular.tex --csv out/bts_coco_ft-coco.csv] [--adjust holm|bh]
"""

import logging

from biastransfer.atomic import write_csv, write_text
from biastransfer.report.figures import BTS_COLUMNS
from biastransfer.report.formatting import read_summary
from biastransfer.report.tables import (
    FINETUNE_COLUMNS,
    IEAT_COLUMNS,
    analysis_set_frame,
    analysis_set_table,
    bts_frame,
    bts_table,
    finetune_frame,
    finetune_table,
    ieat_frame,
    ieat_table,
    latex_fragment,
)
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(
    kind: str,
    summary: str,
    table: str,
    analysis_set: str = "",
    dataset: str = "",
    adjust: str = "holm",
    fragment: str = "",
    csv: str = "",
) -> None:
    if kind == "analysis_set":
        stats = read_summary(summary, ("analysis_set", "class", "n"))
        text, rows = analysis_set_table(stats, analysis_set), analysis_set_frame(stats, analysis_set)
    elif kind == "ieat":
        ieat = read_summary(summary, IEAT_COLUMNS)
        text, rows = ieat_table(ieat, analysis_set, adjust=adjust), ieat_frame(ieat, analysis_set, adjust=adjust)
    elif kind == "bts":
        bts = read_summary(summary, BTS_COLUMNS)
        text, rows = (
            bts_table(bts, analysis_set, dataset, adjust=adjust),
            bts_frame(bts, analysis_set, dataset, adjust=adjust),
        )
    elif kind == "finetune":
        metrics = read_summary(summary, FINETUNE_COLUMNS)
        text, rows = finetune_table(metrics, dataset), finetune_frame(metrics, dataset)
    else:
        raise ValueError(f"kind must be analysis_set, ieat, bts or finetune, not {kind!r}")
    write_text(table, text)
    if fragment:
        write_text(fragment, latex_fragment(text))
    if csv:
        write_csv(csv, rows)
    log.info("%s table from %s -> %s", kind, summary, table)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
