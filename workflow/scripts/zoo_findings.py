"""The model zoo's findings in words (reStructuredText and HTML) from its ranked table and status table, and
its claims about groups of models (when claims.tests lists any) and its factors questions (factors.questions).

Standalone: python workflow/scripts/zoo_findings.py --ranking results/zoo/ranking.csv \\
    --status_csv results/zoo/status.csv --settings '{"rank_by": {"analysis_set": "coco", "test": "t"}, "alpha": 0.05}' \\
    --findings F.rst --html F.html [--claims results/summary/claims.csv] [--factors results/summary/factors.csv]
"""

import pandas as pd

from biastransfer.atomic import write_text
from biastransfer.report.findings import describe_claims, describe_factors, describe_zoo
from biastransfer.report.html import rst_to_html
from biastransfer.scripting import run
from biastransfer.workflow.rules.zoo import ZooFindingsSettings


def _read(path: str) -> pd.DataFrame:
    return pd.read_csv(path, keep_default_na=False, na_values=[""])


def main(
    ranking: str,
    status_csv: str,
    settings: ZooFindingsSettings,
    findings: str,
    html: str,
    claims: list | None = None,
    factors: list | None = None,
) -> None:
    text = describe_zoo(_read(ranking), _read(status_csv), alpha=settings.alpha, **settings.ranked_by())
    if claims:
        text += "\n" + "\n".join(describe_claims(_read(claims[0])))
    if factors:
        text += "\n" + "\n".join(describe_factors(_read(factors[0])))
    write_text(findings, text)
    write_text(html, rst_to_html(text, part="whole"))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
