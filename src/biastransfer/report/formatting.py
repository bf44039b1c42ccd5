"""Formatting shared by tables, figures, findings and the comparison with the paper.

Model labels, the run's significance rule (:class:`Significance`: every verdict, star and legend), p-values
and numbers as LaTeX, the summary CSV reader, and the stage groups (``pretrained`` or ``ft-{dataset}``)
that every report groups rows by.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

#: How the paper names the six models the workflow calls by these keys.
MODEL_LABELS = {
    "resnet18": "ResNet18",
    "resnet50": "ResNet50",
    "bit_m_r50x1": "BiT-M-R50x1",
    "clip_vit_b32": "CLIP-ViT-B/32",
    "moco_r50_v1": "MoCo ResNet50",
    "simclr_r50_v1": "SimCLR ResNet50",
}

#: Columns that hold names, never numbers (read as strings; empty cells become "").
LABEL_COLUMNS = (
    "analysis_set",
    "model",
    "stage",
    "finetune_dataset",
    "seed",
    "kind",
    "key",
    "class_p",
    "class_q",
    "test",
    "X",
    "Y",
    "A",
    "B",
    "dataset",
    "metric_name",
    "class",
    "optimizer",
    "scheduler",
    "method",
    "pvalue_method",
    "alternative",
)

# the columns of the BTS summary that its figures and tables read
BTS_COLUMNS = ("analysis_set", "model", "finetune_dataset", "seed", "kind", "statistic", "pvalue")
ADJUSTMENTS = {"holm": "pvalue_holm", "bh": "pvalue_bh"}
ADJUSTMENT_NAMES = {"holm": "Holm", "bh": "Benjamini--Hochberg"}
#: The adjustments in words for HTML and the findings (report.headline's, which the landing page words them by).
ADJUSTMENT_WORDS = {"holm": "Holm", "bh": "Benjamini-Hochberg"}

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_LATEX_RE = re.compile("|".join(re.escape(c) for c in _LATEX_SPECIAL))


def latex_escape(text: object) -> str:
    """``text`` as LaTeX source that prints it literally (underscores, ampersands, ...)."""
    return _LATEX_RE.sub(lambda m: _LATEX_SPECIAL[m.group()], str(text))


def model_label(model: str) -> str:
    """The paper's name of a workflow model key, or the key itself for other models."""
    return MODEL_LABELS.get(model, model)


def read_summary(path: str | os.PathLike, required: Iterable[str]) -> pd.DataFrame:
    """Read a summary CSV; name columns are strings ("" when empty). ValueError names missing columns."""
    frame = pd.read_csv(path, dtype={c: str for c in LABEL_COLUMNS})
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)}")
    for col in frame.columns.intersection(LABEL_COLUMNS):
        frame[col] = frame[col].fillna("").astype(str)
    return frame


def require_columns(frame: pd.DataFrame, required: Iterable[str], *, where: str) -> None:
    """ValueError naming ``where`` and the missing columns, if any."""
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ValueError(f"{where}: missing column(s) {', '.join(missing)}")


def rows_where(frame: pd.DataFrame, required: Iterable[str], column: str, value: str, *, where: str) -> pd.DataFrame:
    """The rows of ``frame`` whose ``column`` is ``value``; ValueError naming ``where`` when ``frame`` lacks a
    ``required`` column or has no such row."""
    require_columns(frame, required, where=where)
    rows = frame[frame[column].astype(str) == value]
    if rows.empty:
        raise ValueError(f"{where}: no rows for {column} {value!r}")
    return rows


def stage_group(stage: str, finetune_dataset: str) -> str:
    """``pretrained``, ``ft-{dataset}`` for any seed finetuned on ``dataset``, or ``scratch-{dataset}`` for
    any seed of the reference network trained on ``dataset`` alone."""
    if stage == "pretrained":
        return "pretrained"
    if not finetune_dataset:
        raise ValueError(f"stage {stage!r} has no finetune_dataset")
    return f"{'scratch' if stage.startswith('scratch-') else 'ft'}-{finetune_dataset}"


def ordered_groups(groups: Iterable[str]) -> list[str]:
    """``pretrained`` first, then the finetuned groups, then the scratch references, each in order of first
    appearance."""
    unique = list(dict.fromkeys(groups))
    return sorted(unique, key=lambda g: (g != "pretrained", g.startswith("scratch-")))


@dataclass(frozen=True)
class Significance:
    """The run's one significance rule (``analysis.ieat.alpha``, ``report.p_adjust``): a result is
    significant when its p, ``adjust``-adjusted within its table, is below ``alpha``. Every verdict, star
    and legend of the report reads it, so a star always means "significant" and no star "not significant"."""

    alpha: float
    adjust: str = "holm"

    def __post_init__(self):
        if not (isinstance(self.alpha, (int, float)) and 0 < self.alpha < 1):
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha}")
        if self.adjust not in ADJUSTMENTS:
            raise ValueError(f"adjust must be one of {sorted(ADJUSTMENTS)}, not {self.adjust!r}")

    @property
    def column(self) -> str:
        """The summary column of the adjusted p-values."""
        return ADJUSTMENTS[self.adjust]

    @property
    def levels(self) -> tuple[float, float, float]:
        """The star thresholds: alpha (one star: significant), alpha / 10 and alpha / 100."""
        return self.alpha, self.alpha / 10, self.alpha / 100

    def significant(self, p_adjusted: float) -> bool:
        """Whether an adjusted p is below alpha (False for a missing p)."""
        return p_adjusted is not None and not math.isnan(p_adjusted) and p_adjusted < self.alpha

    def stars(self, p_adjusted: float) -> str:
        """One ``*`` per level of :attr:`levels` that the adjusted p is below (``""``: not significant)."""
        return "*" * sum(self.significant(p_adjusted) and p_adjusted < level for level in self.levels)

    def legend(self, *, latex: bool = False) -> str:
        """The rule in words, for a caption (``latex``) or a figure's title."""
        a, b, c = (f"{level:g}" for level in self.levels)
        if latex:
            return (
                f"*/**/***: {ADJUSTMENT_NAMES[self.adjust]}-adjusted $p<{a}$/${b}$/${c}$; no mark: not "
                f"significant at $\\alpha={a}$"
            )
        words = ADJUSTMENT_NAMES[self.adjust].replace("--", "-")
        return f"*/**/***: {words}-adjusted p < {a}/{b}/{c}; no mark: not significant at alpha = {a}"


#: The words of a prediction-level verdict (the primary contrast of a declared pair), and one not estimable.
PREDICTION_VERDICTS = ("amplifies", "reduces", "neither", "not estimable")


def prediction_verdict(estimate: float, p_adjusted: float, rule: Significance) -> str:
    """A primary prediction measure's verdict: ``amplifies`` (contrast > 0) or ``reduces`` (< 0) when its p,
    adjusted within its network family, is below alpha, ``neither`` when it is not, ``not estimable`` without an
    estimate or a p."""
    if estimate is None or p_adjusted is None or math.isnan(estimate) or math.isnan(p_adjusted):
        return PREDICTION_VERDICTS[3]
    if not rule.significant(p_adjusted) or estimate == 0:
        return PREDICTION_VERDICTS[2]
    return PREDICTION_VERDICTS[0] if estimate > 0 else PREDICTION_VERDICTS[1]


def at_floor(p: float, floor: float | None) -> bool:
    """Whether ``p`` is at the smallest value its method can give (then it is an upper bound)."""
    return bool(floor) and not math.isnan(floor) and p <= floor * (1 + 1e-9)


def _latex_power(x: float) -> str:
    exponent = math.floor(math.log10(x))
    mantissa = x / 10**exponent
    if round(mantissa, 1) == 1.0:
        return f"10^{{{exponent}}}"
    if round(mantissa, 1) == 10.0:
        return f"10^{{{exponent + 1}}}"
    return f"{mantissa:.1f}\\times10^{{{exponent}}}"


def format_p(p: float, floor: float | None = None) -> str:
    """A p-value as LaTeX math: three decimals, or ``a\\times10^{-k}`` below 0.001.

    A p at its method's ``floor`` (Monte Carlo: 1 / permutations; enumeration: the fewest orderings
    that can be as extreme) prints as a bound, ``\\leq`` the floor; a p of 0 (only the t approximation
    gives one) as ``<10^{-16}``, never as 0.
    """
    if p is None or math.isnan(p):
        return "--"
    if at_floor(p, floor):
        return f"$\\leq{floor:.3f}$" if floor >= 0.001 else f"$\\leq{_latex_power(floor)}$"
    if p >= 0.001:
        return f"${p:.3f}$"
    if p == 0:
        return "$<10^{-16}$"
    return f"${_latex_power(p)}$"


def adjusted_floor(p: float, floor: float | None, adjusted: float) -> float | None:
    """The bound to print an adjusted p-value with: the adjusted p itself when the raw ``p`` is at its
    ``floor`` (an adjustment only grows with the raw p-values, so it is an upper bound too), else None."""
    return adjusted if at_floor(p, floor) else None


#: The smallest p the report prints as a number: below it a p prints as ``< 0.001`` (the exact value stays in
#: the CSV and results.json): a resampling p that small reads its method's tail, not a quantity to compare.
P_DISPLAY_FLOOR = 0.001


def p_cell(p: float, floor: float | None = None) -> str:
    """A p-value for an HTML cell or a sentence: ``0.031``; ``< 0.001`` below :data:`P_DISPLAY_FLOOR`; ``≤ f``
    at its method's ``floor`` f where that floor is coarser; ``–`` when missing (the words of :func:`p_text`
    without the ``p``)."""
    if p is None or math.isnan(p):
        return "–"
    if at_floor(p, floor) and floor >= P_DISPLAY_FLOOR:
        return f"≤ {floor:.2g}"
    if p < P_DISPLAY_FLOOR:
        return f"< {P_DISPLAY_FLOOR:g}"
    return f"{p:.2g}"


def p_text(p: float, floor: float | None = None) -> str:
    """A p-value in words for findings and figure legends: ``p = 0.031``, ``p < 0.001``, ``p <= 0.002`` at a
    coarser method floor (:func:`p_cell`); never ``p = 0``."""
    if p is None or math.isnan(p):
        return "p not available"
    cell = p_cell(p, floor)
    if cell.startswith("≤"):
        return "p <=" + cell[1:]
    return f"p {cell}" if cell.startswith("<") else f"p = {cell}"


#: |d| from which an iEAT effect in the direction opposite to the tested one is called out in words.
OPPOSITE_EFFECT = 0.5


def opposite_direction(effect_size: float, alternative: str) -> bool:
    """Whether ``effect_size`` is a large effect (|d| >= 0.5) against a one-sided ``alternative``."""
    if effect_size is None or math.isnan(effect_size):
        return False
    if alternative == "greater":
        return effect_size <= -OPPOSITE_EFFECT
    if alternative == "less":
        return effect_size >= OPPOSITE_EFFECT
    return False


def format_interval(low: float, high: float, digits: int = 2) -> str:
    """``[low, high]`` as LaTeX math (``--`` when either end is NaN)."""
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return "--"
    return f"$[{low:.{digits}f}, {high:.{digits}f}]$"


def estimate_cell(value: float, low: float = math.nan, high: float = math.nan, digits: int = 3) -> str:
    """An estimate and its interval in one LaTeX cell: ``--`` for a NaN estimate, the estimate alone when the
    interval is NaN."""
    cell, shown = format_number(float(value), digits), format_interval(float(low), float(high), digits)
    return cell if "--" in (cell, shown) else f"{cell} {shown}"


def format_spread(low: float, high: float, digits: int = 2) -> str:
    """The range over seeds, small, to follow an estimate in a LaTeX cell (``""`` when either end is NaN)."""
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return ""
    return f" {{\\scriptsize ${low:.{digits}f}$ to ${high:.{digits}f}$}}"


def format_number(x: float, digits: int = 3, mark: str = "") -> str:
    """A signed number as LaTeX math with an optional superscript mark (``--`` for NaN)."""
    if x is None or math.isnan(x):
        return "--"
    sup = f"^{{{mark}}}" if mark else ""
    return f"${x:.{digits}f}{sup}$"
