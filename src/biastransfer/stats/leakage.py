"""Leakage (Wang et al., "Balanced Datasets Are Not Enough", ICCV 2019): how well an attacker recovers the
protected attribute from what a model outputs, and how much more than from labels of the same quality.

The attacker is scikit-learn's logistic regression on standardised features (Wang et al. use a small MLP),
cross-fitted: K stratified, seeded folds, so every image gets a prediction from an attacker that never saw it.
The features are the ground-truth labels (*dataset leakage*), a model's predictions or scores (*model
leakage*) or its embedding (*embedding leakage*); a wide embedding can first be projected on its leading
``components`` principal components, fitted inside each fold (the attacker then has the same capacity for
networks of any width, and fewer weights than training images). Leakage is the held-out **balanced
accuracy** (the mean over attributes of the share of that attribute's images recovered): Wang et al. report
accuracy on attribute-balanced data, where the two agree, and on unbalanced data balanced accuracy keeps
chance at ``1/|A|``. Plain accuracy is reported too.

The interval is a percentile bootstrap of the held-out correctness vector over images (one matrix product for
all replicates, as in :mod:`~biastransfer.stats.amplification`): it carries the sampling of the evaluation
images, not the refitting of the attacker. With an attribute group below ``min_resampled_size(level)``
images the interval is NaN.

Leakage amplification (:func:`leakage_amplification`) is ``Delta = model leakage - dataset leakage`` at matched
performance: the dataset's labels are perturbed (:func:`matched_labels`) to have, class by class, the model's
own confusion counts against the ground truth, so their per-class F1 (and mean F1) equals the model's, by
flipping randomly chosen, attribute-blind true positives and negatives. Its interval resamples the two
held-out correctness vectors jointly (the same images for both).

This module needs scikit-learn (envs/stats.yaml carries it for rule amplification), so ``biastransfer.stats``
does not re-export it: the other statistics jobs never import it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from biastransfer.stats._validation import IntervalResult, check_positive_int, check_seed
from biastransfer.stats.amplification import bootstrap_counts, check_attributes, check_binary, resample_indices
from biastransfer.stats.bootstrap import BOOTSTRAP, check_level, percentile_interval
from biastransfer.stats.floors import check_replicates, too_few_to_resample

FOLDS = 5
_BLOCK = 512


@dataclass(frozen=True)
class LeakageResult(IntervalResult):
    """Cross-fitted attacker's held-out balanced accuracy (``estimate``) with a percentile interval over images;
    ``accuracy`` is the plain held-out accuracy and ``chance`` is ``1/|A|``."""

    accuracy: float
    chance: float
    folds: int
    n_images: int
    correct: np.ndarray = field(repr=False)
    replicate_estimates: np.ndarray = field(repr=False)


@dataclass(frozen=True)
class LeakageAmplificationResult(IntervalResult):
    """``estimate = model.estimate - dataset.estimate`` (leakage amplification at matched F1) with a paired
    percentile interval; ``model_f1`` and ``dataset_f1`` are the mean per-class F1 against the ground truth of
    the model's predictions and of the perturbed labels (equal by construction)."""

    model: LeakageResult
    dataset: LeakageResult
    model_f1: float
    dataset_f1: float
    n_images: int


def _attribute_labels(attributes) -> tuple[np.ndarray, np.ndarray]:
    """``(one-hot n x |A|, labels n)`` from a one-hot matrix or a 1-D vector of labels."""
    if np.ndim(attributes) == 1:
        values, labels = np.unique(np.asarray(attributes), return_inverse=True)
        if len(values) < 2:
            raise ValueError(f"attributes needs at least 2 distinct values, got {len(values)}")
        return np.eye(len(values))[labels], labels
    A = check_attributes(attributes)
    return A, A.argmax(axis=1)


def _features(value, name: str, n: int) -> np.ndarray:
    X = np.asarray(value, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2 or X.shape[0] != n:
        raise ValueError(f"{name} must be images x features with {n} images, got shape {X.shape}")
    if not np.isfinite(X).all():
        raise ValueError(f"{name} contains NaN or inf")
    return X


def crossfit_predictions(
    features, labels: np.ndarray, *, folds: int = FOLDS, seed: int = 0, components: int | None = None
) -> np.ndarray:
    """Held-out attacker predictions of ``labels``: each fold predicted by a logistic regression (on
    standardised ``features``) fitted on the other folds (stratified, shuffled with ``seed``). With
    ``components`` below the number of features, the standardised features are first projected on that many
    principal components (at most one per training image), fitted on the training folds only."""
    out = np.empty(len(labels), dtype=labels.dtype)
    splits = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed).split(features, labels)
    for train, test in splits:
        steps = [StandardScaler()]
        if components is not None and components < features.shape[1]:
            steps.append(PCA(n_components=min(components, len(train)), random_state=seed))
        attacker = make_pipeline(*steps, LogisticRegression(max_iter=1000))
        out[test] = attacker.fit(features[train], labels[train]).predict(features[test])
    return out


def _balanced(correct: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Balanced accuracies from R x G (weighted) correct counts and group sizes (NaN if a group is empty)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return (correct / sizes).mean(axis=1)


def _bootstrap(A: np.ndarray, corrects: list[np.ndarray], replicates: int, level: float, seed: int) -> np.ndarray:
    """``len(corrects) x replicates`` balanced accuracies, all vectors resampled with the same images."""
    n, G = A.shape
    X = np.hstack([A * c[:, None] for c in corrects] + [A])
    out = np.full((len(corrects), replicates), np.nan)
    if too_few_to_resample(A.sum(axis=0).astype(int), level):
        return out
    indices = resample_indices(n, replicates, seed)
    for start in range(0, replicates, _BLOCK):
        sums = bootstrap_counts(indices[start : start + _BLOCK], n) @ X
        for i in range(len(corrects)):
            out[i, start : start + len(sums)] = _balanced(sums[:, i * G : (i + 1) * G], sums[:, -G:])
    return out


def _leakage_result(A, correct, reps, level, replicates, seed, folds) -> LeakageResult:
    G = A.shape[1]
    estimate = float(_balanced((A * correct[:, None]).sum(axis=0, keepdims=True), A.sum(axis=0, keepdims=True))[0])
    low, high = percentile_interval(reps, level)
    return LeakageResult(
        estimate, low, high, level, replicates, seed, float(correct.mean()), 1 / G, folds, len(correct), correct, reps
    )


def _check(attributes, folds, replicates, level, seed):
    level, seed = check_level(level), check_seed(seed)
    replicates = check_replicates(replicates, level)
    folds = check_positive_int(folds, "folds")
    A, labels = _attribute_labels(attributes)
    if folds < 2:
        raise ValueError(f"folds must be at least 2 for cross-fitting, got {folds}")
    smallest = int(A.sum(axis=0).min())
    if smallest < folds:
        raise ValueError(f"an attribute has {smallest} image(s), fewer than folds={folds}")
    return A, labels, folds, replicates, level, seed


def leakage(
    features,
    attributes,
    *,
    folds: int = FOLDS,
    replicates: int = BOOTSTRAP,
    level: float = 0.95,
    seed: int | None = 0,
    components: int | None = None,
) -> LeakageResult:
    """Leakage of ``attributes`` (one-hot n x |A|, or n labels) from ``features`` (n x d: labels, scores or an
    embedding): the cross-fitted attacker's held-out balanced accuracy with a bootstrap interval over images
    (``components``: see :func:`crossfit_predictions`)."""
    A, labels, folds, replicates, level, seed = _check(attributes, folds, replicates, level, seed)
    if components is not None:
        components = check_positive_int(components, "components")
    X = _features(features, "features", len(labels))
    correct = (crossfit_predictions(X, labels, folds=folds, seed=seed, components=components) == labels).astype(
        np.float64
    )
    reps = _bootstrap(A, [correct], replicates, level, seed)[0]
    return _leakage_result(A, correct, reps, level, replicates, seed, folds)


def mean_f1(truth: np.ndarray, predictions: np.ndarray) -> float:
    """Mean over classes of F1 = 2 TP / (2 TP + FP + FN) against ``truth`` (classes with 0/0 left out)."""
    tp = (truth * predictions).sum(axis=0)
    wrong = (truth != predictions).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = 2 * tp / (2 * tp + wrong)
    return float(np.nanmean(f1)) if np.isfinite(f1).any() else math.nan


def matched_labels(truth, predictions, seed: int | None = 0) -> np.ndarray:
    """Ground-truth labels perturbed to the model's per-class confusion counts: in each class, as many randomly
    chosen (seeded, attribute-blind) true positives turned negative as the model's false negatives, and true
    negatives turned positive as its false positives; the result's per-class F1 equals the model's."""
    T, P = check_binary(truth, "truth"), check_binary(predictions, "predictions")
    if P.shape != T.shape:
        raise ValueError(f"predictions has shape {P.shape} but truth has {T.shape}")
    rng = np.random.default_rng(check_seed(seed))
    keys = rng.random(T.shape)
    flip = np.zeros(T.shape, dtype=bool)
    for value, count in ((1, (T * (1 - P)).sum(axis=0)), (0, ((1 - T) * P).sum(axis=0))):
        ranked = np.where(T == value, keys, np.inf)  # rank the cells of this truth value by their random key
        ranks = np.argsort(np.argsort(ranked, axis=0, kind="stable"), axis=0, kind="stable")
        flip |= (T == value) & (ranks < count)
    return np.where(flip, 1 - T, T)


def leakage_amplification(
    attributes,
    truth,
    predictions,
    *,
    model_features=None,
    folds: int = FOLDS,
    replicates: int = BOOTSTRAP,
    level: float = 0.95,
    seed: int | None = 0,
) -> LeakageAmplificationResult:
    """Model leakage minus dataset leakage at matched F1 (Wang et al. 2019), with a paired interval.

    ``predictions`` (binary, n x |T|) are the model's labels; the attacker of model leakage reads
    ``model_features`` (default: ``predictions``, so both attackers see binary labels; pass the scores to
    let it see them) and the attacker of dataset leakage the :func:`matched_labels` of ``truth``.
    """
    A, labels, folds, replicates, level, seed = _check(attributes, folds, replicates, level, seed)
    T, P = check_binary(truth, "truth"), check_binary(predictions, "predictions")
    if T.shape[0] != len(labels):
        raise ValueError(f"truth has {T.shape[0]} images but attributes has {len(labels)}")
    perturbed = matched_labels(T, P, seed)
    seen = _features(P if model_features is None else model_features, "model_features", len(labels))
    corrects = [
        (crossfit_predictions(X, labels, folds=folds, seed=seed) == labels).astype(np.float64)
        for X in (seen, perturbed)
    ]
    reps = _bootstrap(A, corrects, replicates, level, seed)
    model, dataset = (_leakage_result(A, c, r, level, replicates, seed, folds) for c, r in zip(corrects, reps))
    low, high = percentile_interval(reps[0] - reps[1], level)
    return LeakageAmplificationResult(
        model.estimate - dataset.estimate,
        low,
        high,
        level,
        replicates,
        seed,
        model,
        dataset,
        mean_f1(T, P),
        mean_f1(T, perturbed),
        len(labels),
    )
