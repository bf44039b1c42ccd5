"""Our numbers beside the paper's (Tables 2-9) for every row this run produced, as CSV and LaTeX.

Snakemake: rule compare_paper (rules/report.smk). Standalone, for a reviewer:
python workflow/scripts/compare_paper.py --reference resources/paper_reference.csv
    --bts results/summary/bts.csv --ieat results/summary/ieat.csv
    --finetune_metrics results/summary/finetune_metrics.csv --analysis_sets results/summary/analysis_sets.csv
    --csv out/paper_comparison.csv --document out/paper_comparison.tex
    --settings '{"alpha": 0.05, "tolerances": {"ieat_d": 0.1}, "targets": ["man", "woman"]}'
"""

import logging

from biastransfer.atomic import write_csv, write_text
from biastransfer.report.compare import compare_to_paper, comparison_document, read_reference, run_measurements
from biastransfer.report.formatting import BTS_COLUMNS, read_summary
from biastransfer.report.tables import FINETUNE_COLUMNS, IEAT_COLUMNS
from biastransfer.scripting import run
from biastransfer.workflow.rules.report import ComparisonSettings

log = logging.getLogger(__name__)


def main(
    reference: str,
    bts: str,
    ieat: str,
    finetune_metrics: str,
    analysis_sets: str,
    csv: str,
    document: str,
    settings: ComparisonSettings,
) -> None:
    ours = run_measurements(
        bts=read_summary(bts, BTS_COLUMNS),
        ieat=read_summary(ieat, IEAT_COLUMNS),
        finetune_metrics=read_summary(finetune_metrics, FINETUNE_COLUMNS),
        analysis_sets=read_summary(analysis_sets, ("analysis_set", "class", "n")),
        targets=tuple(settings.targets),
    )
    comparison = compare_to_paper(ours, read_reference(reference), tolerances=settings.tolerances, alpha=settings.alpha)
    write_csv(csv, comparison.rows)
    write_text(document, comparison_document(comparison))
    log.info(
        "%d paper rows produced by this run: %d agree, %d flagged",
        len(comparison.rows),
        comparison.n_agree,
        comparison.n_flagged,
    )
    for row in comparison.rows[comparison.rows["flagged"]].itertuples(index=False):
        log.info("flagged: %s: ours %s, paper %s (%s)", row.provenance, row.ours, row.paper, row.status)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
