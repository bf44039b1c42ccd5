"""One table of a run's results, laid out like the paper's: a standalone LaTeX document (--document,
booktabs), its ``tabular`` alone for ``\\input`` into a paper (--fragment) and its rows as numbers (--csv,
for the HTML report and for downloads).

The settings' kind and the summary table it reads (--summary):
  analysis_set  Tables 5/6  results/summary/analysis_sets.csv     with --analysis_set
  ieat          Tables 2/9  results/summary/ieat.csv              with --analysis_set [--scratch
                            results/summary/ieat_scratch.csv: the scratch reference's rows]
  bts           Tables 3/4  results/summary/bts.csv               with --analysis_set and --dataset (finetuned on)
                            [--cka results/summary/cka.csv: the linear CKA beside the BTS]
  finetune      Tables 7/8  results/summary/finetune_metrics.csv  with --dataset
  layers                    results/summary/layer_profile.csv     with --analysis_set
  trajectory                results/trajectory/A/M/ft-D.csv       (one model finetuned on one dataset)
  claims                    results/summary/claims.csv            (the claims about groups of models)
  factors                   results/summary/factors.csv           (the factors questions across models)
  amplification             results/summary/amplification.csv     with --dataset (finetuned on)
  link                      results/summary/link.csv              with --dataset and --correlation
                            results/summary/link_correlation.csv
  intervention              results/summary/intervention.csv      with --dataset (the intervention)
  arm_comparison            results/summary/comparison.csv        (every compared pair of finetuning arms)

Snakemake: rules table_<kind> (rules/tables.smk, one for each table artefact).
Standalone, for a reviewer:
python workflow/scripts/make_tables.py --summary results/summary/bts.csv
    --analysis_set coco --dataset coco --document out/bts_coco_ft-coco.tex
    --settings '{"kind": "bts", "significance": {"alpha": 0.01, "adjust": "holm"}}'
    [--fragment out/bts_coco_ft-coco_tabular.tex --csv out/bts_coco_ft-coco.csv]

significance: the run's significance rule of the marks and verdicts (analysis.ieat.alpha; report.p_adjust, holm or
bh), for the kinds that mark significance or give a verdict (ieat, bts, link; null for the others).
"""

import inspect
import logging

from biastransfer.atomic import write_csv, write_text
from biastransfer.report.amplification_report import AMPLIFICATION_REQUIRED, amplification_frame, amplification_latex
from biastransfer.report.claims import CLAIMS_REQUIRED, claims_frame, claims_latex
from biastransfer.report.comparison_report import COMPARISON_REQUIRED, comparison_frame, comparison_latex
from biastransfer.report.factors import FACTORS_REQUIRED, factors_frame, factors_latex
from biastransfer.report.formatting import BTS_COLUMNS, read_summary
from biastransfer.report.intervention_report import INTERVENTION_REQUIRED, intervention_frame, intervention_latex
from biastransfer.report.latex import latex_fragment
from biastransfer.report.layer_report import PROFILE_REQUIRED, layer_frame, layer_latex
from biastransfer.report.link_report import CORRELATION_REQUIRED, LINK_REQUIRED, link_frame, link_latex
from biastransfer.report.tables import (
    CKA_REQUIRED,
    FINETUNE_COLUMNS,
    IEAT_COLUMNS,
    IEAT_PARTS,
    analysis_set_frame,
    analysis_set_latex,
    bts_frame,
    bts_latex,
    finetune_frame,
    finetune_latex,
    ieat_frame,
    ieat_latex,
)
from biastransfer.report.trajectory import TRAJECTORY_REQUIRED, trajectory_frame, trajectory_latex
from biastransfer.scripting import run
from biastransfer.workflow.rules.report import TableSettings

log = logging.getLogger(__name__)

#: kind -> (the summary's required columns, its LaTeX document, its rows); each builder takes the summary and
#: the options of main() that its signature names.
KINDS = {
    "analysis_set": (("analysis_set", "class", "n"), analysis_set_latex, analysis_set_frame),
    "ieat": (IEAT_COLUMNS + IEAT_PARTS, ieat_latex, ieat_frame),
    "bts": (BTS_COLUMNS, bts_latex, bts_frame),
    "finetune": (FINETUNE_COLUMNS, finetune_latex, finetune_frame),
    "layers": (PROFILE_REQUIRED, layer_latex, layer_frame),
    "trajectory": (TRAJECTORY_REQUIRED, trajectory_latex, trajectory_frame),
    "claims": (CLAIMS_REQUIRED, claims_latex, claims_frame),
    "factors": (FACTORS_REQUIRED, factors_latex, factors_frame),
    "amplification": (AMPLIFICATION_REQUIRED, amplification_latex, amplification_frame),
    "link": (LINK_REQUIRED, link_latex, link_frame),
    "intervention": (INTERVENTION_REQUIRED, intervention_latex, intervention_frame),
    "arm_comparison": (COMPARISON_REQUIRED, comparison_latex, comparison_frame),
}


def _built(kind: str, builder, table, options: dict):
    """``builder(table, ...)`` given the options that its signature names (every one of them: a name that is
    not an option is an error, not a silent default)."""
    names = list(inspect.signature(builder).parameters)[1:]
    missing = [name for name in names if name not in options]
    if missing:
        raise ValueError(f"table kind {kind!r} needs {missing}, which its settings do not give")
    return builder(table, **{name: options[name] for name in names})


def main(
    settings: TableSettings,
    summary: str,
    document: str,
    analysis_set: str = "",
    dataset: str = "",
    fragment: str = "",
    csv: str = "",
    scratch: list | None = None,
    correlation: str = "",
    cka: str = "",
) -> None:
    kind = settings.kind
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    required, text_of, rows_of = KINDS[kind]
    table = read_summary(summary, required)
    scratch = [scratch] if isinstance(scratch, str) else list(scratch or [])  # none, or the scratch iEAT summary
    options = {
        "analysis_set": analysis_set,
        "dataset": dataset,
        **(settings.significance.as_dict() if settings.significance else {}),
        "scratch": read_summary(scratch[0], IEAT_COLUMNS + IEAT_PARTS) if scratch else None,
        "correlation": read_summary(correlation, CORRELATION_REQUIRED) if correlation else None,
        "cka": read_summary(cka, CKA_REQUIRED) if cka else None,
    }
    text, rows = _built(kind, text_of, table, options), _built(kind, rows_of, table, options)
    write_text(document, text)
    if fragment:
        write_text(fragment, latex_fragment(text))
    if csv:
        write_csv(csv, rows)
    log.info("%s table from %s -> %s", kind, summary, document)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
