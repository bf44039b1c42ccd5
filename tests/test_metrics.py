"""Validation metrics: hand-computed mAP and micro-F1, and agreement with brute-force definitions."""

from __future__ import annotations

import numpy as np
import pytest

from biastransfer.train.metrics import average_precision, mean_average_precision, micro_f1, validation_metric

# 4 images x 4 classes. Hand computation (ranking by score, precision at each positive):
#   class 0: ranks pos, neg, pos, neg          -> AP = (1/1 + 2/3) / 2 = 5/6
#   class 1: ranks neg, neg, pos, neg          -> AP = 1/3
#   class 2: no positive                       -> AP undefined, left out of the mean
#   class 3: 0.7 pos, then a tie at 0.5 of one pos and one neg
#            -> thresholds 0.7 (P=1, R=1/2) and 0.5 (P=2/3, R=1): AP = 1/2 * 1 + 1/2 * 2/3 = 5/6
# mAP = (5/6 + 1/3 + 5/6) / 3 = 2/3.
Y = np.array([[1, 0, 0, 1], [0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1]])
S = np.array([[0.9, 0.2, 0.1, 0.5], [0.8, 0.4, 0.6, 0.5], [0.3, 0.6, 0.2, 0.2], [0.1, 0.5, 0.3, 0.7]])


def test_hand_computed_average_precision_and_map():
    ap = average_precision(Y, S)
    np.testing.assert_allclose(ap[[0, 1, 3]], [5 / 6, 1 / 3, 5 / 6])
    assert np.isnan(ap[2])
    assert mean_average_precision(Y, S) == pytest.approx(2 / 3)
    assert validation_metric("mAP", Y, S) == pytest.approx(2 / 3)


def test_hand_computed_micro_f1():
    # threshold 0.5 (>=): per class TP/FP/FN = (1,1,1), (0,2,1), (0,1,0), (2,1,0) -> TP 3, FP 5, FN 2
    assert micro_f1(Y, S) == pytest.approx(6 / 13)
    # threshold 0.55: (1,1,1), (0,1,1), (0,1,0), (1,0,1) -> TP 2, FP 3, FN 3
    assert micro_f1(Y, S, threshold=0.55) == pytest.approx(4 / 10)
    assert validation_metric("micro_f1", Y, S, 0.55) == pytest.approx(0.4)
    assert micro_f1(np.zeros((2, 2)), np.full((2, 2), 0.1)) == 0.0  # nothing true, nothing predicted


def brute_ap(y, s):
    """AP = sum over distinct thresholds t (descending) of (R(t) - R(previous t)) * P(t)."""
    ap, prev_recall = 0.0, 0.0
    for t in sorted(set(s), reverse=True):
        chosen = [i for i in range(len(s)) if s[i] >= t]
        tp = sum(y[i] for i in chosen)
        recall = tp / sum(y)
        ap += (recall - prev_recall) * tp / len(chosen)
        prev_recall = recall
    return ap


def brute_micro_f1(y, s, threshold):
    tp = fp = fn = 0
    for i in range(y.shape[0]):
        for j in range(y.shape[1]):
            pred = s[i, j] >= threshold
            tp += pred and y[i, j] == 1
            fp += pred and y[i, j] == 0
            fn += (not pred) and y[i, j] == 1
    return 2 * tp / (2 * tp + fp + fn)


@pytest.mark.parametrize("seed", range(5))
def test_against_brute_force_with_ties(seed):
    rng = np.random.default_rng(seed)
    y = (rng.random((40, 6)) < 0.3).astype(int)
    y[:, 0] = 0  # one class without positives
    y[0, 1:] = 1  # every other class has one
    s = np.round(rng.random((40, 6)), 1)  # coarse scores: many ties
    ap = average_precision(y, s)
    for c in range(1, 6):
        assert ap[c] == pytest.approx(brute_ap(y[:, c], s[:, c]))
    assert mean_average_precision(y, s) == pytest.approx(np.mean([brute_ap(y[:, c], s[:, c]) for c in range(1, 6)]))
    for threshold in (0.3, 0.5, 0.8):
        assert micro_f1(y, s, threshold) == pytest.approx(brute_micro_f1(y, s, threshold))


def test_without_ties_ap_is_mean_precision_at_each_positive():
    rng = np.random.default_rng(7)
    y, s = (rng.random((30, 3)) < 0.4).astype(int), rng.random((30, 3))
    for c in range(3):
        order = np.argsort(-s[:, c])
        hits = y[order, c]
        precisions = [hits[: k + 1].sum() / (k + 1) for k in range(len(hits)) if hits[k]]
        assert average_precision(y, s)[c] == pytest.approx(np.mean(precisions))


def test_perfect_and_reversed_rankings():
    y = np.array([[1], [1], [0], [0]])
    assert mean_average_precision(y, np.array([[0.9], [0.8], [0.2], [0.1]])) == 1.0
    assert mean_average_precision(y, np.array([[0.1], [0.2], [0.8], [0.9]])) == pytest.approx((1 / 3 + 2 / 4) / 2)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: average_precision(Y, S[:, :3]), "same shape"),
        (lambda: average_precision(Y, np.where(S > 0.8, np.nan, S)), "NaN or inf"),
        (lambda: micro_f1(Y * 2, S), "only 0 and 1"),
        (lambda: mean_average_precision(np.zeros((3, 2)), np.zeros((3, 2))), "no class has a positive"),
        (lambda: micro_f1(Y, S, threshold=1.0), r"threshold must be in \(0, 1\)"),
        (lambda: validation_metric("accuracy", Y, S), "metric must be one of mAP, micro_f1"),
    ],
)
def test_bad_input_is_a_clear_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()
