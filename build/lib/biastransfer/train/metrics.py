"""Multi-label classification metrics: per-class average precision, mAP and micro-F1.

Average precision follows the step-wise definition used by scikit-learn's
``average_precision_score``: AP = sum_n (R_n - R_{n-1}) P_n over distinct score thresholds.
Classes with no positive example have no AP (NaN) and are left out of the mean.
"""

from __future__ import annotations

import numpy as np

METRICS = ("mAP", "micro_f1")


def _as_matrices(y_true, scores) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(y_true)
    s = np.asarray(scores, dtype=np.float64)
    if y.ndim != 2 or s.shape != y.shape:
        raise ValueError(f"y_true and scores must be 2-D arrays of the same shape, got {y.shape} and {s.shape}")
    if not np.isfinite(s).all():
        raise ValueError("scores contain NaN or inf")
    if not np.isin(y, (0, 1)).all():
        raise ValueError("y_true must hold only 0 and 1")
    return y.astype(bool), s


def average_precision(y_true, scores) -> np.ndarray:
    """Average precision of each column (class); NaN where a class has no positives."""
    y, s = _as_matrices(y_true, scores)
    out = np.full(y.shape[1], np.nan)
    for c in range(y.shape[1]):
        positives = y[:, c].sum()
        if positives == 0:
            continue
        order = np.argsort(-s[:, c], kind="mergesort")
        hits, ranked = y[order, c], s[order, c]
        last_of_tie = np.r_[np.flatnonzero(np.diff(ranked)), len(ranked) - 1]
        tp = np.cumsum(hits)[last_of_tie]
        precision = tp / (last_of_tie + 1)
        recall_step = np.diff(np.r_[0, tp]) / positives
        out[c] = float(np.sum(recall_step * precision))
    return out


def mean_average_precision(y_true, scores) -> float:
    """Macro mAP over the classes that have at least one positive."""
    ap = average_precision(y_true, scores)
    if np.isnan(ap).all():
        raise ValueError("no class has a positive example: mAP is undefined")
    return float(np.nanmean(ap))


def micro_f1(y_true, probabilities, threshold: float = 0.5) -> float:
    """Micro-averaged F1 of ``probabilities >= threshold`` against ``y_true`` (0 when both are empty).

    Pooled over every (image, class) cell: 2 TP / (2 TP + FP + FN), as sklearn's ``average='micro'``.
    """
    if not 0 < threshold < 1:
        raise ValueError(f"threshold must be in (0, 1), got {threshold}")
    y, p = _as_matrices(y_true, probabilities)
    pred = p >= threshold
    tp = np.sum(pred & y)
    denom = pred.sum() + y.sum()
    return float(2 * tp / denom) if denom else 0.0


def validation_metric(name: str, y_true, scores, threshold: float = 0.5) -> float:
    """``mAP`` (macro over classes with positives) or ``micro_f1`` (at ``threshold``) by name."""
    if name == "mAP":
        return mean_average_precision(y_true, scores)
    if name == "micro_f1":
        return micro_f1(y_true, scores, threshold)
    raise ValueError(f"metric must be one of {', '.join(METRICS)}, got {name!r}")
