"""The LaTeX table of every model's layer profile on one analysis set.

Standalone: python workflow/scripts/table_layers.py --summary results/summary/layer_profile.csv
--table out/layers_A.tex --analysis_set A
"""

from biastransfer.atomic import write_text
from biastransfer.report.formatting import read_summary
from biastransfer.report.layer_report import PROFILE_REQUIRED, layer_table
from biastransfer.scripting import run


def main(summary: str, table: str, analysis_set: str) -> None:
    write_text(table, layer_table(read_summary(summary, PROFILE_REQUIRED), analysis_set))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
