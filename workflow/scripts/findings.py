"""Write the run's findings in words (reStructuredText and HTML) from the summary tables.

Standalone: python workflow/scripts/findings.py --ieat results/summary/ieat.csv --bts results/summary/bts.csv
--tests '{"synthetic": [{"name": "t", "X": "person_a", "Y": "person_b", "A": "surfboard", "B": "car"}]}'
--alpha 0.01 --findings findings.rst --html findings.html
"""

import pandas as pd

from biastransfer.atomic import write_text
from biastransfer.report.findings import describe_findings, to_html
from biastransfer.scripting import run


def main(ieat: str, bts: str, tests: dict, findings: str, html: str, alpha: float = 0.05) -> None:
    text = describe_findings(
        pd.read_csv(ieat, keep_default_na=False, na_values=[""]), pd.read_csv(bts, keep_default_na=False), tests, alpha
    )
    write_text(findings, text)
    write_text(html, to_html(text))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
