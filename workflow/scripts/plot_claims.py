"""Each model's value of every claim's measure, by group or finetuning dataset, with the claim's verdict.

Snakemake: rule plot_claims (rules/claims.smk). Standalone, for a reviewer:
python workflow/scripts/plot_claims.py --table results/summary/claims.csv
    --values results/summary/claim_values.csv --png out/claims.png --pdf out/claims.pdf
"""

import logging

from biastransfer.report.claims import CLAIMS_REQUIRED, VALUES_REQUIRED, claims_figure
from biastransfer.report.formatting import read_summary
from biastransfer.report.style import figure_stem, save_figure
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(table: str, values: str, png: str, pdf: str) -> None:
    claims = read_summary(table, CLAIMS_REQUIRED)
    written = save_figure(claims_figure(read_summary(values, VALUES_REQUIRED), claims), figure_stem(png, pdf))
    log.info("%d claims -> %s", len(claims), ", ".join(map(str, written)))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
