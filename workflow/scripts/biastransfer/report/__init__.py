"""Reporting on a run's summary tables (matplotlib and pandas; never torch).

The curated public API (docs/api.md); everything else stays in its module.

- The paper's tables as LaTeX documents: :func:`ieat_latex`, :func:`bts_latex`, :func:`finetune_latex`,
  :func:`analysis_set_latex`, and a document's ``tabular`` for ``\\input``: :func:`latex_fragment`
- The paper's figures: :func:`intra_figure`, :func:`inter_figure`, :func:`rank_figure`, :func:`ieat_heatmap`,
  :func:`change_figure`, drawn in :func:`paper_style` and saved by :func:`save_figure`
- Findings in words: :func:`describe_findings`
- Against the published numbers: :func:`read_reference`, :func:`compare_to_paper` (a :class:`PaperComparison`)
- The static HTML report: :func:`headline_table`, :func:`write_site`
"""

from biastransfer.report.compare import PaperComparison, compare_to_paper, read_reference
from biastransfer.report.figures import inter_figure, intra_figure, rank_figure
from biastransfer.report.findings import describe_findings
from biastransfer.report.headline import headline_table
from biastransfer.report.ieat_figures import change_figure, ieat_heatmap
from biastransfer.report.site import write_site
from biastransfer.report.style import paper_style, save_figure
from biastransfer.report.tables import analysis_set_latex, bts_latex, finetune_latex, ieat_latex, latex_fragment

__all__ = [
    "ieat_latex",
    "bts_latex",
    "finetune_latex",
    "analysis_set_latex",
    "latex_fragment",
    "intra_figure",
    "inter_figure",
    "rank_figure",
    "ieat_heatmap",
    "change_figure",
    "paper_style",
    "save_figure",
    "describe_findings",
    "read_reference",
    "compare_to_paper",
    "PaperComparison",
    "headline_table",
    "write_site",
]
