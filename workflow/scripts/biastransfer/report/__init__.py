"""Reporting: shared formatting, LaTeX tables, figures, findings in words and the comparison with the
paper. Needs matplotlib and pandas; never torch.
"""

from biastransfer.report.compare import (  # noqa: F401
    DEFAULT_TOLERANCES,
    FAMILIES,
    JOIN_KEYS,
    KEYS,
    P_MEASURES,
    REFERENCE_COLUMNS,
    PaperComparison,
    compare_to_paper,
    comparison_document,
    read_reference,
    run_measurements,
)
from biastransfer.report.figures import (  # noqa: F401
    BTS_COLUMNS,
    SIMILARITY_CHANGE_COLUMNS,
    SIMILARITY_COLUMNS,
    SIMILARITY_LABEL,
    Z95,
    change_by_seed,
    inter_figure,
    intra_figure,
    key_label,
    pooled_bts,
    rank_figure,
    similarity_by_stage,
)
from biastransfer.report.findings import (  # noqa: F401
    IEAT_SCOPE,
    ROLE_TEXT,
    describe_bts,
    describe_findings,
    describe_ieat,
    to_html,
)
from biastransfer.report.formatting import (  # noqa: F401
    ADJUSTMENT_NAMES,
    ADJUSTMENTS,
    LABEL_COLUMNS,
    MODEL_LABELS,
    OPPOSITE_EFFECT,
    SIGNIFICANCE_LEVELS,
    at_floor,
    format_interval,
    format_number,
    format_p,
    latex_escape,
    model_label,
    opposite_direction,
    ordered_groups,
    p_text,
    read_summary,
    require_columns,
    stage_group,
    stars,
)
from biastransfer.report.ieat_figures import (  # noqa: F401
    CHANGE_COLUMNS,
    change_figure,
    ieat_columns,
    ieat_heatmap,
)
from biastransfer.report.network_findings import (  # noqa: F401
    convergence,
    describe_attribution,
    describe_convergence,
    describe_reference,
)
from biastransfer.report.style import (  # noqa: F401
    DOUBLE_COLUMN,
    MIN_FONT_PT,
    OKABE_ITO,
    SINGLE_COLUMN,
    STAGE_COLOURS,
    STAGE_MARKERS,
    STYLE,
    WIDTH_SLACK,
    WIDTHS,
    paper_figure,
    paper_style,
    print_size_problems,
    save_figure,
    smallest_font,
    stage_words,
)
from biastransfer.report.tables import (  # noqa: F401
    ALTERNATIVE_WORDS,
    BTS_PVALUE_WORDS,
    FINETUNE_COLUMNS,
    IEAT_COLUMNS,
    METHOD_WORDS,
    analysis_set_table,
    bts_table,
    ci_words,
    finetune_summary,
    finetune_table,
    ieat_by_stage,
    ieat_pvalue_words,
    ieat_table,
    standalone_document,
    tabular_of,
)

__all__ = [
    "MODEL_LABELS",
    "SIGNIFICANCE_LEVELS",
    "LABEL_COLUMNS",
    "ADJUSTMENTS",
    "ADJUSTMENT_NAMES",
    "latex_escape",
    "model_label",
    "read_summary",
    "require_columns",
    "stage_group",
    "ordered_groups",
    "stars",
    "at_floor",
    "format_p",
    "p_text",
    "OPPOSITE_EFFECT",
    "opposite_direction",
    "format_interval",
    "format_number",
    "IEAT_COLUMNS",
    "ieat_by_stage",
    "standalone_document",
    "tabular_of",
    "analysis_set_table",
    "ALTERNATIVE_WORDS",
    "METHOD_WORDS",
    "ieat_pvalue_words",
    "ci_words",
    "ieat_table",
    "BTS_PVALUE_WORDS",
    "bts_table",
    "FINETUNE_COLUMNS",
    "finetune_summary",
    "finetune_table",
    "SINGLE_COLUMN",
    "DOUBLE_COLUMN",
    "MIN_FONT_PT",
    "WIDTH_SLACK",
    "WIDTHS",
    "paper_style",
    "paper_figure",
    "stage_words",
    "print_size_problems",
    "smallest_font",
    "OKABE_ITO",
    "STAGE_COLOURS",
    "STAGE_MARKERS",
    "STYLE",
    "SIMILARITY_LABEL",
    "SIMILARITY_COLUMNS",
    "BTS_COLUMNS",
    "similarity_by_stage",
    "pooled_bts",
    "intra_figure",
    "inter_figure",
    "rank_figure",
    "ieat_columns",
    "ieat_heatmap",
    "CHANGE_COLUMNS",
    "change_figure",
    "save_figure",
    "ROLE_TEXT",
    "IEAT_SCOPE",
    "describe_ieat",
    "describe_bts",
    "describe_findings",
    "to_html",
    "KEYS",
    "JOIN_KEYS",
    "REFERENCE_COLUMNS",
    "FAMILIES",
    "P_MEASURES",
    "DEFAULT_TOLERANCES",
    "read_reference",
    "run_measurements",
    "PaperComparison",
    "compare_to_paper",
    "comparison_document",
    "convergence",
    "describe_convergence",
    "describe_reference",
    "describe_attribution",
]

# The static HTML report (results/report/): page layout and sortable tables, the headline table, the pages.
from biastransfer.report.formatting import adjusted_floor, format_spread, p_cell  # noqa: F401,E402
from biastransfer.report.headline import HEADLINE_COLUMNS, bts_headline, headline_table, ieat_headline  # noqa: F401,E402
from biastransfer.report.html import CSS, PAGES, SORT_JS, downloads, esc, html_table, page  # noqa: F401,E402
from biastransfer.report.site import (  # noqa: F401,E402
    FILE_ROLES,
    ITEM_KEYS,
    PROVENANCE_INTRO,
    SECTION_WORDS,
    overview_body,
    provenance_body,
    provenance_page,
    render_caption,
    rst_to_html,
    write_site,
)
from biastransfer.report.tables import (  # noqa: F401,E402
    VECTOR_FONTS,
    analysis_set_frame,
    bts_frame,
    finetune_frame,
    ieat_frame,
    latex_fragment,
)

__all__ += [
    "adjusted_floor",
    "p_cell",
    "format_spread",
    "VECTOR_FONTS",
    "latex_fragment",
    "ieat_frame",
    "bts_frame",
    "finetune_frame",
    "analysis_set_frame",
    "CSS",
    "SORT_JS",
    "PAGES",
    "esc",
    "page",
    "html_table",
    "downloads",
    "HEADLINE_COLUMNS",
    "ieat_headline",
    "bts_headline",
    "headline_table",
    "ITEM_KEYS",
    "FILE_ROLES",
    "rst_to_html",
    "render_caption",
    "provenance_body",
    "PROVENANCE_INTRO",
    "provenance_page",
    "overview_body",
    "SECTION_WORDS",
    "write_site",
]

# Layer profiles: figure, LaTeX table and findings (report/layer_report.py, report/layer_findings.py).
from biastransfer.report.layer_findings import describe_layers  # noqa: F401,E402
from biastransfer.report.layer_report import PROFILE_REQUIRED, layer_table, profile_figure  # noqa: F401,E402

__all__ += ["PROFILE_REQUIRED", "profile_figure", "layer_table", "describe_layers"]

# Report figures (T15b): object+person comparisons, contact sheets, training curves, the figure style.
from biastransfer.report.curves import CURVE_COLUMNS, SEED_COLOURS, curves_figure, read_curves, read_histories, run_of  # noqa: F401,E402
from biastransfer.report.gallery import SHEET_COLUMNS, THUMBNAIL_PX, contact_sheet, sheet_images  # noqa: F401,E402
from biastransfer.report.person_figures import (  # noqa: F401,E402
    PERSON_COLOURS,
    PERSON_MARKERS,
    object_person_classes,
    person_figure,
    person_pairs,
)
from biastransfer.report.style import figure_stem  # noqa: F401,E402

__all__ += [
    "SIMILARITY_CHANGE_COLUMNS",
    "Z95",
    "key_label",
    "change_by_seed",
    "figure_stem",
    "PERSON_COLOURS",
    "PERSON_MARKERS",
    "object_person_classes",
    "person_pairs",
    "person_figure",
    "SHEET_COLUMNS",
    "THUMBNAIL_PX",
    "sheet_images",
    "contact_sheet",
    "CURVE_COLUMNS",
    "SEED_COLOURS",
    "run_of",
    "read_curves",
    "read_histories",
    "curves_figure",
]

# Trajectories over finetuning epochs: figure, LaTeX table and findings (report/trajectory.py, report/trajectory_findings.py).
from biastransfer.report.trajectory import TRAJECTORY_REQUIRED, trajectory_figure, trajectory_latex  # noqa: F401,E402
from biastransfer.report.trajectory_findings import describe_trajectories, seed_means, settling_epoch  # noqa: F401,E402

__all__ += [
    "TRAJECTORY_REQUIRED",
    "trajectory_figure",
    "trajectory_latex",
    "seed_means",
    "settling_epoch",
    "describe_trajectories",
]

# The model zoo: ranked table, LaTeX, forest plot and findings (report/zoo.py, report/zoo_findings.py).
from biastransfer.report.zoo import (  # noqa: F401,E402
    RANKING_COLUMNS,
    UNSTATED,
    ZOO_INPUT_COLUMNS,
    forest_figure,
    ranking_latex,
    ranking_table,
    status_table,
)
from biastransfer.report.zoo_findings import ZOO_SCOPE, describe_zoo  # noqa: F401,E402

__all__ += [
    "ZOO_INPUT_COLUMNS",
    "RANKING_COLUMNS",
    "UNSTATED",
    "status_table",
    "ranking_table",
    "ranking_latex",
    "forest_figure",
    "ZOO_SCOPE",
    "describe_zoo",
]
