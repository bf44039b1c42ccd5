"""The model zoo's ranked table (CSV and LaTeX) and every model's status (CSV) from the iEAT summary.

Standalone: python workflow/scripts/zoo_table.py --ieat results/summary/ieat.csv \\
    --statuses results/zoo/status/*.json --settings '{"about": {"m": {"family": "...", "data": "..."}},
    "rank_by": {"analysis_set": "coco", "test": "refrigerator_vs_surfboard"}, "adjust": "holm"}' \\
    --csv R.csv --document R.tex --status_csv S.csv
"""

import logging

import pandas as pd

from biastransfer.atomic import write_csv, write_text
from biastransfer.report.zoo import ranking_latex, ranking_table, status_table
from biastransfer.scripting import run
from biastransfer.workflow.rules.zoo import ZooTableSettings
from biastransfer.zoo import read_status

log = logging.getLogger(__name__)


def main(ieat: str, statuses: list, settings: ZooTableSettings, csv: str, document: str, status_csv: str) -> None:
    status = status_table([read_status(p) for p in statuses], settings.about)
    table = ranking_table(pd.read_csv(ieat, keep_default_na=False, na_values=[""]), status, adjust=settings.adjust)
    latex = ranking_latex(table, status, **settings.ranked_by())
    write_csv(status_csv, status)
    write_csv(csv, table)
    write_text(document, latex)
    for row in status[~status["ok"]].itertuples():
        log.warning("not audited: %s: %s", row.model, row.error)
    log.info(
        "%s: %d rows, %d models audited, %d failed",
        csv,
        len(table),
        int(status["ok"].sum()),
        int((~status["ok"]).sum()),
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
