"""Formatting shared by tables, figures, findings and the comparison with the paper.

Model labels, significance marks, p-values and numbers as LaTeX, the summary CSV reader, and the
stage groups (``pretrained`` or ``ft-{dataset}``) that every report groups rows by.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Sequence

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

#: Significance marks: one star per threshold the p-value is below.
SIGNIFICANCE_LEVELS = (0.05, 0.01, 0.001)

#: Columns that hold names, never numbers (read as strings; empty cells become "").
LABEL_COLUMNS = (
    "analysis_set", "model", "stage", "finetune_dataset", "seed", "kind", "key", "class_p", "class_q",
    "test", "X", "Y", "A", "B", "dataset", "metric_name", "class", "optimizer", "scheduler", "method",
    "pvalue_method", "alternative",
)  # fmt: skip

ADJUSTMENTS = {"holm": "pvalue_holm", "bh": "pvalue_bh"}
ADJUSTMENT_NAMES = {"holm": "Holm", "bh": "Benjamini--Hochberg"}

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


def stage_group(stage: str, finetune_dataset: str) -> str:
    """``pretrained``, or ``ft-{dataset}`` for any seed finetuned on ``dataset``."""
    if stage == "pretrained":
        return "pretrained"
    if not finetune_dataset:
        raise ValueError(f"stage {stage!r} has no finetune_dataset")
    return f"ft-{finetune_dataset}"


def ordered_groups(groups: Iterable[str]) -> list[str]:
    """``pretrained`` first, then the finetuned groups in order of first appearance."""
    unique = list(dict.fromkeys(groups))
    return sorted(unique, key=lambda g: g != "pretrained")


def stars(p: float, levels: Sequence[float] = SIGNIFICANCE_LEVELS) -> str:
    """One ``*`` per level that ``p`` is below (``""`` for NaN)."""
    if p is None or math.isnan(p):
        return ""
    return "*" * sum(p < level for level in levels)


def format_p(p: float) -> str:
    """A p-value as LaTeX math: three decimals, or ``a\\times10^{-k}`` below 0.001."""
    if p is None or math.isnan(p):
        return "--"
    if p >= 0.001:
        return f"${p:.3f}$"
    if p == 0:
        return "$0$"
    exponent = math.floor(math.log10(p))
    mantissa = p / 10**exponent
    if round(mantissa, 1) == 1.0:
        return f"$10^{{{exponent}}}$"
    return f"${mantissa:.1f}\\times10^{{{exponent}}}$"


def format_number(x: float, digits: int = 3, mark: str = "") -> str:
    """A signed number as LaTeX math with an optional superscript mark (``--`` for NaN)."""
    if x is None or math.isnan(x):
        return "--"
    sup = f"^{{{mark}}}" if mark else ""
    return f"${x:.{digits}f}{sup}$"
