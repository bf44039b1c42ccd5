"""Write the run's findings in words (Markdown) from the summary tables.

Standalone: python workflow/scripts/findings.py --ieat results/summary/ieat.csv --bts results/summary/bts.csv
--tests '{"synthetic": [{"name": "t", "X": "person_a", "Y": "person_b", "A": "surfboard", "B": "car"}]}'
--alpha 0.01 --findings findings.md
"""

import pandas as pd

from biastransfer.atomic import write_text
from biastransfer.findings import describe_findings
from biastransfer.scripting import run


def main(ieat: str, bts: str, tests: dict, findings: str, alpha: float = 0.05) -> None:
    text = describe_findings(
        pd.read_csv(ieat, keep_default_na=False, na_values=[""]), pd.read_csv(bts, keep_default_na=False), tests, alpha
    )
    write_text(findings, text)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
