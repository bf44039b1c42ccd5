"""Our numbers beside the paper's: join a run's summaries to ``resources/paper_reference.csv``.

The reference holds every number of the paper's Tables 2-9 with its table and row
(``provenance``). :func:`run_measurements` turns a run's summary tables into rows with the same keys;
:func:`compare_to_paper` joins the two and says, per row, whether ours agrees with the paper:

* p-values (``*_p``): agree when both are on the same side of ``alpha`` (the paper's p-values come
  from other permutation draws and trial counts, so only the decision is comparable);
* everything else: agree when ``|ours - paper| <= tolerance[measure]`` (exact for counts, epochs and
  learning rates).

A reference row is *in scope* when the run produced its measure family for the same model, analysis
set and finetuning dataset; an in-scope row that the run lacks (e.g. a concept pair named differently)
is reported as ``missing``. Rows out of scope (models or datasets the run did not touch) are left out.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from biastransfer.report.formatting import at_floor, format_p, latex_escape, require_columns
from biastransfer.report.latex import standalone_document
from biastransfer.report.tables import finetune_summary, ieat_by_stage

KEYS = ("table", "analysis_set", "finetune_dataset", "model", "measure", "stage", "concept_pair")
JOIN_KEYS = KEYS[1:]
REFERENCE_COLUMNS = (*KEYS, "value", "provenance", "note")
FAMILIES = {
    "bts_intra": "bts",
    "bts_intra_p": "bts",
    "bts_inter": "bts",
    "bts_inter_p": "bts",
    "ieat_d": "ieat",
    "ieat_p": "ieat",
    "mAP": "finetune",
    "mAP_sd": "finetune",
    "micro_f1": "finetune",
    "micro_f1_sd": "finetune",
    "epochs": "finetune",
    "lr": "finetune",
    "n_images": "analysis_set",
}
#: The (X, Y) of the paper's iEATs, the ones compared when the config names none (report.ieat_targets).
PAPER_TARGETS = ("man", "woman")
P_MEASURES = frozenset({"bts_intra_p", "bts_inter_p", "ieat_p"})
#: Largest |ours - paper| still called agreement. Effect sizes and rho from a re-run (new draws of
#: analysis images' embeddings, new finetuning seeds) differ by noise of about this size.
DEFAULT_TOLERANCES = {
    "bts_intra": 0.1,
    "bts_inter": 0.1,
    "ieat_d": 0.1,
    "mAP": 0.02,
    "mAP_sd": 0.02,
    "micro_f1": 0.02,
    "micro_f1_sd": 0.02,
    "epochs": 0.0,
    "lr": 0.0,
    "n_images": 0.0,
}
_EPS = 1e-12


def read_reference(path: str | os.PathLike) -> pd.DataFrame:
    """Read and check the reference CSV: known measures, numeric values, no duplicate keys."""
    ref = pd.read_csv(path, dtype=str, keep_default_na=False)
    require_columns(ref, REFERENCE_COLUMNS, where=str(path))
    unknown = sorted(set(ref["measure"]) - set(FAMILIES))
    if unknown:
        raise ValueError(f"{path}: unknown measure(s) {unknown}; known: {sorted(FAMILIES)}")
    try:
        ref["value"] = ref["value"].astype(float)
    except ValueError as err:
        raise ValueError(f"{path}: non-numeric value: {err}") from None
    dup = ref[ref.duplicated(list(KEYS), keep=False)]
    if not dup.empty:
        raise ValueError(f"{path}: duplicate reference rows: {dup['provenance'].tolist()[:4]}")
    return ref


def run_measurements(
    *,
    bts: pd.DataFrame | None = None,
    ieat: pd.DataFrame | None = None,
    finetune_metrics: pd.DataFrame | None = None,
    analysis_sets: pd.DataFrame | None = None,
    targets: tuple[str, str] = PAPER_TARGETS,
) -> pd.DataFrame:
    """A run's numbers in the reference's keys (``JOIN_KEYS``) with ``value``, ``n_seeds`` and ``floor``
    (the smallest p its method can give, for iEAT p-values; NaN elsewhere).

    BTS: the ``pooled`` rows. iEAT: tests with ``(X, Y) == targets``; effect size = mean over seeds,
    p = largest over seeds; ``concept_pair`` is ``A|B``. Finetuning: metric mean, its sample SD
    (two or more seeds), epochs and learning rate. Analysis sets: images per class.
    """
    parts = []
    if bts is not None:
        require_columns(
            bts,
            ("analysis_set", "model", "finetune_dataset", "seed", "kind", "statistic", "pvalue_t"),
            where="BTS summary",
        )
        pooled = bts[bts["seed"] == "pooled"]
        # the paper's BTS p-values are scipy's t approximation: compare like with like (pvalue_t)
        for value_col, suffix in (("statistic", ""), ("pvalue_t", "_p")):
            parts.append(
                pd.DataFrame(
                    {
                        "analysis_set": pooled["analysis_set"],
                        "finetune_dataset": pooled["finetune_dataset"],
                        "model": pooled["model"],
                        "measure": "bts_" + pooled["kind"] + suffix,
                        "stage": "",
                        "concept_pair": "",
                        "value": pooled[value_col],
                        "n_seeds": np.nan,
                        "floor": np.nan,  # the t approximation has no floor
                    }
                )
            )
    if ieat is not None:
        agg = ieat_by_stage(ieat)
        agg = agg[(agg["X"] == targets[0]) & (agg["Y"] == targets[1])]
        pretrained = agg["group"] == "pretrained"
        for value_col, measure in (("effect_size", "ieat_d"), ("pvalue", "ieat_p")):
            parts.append(
                pd.DataFrame(
                    {
                        "analysis_set": agg["analysis_set"],
                        "finetune_dataset": np.where(pretrained, "", agg["group"].str.removeprefix("ft-")),
                        "model": agg["model"],
                        "measure": measure,
                        "stage": np.where(pretrained, "pretrained", "finetuned"),
                        "concept_pair": agg["A"] + "|" + agg["B"],
                        "value": agg[value_col],
                        "n_seeds": agg["n_seeds"],
                        "floor": agg["pvalue_floor"] if measure == "ieat_p" else np.nan,
                    }
                )
            )
    if finetune_metrics is not None:
        summary = finetune_summary(finetune_metrics)
        rows = []
        for r in summary.itertuples(index=False):
            base = dict(
                analysis_set="", finetune_dataset=r.dataset, model=r.model, stage="", concept_pair="", n_seeds=r.n_seeds
            )
            rows.append({**base, "measure": r.metric_name, "value": r.mean})
            if not math.isnan(r.sd):
                rows.append({**base, "measure": f"{r.metric_name}_sd", "value": r.sd})
            rows.append({**base, "measure": "epochs", "value": float(r.epochs)})
            rows.append({**base, "measure": "lr", "value": float(r.lr)})
        parts.append(pd.DataFrame(rows))
    if analysis_sets is not None:
        require_columns(analysis_sets, ("analysis_set", "class", "n"), where="analysis-set statistics")
        parts.append(
            pd.DataFrame(
                {
                    "analysis_set": analysis_sets["analysis_set"],
                    "finetune_dataset": "",
                    "model": "",
                    "measure": "n_images",
                    "stage": "",
                    "concept_pair": analysis_sets["class"],
                    "value": analysis_sets["n"].astype(float),
                    "n_seeds": np.nan,
                }
            )
        )
    if not parts:
        raise ValueError("run_measurements: give at least one of bts, ieat, finetune_metrics, analysis_sets")
    ours = pd.concat(parts, ignore_index=True)
    ours["floor"] = ours["floor"] if "floor" in ours else np.nan
    dup = ours[ours.duplicated(list(JOIN_KEYS), keep=False)]
    if not dup.empty:
        raise ValueError(f"run measurements: more than one row for {dup.iloc[0][list(JOIN_KEYS)].to_dict()}")
    return ours.reset_index(drop=True)


@dataclass(frozen=True)
class PaperComparison:
    """Rows of the reference that the run produced, ours beside the paper's, with a verdict each."""

    rows: pd.DataFrame
    alpha: float

    @property
    def n_agree(self) -> int:
        return int((self.rows["status"] == "agrees").sum())

    @property
    def n_flagged(self) -> int:
        return int(self.rows["flagged"].sum())


def compare_to_paper(
    ours: pd.DataFrame,
    reference: pd.DataFrame,
    *,
    tolerances: dict[str, float] | None = None,
    alpha: float = 0.05,
) -> PaperComparison:
    """Join ``ours`` (from :func:`run_measurements`) to the in-scope reference rows and judge each.

    Columns of ``rows``: the keys, ``provenance``, ``note``, ``ours``, ``ours_floor`` (the floor of our
    p-value: ours is a bound when it equals it), ``paper``, ``difference``
    (ours - paper), ``tolerance`` (NaN for p-values), ``n_seeds``, ``status`` (``agrees``,
    ``differs``, ``significance differs``, ``missing``) and ``flagged`` (not ``agrees``).
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), not {alpha}")
    tol = {**DEFAULT_TOLERANCES, **(tolerances or {})}
    unknown = sorted(set(tol) - set(FAMILIES))
    if unknown:
        raise ValueError(f"tolerances: unknown measure(s) {unknown}")
    require_columns(ours, (*JOIN_KEYS, "value", "n_seeds"), where="run measurements")
    scope_cols = ["family", "analysis_set", "finetune_dataset", "model"]
    ours = ours.assign(family=ours["measure"].map(FAMILIES))
    if ours["family"].isna().any():
        raise ValueError(
            f"run measurements: unknown measure(s) {sorted(set(ours.loc[ours['family'].isna(), 'measure']))}"
        )
    reference = reference.assign(family=reference["measure"].map(FAMILIES))
    # A pretrained iEAT number does not depend on the finetuning dataset: scope it by the analysis set.
    scope = set(map(tuple, ours[scope_cols].to_numpy()))
    in_scope = reference[[tuple(r) in scope for r in reference[scope_cols].to_numpy()]]
    ours = ours if "floor" in ours else ours.assign(floor=np.nan)
    merged = in_scope.merge(
        ours[[*JOIN_KEYS, "value", "n_seeds", "floor"]], on=list(JOIN_KEYS), how="left", suffixes=("_paper", "_ours")
    )
    merged = merged.rename(columns={"value_paper": "paper", "value_ours": "ours", "floor": "ours_floor"})
    merged["difference"] = merged["ours"] - merged["paper"]
    merged["tolerance"] = [np.nan if m in P_MEASURES else tol[m] for m in merged["measure"]]
    merged["status"] = [
        _verdict(r.measure, r.ours, r.paper, r.tolerance, alpha) for r in merged.itertuples(index=False)
    ]
    merged["flagged"] = merged["status"] != "agrees"
    columns = [
        *KEYS,
        "provenance",
        "note",
        "ours",
        "ours_floor",
        "paper",
        "difference",
        "tolerance",
        "n_seeds",
        "status",
        "flagged",
    ]
    return PaperComparison(rows=merged[columns].reset_index(drop=True), alpha=alpha)


def _verdict(measure: str, ours: float, paper: float, tolerance: float, alpha: float) -> str:
    if math.isnan(ours):
        return "missing"
    if measure in P_MEASURES:
        return "agrees" if (ours < alpha) == (paper < alpha) else "significance differs"
    return "agrees" if abs(ours - paper) <= tolerance + _EPS else "differs"


def _fmt(x: float) -> str:
    if math.isnan(x):
        return "--"
    if x != 0 and abs(x) < 0.001:
        return f"${x:.1e}$".replace("e-0", "e-")
    return f"${x:.3f}$" if x != int(x) or abs(x) < 1 else f"${int(x)}$"


def comparison_document(comparison: PaperComparison) -> str:
    """The comparison as a standalone LaTeX document (a ``longtable``; flagged rows in bold)."""
    head = "Paper row & Ours & Paper & Ours $-$ paper & Verdict \\\\\n"
    body = "\\begin{longtable}{lrrrl}\n"
    body += (
        f"\\caption*{{Our values beside the paper's for every row this run produced. p-values agree when both are on the "
        f"same side of $\\alpha={comparison.alpha:g}$ (ours written $\\leq$ is at its method's floor); other values "
        f"when within the tolerance of their measure. "
        f"{comparison.n_agree} of {len(comparison.rows)} rows agree.}}\\\\\n"
    )
    body += (
        "\\toprule\n"
        + head
        + "\\midrule\n\\endfirsthead\n\\toprule\n"
        + head
        + "\\midrule\n\\endhead\n\\bottomrule\n\\endfoot\n"
    )
    if comparison.rows.empty:
        body += "\\multicolumn{5}{l}{No row of this run corresponds to a number published in the paper.} \\\\\n"
    for r in comparison.rows.itertuples(index=False):
        ours = (
            format_p(r.ours, r.ours_floor) if at_floor(r.ours, r.ours_floor) else _fmt(r.ours)
        )  # a bound at the floor
        cells = [latex_escape(r.provenance), ours, _fmt(r.paper), _fmt(r.difference), latex_escape(r.status)]
        if r.flagged:
            cells = [f"\\textbf{{{c}}}" if not c.startswith("$") else c for c in cells]
        body += " & ".join(cells) + " \\\\\n"
    body += "\\end{longtable}\n"
    return standalone_document(body, "", landscape=True)
