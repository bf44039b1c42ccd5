"""Reporting on a run's summary tables (matplotlib and pandas; never torch).

The curated public API (docs/api.md); everything else stays in its module. Names load on
first use (biastransfer._lazy).

- The paper's tables as LaTeX documents: :func:`ieat_latex`, :func:`bts_latex`, :func:`finetune_latex`,
  :func:`analysis_set_latex`, and a document's ``tabular`` for ``\\input``: :func:`latex_fragment`
- The paper's figures: :func:`intra_figure`, :func:`inter_figure`, :func:`rank_figure`, :func:`ieat_heatmap`,
  :func:`change_figure`, and every network's iEAT at a glance, :func:`forest_figure`, drawn in
  :func:`paper_style` and saved by :func:`save_figure`
- Findings in words: :func:`describe_findings`
- Against the published numbers: :func:`read_reference`, :func:`compare_to_paper` (a :class:`PaperComparison`)
- The run's results model (results.json): :func:`results_model`
- The static HTML report: :func:`headline_table`, :func:`write_site`
"""

from biastransfer._lazy import lazy_namespace as _lazy_namespace

#: Each public name and the module of this package that defines it, in the order docs/api.md lists them.
_EXPORTS = {
    "ieat_latex": "tables",
    "bts_latex": "tables",
    "finetune_latex": "tables",
    "analysis_set_latex": "tables",
    "latex_fragment": "latex",
    "intra_figure": "figures",
    "inter_figure": "figures",
    "rank_figure": "figures",
    "ieat_heatmap": "ieat_figures",
    "change_figure": "ieat_figures",
    "forest_figure": "forest",
    "paper_style": "style",
    "save_figure": "style",
    "describe_findings": "findings",
    "read_reference": "compare",
    "compare_to_paper": "compare",
    "PaperComparison": "compare",
    "results_model": "results",
    "headline_table": "headline",
    "write_site": "site",
}
__all__ = list(_EXPORTS)
_lazy_namespace(__name__, _EXPORTS)
