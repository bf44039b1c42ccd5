"""The model zoo's findings in words (reStructuredText and HTML) from its ranked table and status table.

Standalone: python workflow/scripts/zoo_findings.py --ranking results/zoo/ranking.csv \\
    --status_csv results/zoo/status.csv --rank_by '{"analysis_set": "coco", "test": "t"}' --alpha 0.05 \\
    --findings F.rst --html F.html
"""

import pandas as pd

from biastransfer.atomic import write_text
from biastransfer.report.findings import describe_zoo
from biastransfer.report.html import rst_to_html
from biastransfer.scripting import run


def main(ranking: str, status_csv: str, rank_by: dict, alpha: float, findings: str, html: str) -> None:
    status = pd.read_csv(status_csv, keep_default_na=False, na_values=[""])
    text = describe_zoo(pd.read_csv(ranking, keep_default_na=False, na_values=[""]), status, alpha=alpha, **rank_by)
    write_text(findings, text)
    write_text(html, rst_to_html(text, part="whole"))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
