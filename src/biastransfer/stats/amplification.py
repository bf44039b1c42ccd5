"""Prediction-level bias of a multi-label classifier: bias amplification from attribute to task, with intervals.

Inputs are per image: a one-hot protected attribute ``A`` (n x |A|, e.g. man / woman; every image exactly
one), the ground-truth task labels ``T`` (n x |T|, binary) and the predicted labels ``That`` (n x |T|, binary;
:func:`predict_at_threshold` and :func:`predict_at_base_rate` turn scores into them). Two measures:

- ``"directional"``: BiasAmp_{A->T} of Wang & Russakovsky, "Directional Bias Amplification" (ICML 2021,
  arXiv 2102.12594): for each (a, t), ``y_at = 1[P(A=a, T=t) > P(A=a) P(T=t)]`` (ground truth),
  ``delta_at = P(That=t | A=a) - P(T=t | A=a)`` and ``term_at = y_at delta_at + (1 - y_at)(-delta_at)``;
  the measure is the mean of the |A||T| terms. Positive: predictions push each task further towards the
  attribute it already co-occurs with.
- ``"zhao"``: Zhao et al., "Men Also Like Shopping" (EMNLP 2017): ``b(o, g) = c(o, g) / sum_g' c(o, g')``
  with ``c(o, g)`` the images of attribute g with object (task) o. Here ``b_train`` counts the ground truth
  and ``b_pred`` the predictions, both on the *same evaluation images* with the images' true attribute
  (Zhao et al. take ``b_train`` from the training set and predict the gender too). The measure is
  ``1/|O| sum_g sum_{o: b_train(o, g) > 1/|G|} (b_pred(o, g) - b_train(o, g))``, as in the paper, over the
  |O| objects whose ``b_train`` and ``b_pred`` are both defined: an object with no true or no predicted
  positive has NaN terms, is dropped, and ``dropped`` counts it. With two attributes that is the mean of the
  selected terms (an object exactly balanced in the ground truth adds a 0). Selecting by the same noisy
  ``b_train`` that the term subtracts makes the measure negative for predictions blind to the attribute
  (regression to the mean); BiasAmp_{A->T} has the same, smaller, bias near independence.

A task with no image in the evaluation images (a class absent from the test split) has no direction
``y_at`` (``P(A=a, T=t) = 0 = P(A=a) P(T=t)``) and no conditional rate to amplify: its directional terms
are NaN, it is left out of the mean (``excluded`` names it, the table says why), as Zhao's measure drops it.

Intervals are percentile bootstraps over images. A replicate is a row of a (replicates x n) count matrix
(how often each image is drawn), and every probability above is a ratio of weighted sums, so one ``W @ X``
gives all replicates' counts. A replicate recomputes every rate but keeps the observed ``y_at`` (and Zhao's
observed selection): the direction of a pair is the ground truth's, which the measure conditions on.
Recomputing it per replicate would add the selection bias of the plug-in twice and push the interval off its
own estimate. That bias is the measure's, not the bootstrap's: for a pair near independence ``y_at`` follows the
same noise in ``P(T=t | A=a)`` that ``delta_at`` subtracts, so its term is biased low by about its own standard
error, and the mean of many such terms by many of the mean's standard errors (predictions independent of
everything, 80 tasks of base rate 0.2 and 5,000 images: estimate -0.005, interval [-0.007, -0.0035], population
value 0). The intervals are calibrated when every pair's direction is clear (tests/test_amplification.py).
A replicate in which an attribute group draws no image has an undefined directional measure and is left out
(``undefined_replicates``). When an attribute group has fewer than ``min_resampled_size(level)`` images (5 at
95%; :mod:`~biastransfer.stats.floors`) all intervals are NaN: its conditional rates have too few distinct
resamples. Several seeds' predictions on the same images (a 3-D array or a list) give the mean over seeds,
with every seed resampled by the same counts.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from biastransfer.stats._validation import IntervalResult, check_choice, check_seed
from biastransfer.stats.bootstrap import BOOTSTRAP, check_level
from biastransfer.stats.floors import check_replicates, too_few_to_resample

MEASURES = ("directional", "zhao")
#: What a row of the prediction-level tables is about: the network (family and model), its finetuning dataset and
#: seed, the measure and the score threshold.
ROW_KEY = ("network", "model", "dataset", "seed", "measure", "threshold")
#: The columns of the prediction-level summary (rule amplification's amplification.csv, written by
#: :mod:`~biastransfer.stats.prediction_bias`), in order.
SUMMARY_COLUMNS = (
    *ROW_KEY,
    "estimate",
    "ci_low",
    "ci_high",
    "level",
    "replicates",
    "n_images",
    "n_excluded",
    "images_per_attribute",
    "seeds",
)
#: The columns of its per-(attribute, task) terms (amplification_terms.csv).
TERM_COLUMNS = (
    *ROW_KEY,
    "attribute",
    "task",
    "n_attribute",
    "selected",
    "term",
    "ci_low",
    "ci_high",
    "level",
    "shift",
    "shift_low",
    "shift_high",
    "excluded",
)
#: Why a task's terms are left out of the mean (the term table's ``excluded``).
ABSENT = "no image of this class in the evaluation images: no direction to amplify, left out of the mean"
_BLOCK = 512  # replicates per matrix product; fixed, so a seed always gives the same draws


@dataclass(frozen=True)
class AmplificationResult(IntervalResult):
    """Bias amplification ``estimate`` (``measure``: ``"directional"`` or ``"zhao"``) with a percentile interval.

    ``terms`` (|A| x |T|) are the per-(attribute, task) terms, ``terms_low`` / ``terms_high`` their intervals;
    ``selected`` is ``y_at`` (directional) or ``b_train > 1/|A|`` (Zhao), from the observed ground truth and
    held in every replicate. ``dropped`` counts the (seed, task)
    pairs Zhao's mean leaves out (no true or no predicted positive; 0 for directional). With several seeds
    every value is the mean over seeds. ``excluded`` are the tasks with no image (NaN terms, left out of
    the mean). :meth:`table` gives one row per term.
    """

    measure: str
    n_images: int
    n_seeds: int
    dropped: int
    undefined_replicates: int
    attributes: tuple
    tasks: tuple
    terms: np.ndarray = field(repr=False)
    terms_low: np.ndarray = field(repr=False)
    terms_high: np.ndarray = field(repr=False)
    selected: np.ndarray = field(repr=False)
    replicate_estimates: np.ndarray = field(repr=False)
    replicate_terms: np.ndarray = field(repr=False)
    excluded: tuple = ()

    def table(self) -> pd.DataFrame:
        """One row per (attribute, task): its selection flag (``y_at`` or ``selected``), term and interval, and
        why it is left out of the mean (``excluded``; empty when it is not)."""
        G, K = self.terms.shape
        flag = "y_at" if self.measure == "directional" else "selected"
        why = [ABSENT if t in self.excluded else "" for t in self.tasks]
        return pd.DataFrame(
            {
                "measure": self.measure,
                "attribute": np.repeat(np.asarray(self.attributes, dtype=object), K),
                "task": np.tile(np.asarray(self.tasks, dtype=object), G),
                flag: self.selected.ravel().astype(int),
                "term": self.terms.ravel(),
                "ci_low": self.terms_low.ravel(),
                "ci_high": self.terms_high.ravel(),
                "level": self.level,
                "excluded": np.tile(np.asarray(why, dtype=object), G),
            }
        )


@dataclass(frozen=True)
class Evaluation:
    """One dataset's evaluation images: one-hot ``attributes`` (n x |A|) and ground-truth ``truth``
    (n x |T|) of the measured ``tasks``; ``n_excluded`` images had no attribute and are not among them."""

    dataset: str
    attribute_names: tuple[str, ...]
    tasks: tuple[str, ...]
    attributes: np.ndarray
    truth: np.ndarray
    n_excluded: int

    @property
    def per_attribute(self) -> str:
        counts = self.attributes.sum(axis=0).astype(int)
        return "; ".join(f"{a}={n}" for a, n in zip(self.attribute_names, counts))


def check_binary(value, name: str) -> np.ndarray:
    """``value`` as a 2-D float64 array of 0s and 1s (bools allowed), or ValueError naming ``name``."""
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} is not an array of numbers: {err}") from None
    if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
        raise ValueError(f"{name} must hold 0/1 numbers, got dtype {array.dtype}")
    if array.ndim != 2:
        raise ValueError(f"{name} must be 2-D (images x columns), got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"{name} is empty (shape {array.shape})")
    bad = ~((array == 0) | (array == 1))
    if bad.any():
        row, col = (int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name} must be binary (0/1); row {row}, column {col} is {array[row, col].item()!r}")
    return array.astype(np.float64)


def check_attributes(value, name: str = "attributes") -> np.ndarray:
    """A one-hot attribute matrix (n x |A|, |A| >= 2, every image exactly one attribute, every attribute some image)."""
    A = check_binary(value, name)
    if A.shape[1] < 2:
        raise ValueError(f"{name} needs at least 2 attribute columns, got {A.shape[1]}")
    per_row = A.sum(axis=1)
    if (per_row != 1).any():
        row = int(np.flatnonzero(per_row != 1)[0])
        what = "no attribute" if per_row[row] == 0 else f"{int(per_row[row])} attributes"
        raise ValueError(f"{name} row {row} has {what}; every image needs exactly one")
    empty = np.flatnonzero(A.sum(axis=0) == 0)
    if empty.size:
        raise ValueError(f"{name} column {int(empty[0])} has no image")
    return A


def _names(value, given, count: int, what: str) -> tuple:
    names = given if given is not None else getattr(value, "columns", None)
    names = tuple(str(i) for i in range(count)) if names is None else tuple(names)
    if len(names) != count:
        raise ValueError(f"{len(names)} {what} names for {count} columns")
    return names


def predict_at_threshold(scores, threshold=0.5) -> np.ndarray:
    """Predicted labels (int8): 1 where ``score >= threshold`` (a number, or one per class)."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 2:
        raise ValueError(f"scores must be 2-D (images x classes), got shape {scores.shape}")
    threshold = np.asarray(threshold, dtype=np.float64)
    if threshold.ndim > 1 or (threshold.ndim == 1 and threshold.size != scores.shape[1]):
        raise ValueError(f"threshold must be a number or one per class ({scores.shape[1]}), got {threshold.shape}")
    return (scores >= threshold).astype(np.int8)


def predict_at_base_rate(scores, truth) -> np.ndarray:
    """Predicted labels (int8) at per-class thresholds that match each class's base rate in ``truth``: the
    k highest scores of a class with k true positives are predicted positive (ties broken by image order), so
    the fraction predicted positive equals the fraction truly positive (Wang & Russakovsky 2021
    show that the threshold changes the measure)."""
    T = check_binary(truth, "truth")
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape != T.shape:
        raise ValueError(f"scores has shape {scores.shape} but truth has {T.shape}")
    order = np.argsort(-scores, axis=0, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(len(scores))[:, None].repeat(scores.shape[1], axis=1), axis=0)
    return (ranks < T.sum(axis=0)).astype(np.int8)


def _seeds(predictions) -> list:
    """``predictions`` as a list of per-seed matrices (one 2-D matrix, a 3-D array, or a sequence of matrices)."""
    if isinstance(predictions, np.ndarray):
        return list(predictions) if predictions.ndim == 3 else [predictions]
    if isinstance(predictions, (list, tuple)) and predictions and np.ndim(predictions[0]) == 2:
        return list(predictions)
    return [predictions]


def _check_inputs(attributes, truth, predictions):
    A = check_attributes(attributes)
    T = check_binary(truth, "truth")
    if T.shape[0] != A.shape[0]:
        raise ValueError(f"truth has {T.shape[0]} images but attributes has {A.shape[0]}")
    seeds = _seeds(predictions)
    checked = []
    for i, p in enumerate(seeds):
        name = "predictions" if len(seeds) == 1 else f"predictions[{i}]"
        p = check_binary(p, name)
        if p.shape != T.shape:
            raise ValueError(f"{name} has shape {p.shape} but truth has {T.shape}")
        checked.append(p)
    return A, T, np.stack(checked)


def design(A: np.ndarray, T: np.ndarray, P: np.ndarray) -> np.ndarray:
    """The n x (G + K + GK + SGK) columns whose weighted sums give every count: A, T, A*T, and A*That per seed.

    float32, filled in place: its values are 0 and 1 and every count it sums is an integer below 2^24 (at
    most n per replicate), which float32 holds exactly; half the memory of float64 (0.4 GB for 33k images
    x 594 Open Images tasks)."""
    n, G = A.shape
    K = T.shape[1]
    X = np.empty((n, G + K + G * K + len(P) * G * K), dtype=np.float32)
    X[:, :G], X[:, G : G + K] = A, T
    for g in range(G):
        X[:, G + K + g * K : G + K + (g + 1) * K] = A[:, g : g + 1] * T
    for s, Ps in enumerate(P):
        for g in range(G):
            start = G + K + G * K + (s * G + g) * K
            X[:, start : start + K] = A[:, g : g + 1] * Ps
    return X


def _split(sums: np.ndarray, G: int, K: int, S: int):
    """``(N, nA, nT, nAT, nAP)`` from the R x columns sums of :func:`design` (nAP: S x R x G x K)."""
    R = len(sums)
    nA, nT = sums[:, :G], sums[:, G : G + K]
    nAT = sums[:, G + K : G + K + G * K].reshape(R, G, K)
    nAP = sums[:, G + K + G * K :].reshape(R, S, G, K).transpose(1, 0, 2, 3)
    return nA.sum(axis=1), nA, nT, nAT, nAP


def directional_terms(N, nA, nT, nAT, nAP, y=None):
    """BiasAmp_{A->T} from counts: ``(y, terms)`` with y (R x G x K; computed unless given) and terms
    (S x R x G x K)."""
    if y is None:
        y = nAT * N[:, None, None] > nA[:, :, None] * nT[:, None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        delta = (nAP - nAT) / nA[:, :, None]
    return y, np.where(y, delta, -delta)


def zhao_terms(nAT, nAP, selected=None):
    """Zhao et al.'s measure from counts: ``(selected, terms, means, dropped)``; selected (R x G x K; computed
    unless given), terms = b_pred - b_train (S x R x G x K), means (S x R) over the defined objects, dropped
    (S x R) the undefined objects."""
    G = nAT.shape[1]
    true_total, pred_total = nAT.sum(axis=1, keepdims=True), nAP.sum(axis=2, keepdims=True)
    if selected is None:
        selected = G * nAT > true_total  # b_train > 1 / G, in exact integer arithmetic
    with np.errstate(invalid="ignore", divide="ignore"):
        terms = nAP / pred_total - nAT / true_total
    defined = (true_total > 0) & (pred_total > 0)  # S x R x 1 x K
    chosen = np.where(selected & defined, terms, 0.0).sum(axis=(2, 3))
    objects = defined.sum(axis=(2, 3))
    with np.errstate(invalid="ignore", divide="ignore"):
        means = chosen / objects
    return selected, terms, means, nAT.shape[2] - objects


def measure_terms(measure: str, sums: np.ndarray, G: int, K: int, S: int, present: np.ndarray, selected=None):
    """``(selected R x G x K, terms R x G x K, estimates R, dropped R)`` of one measure, averaged over seeds;
    ``selected`` (G x K: ``y_at`` or Zhao's selection) is computed from ``sums`` unless given. Directional
    terms of a task not ``present`` (K) are NaN and left out of the mean (NaN when no task is present)."""
    N, nA, nT, nAT, nAP = _split(sums, G, K, S)
    if measure == "directional":
        selected, terms = directional_terms(N, nA, nT, nAT, nAP, selected)
        terms = np.where(present, terms, np.nan)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # no task present: a NaN mean
            estimates = terms[..., present].mean(axis=(0, 2, 3))
        return selected, terms.mean(axis=0), estimates, np.zeros(len(sums), dtype=int)
    selected, terms, means, dropped = zhao_terms(nAT, nAP, selected)
    return selected, terms.mean(axis=0), means.mean(axis=0), dropped.sum(axis=0)


def resample_indices(n: int, replicates: int, seed: int | np.random.Generator) -> np.ndarray:
    """The ``replicates x n`` image indices the bootstrap draws for ``seed`` (in blocks of 512 replicates)."""
    rng = np.random.default_rng(seed)
    return np.vstack([rng.integers(0, n, size=(min(_BLOCK, replicates - s), n)) for s in range(0, replicates, _BLOCK)])


def bootstrap_counts(indices: np.ndarray, n: int) -> np.ndarray:
    """How often each image is drawn in each replicate (R x n; float32, as :func:`design`: exact below 2^24)."""
    R = len(indices)
    flat = (indices + n * np.arange(R)[:, None]).ravel()
    return np.bincount(flat, minlength=R * n).reshape(R, n).astype(np.float32)


def _quantiles(values: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bounds along axis 0 over the finite replicates (NaN where none is finite)."""
    q = [(1 - level) / 2, (1 + level) / 2]
    finite = np.isfinite(values)
    if finite.all():
        low, high = np.quantile(values, q, axis=0)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN term
            low, high = np.nanquantile(np.where(finite, values, np.nan), q, axis=0)
    return low, high


def bias_amplifications(
    attributes,
    truth,
    predictions,
    *,
    measures: Sequence[str] = MEASURES,
    attribute_names: Sequence | None = None,
    task_names: Sequence | None = None,
    replicates: int = BOOTSTRAP,
    level: float = 0.95,
    seed: int | None = 0,
) -> dict[str, AmplificationResult]:
    """Each of ``measures`` (``"directional"``, ``"zhao"``) for the same images, with intervals from the same
    resampled counts; ``predictions`` is one n x |T| matrix or one per seed (the mean over seeds)."""
    measures = [check_choice(m, "measure", MEASURES) for m in measures]
    level, seed = check_level(level), check_seed(seed)
    replicates = check_replicates(replicates, level)
    A, T, P = _check_inputs(attributes, truth, predictions)
    (n, G), K, S = A.shape, T.shape[1], len(P)
    names = _names(attributes, attribute_names, G, "attribute"), _names(truth, task_names, K, "task")
    X = design(A, T, P)
    observed = X.sum(axis=0, keepdims=True, dtype=np.float64)
    resample = not too_few_to_resample(A.sum(axis=0).astype(int), level)
    present = T.sum(axis=0) > 0
    observed_measures = {m: measure_terms(m, observed, G, K, S, present) for m in measures}
    reps = {m: (np.full(replicates, np.nan), np.full((replicates, G, K), np.nan)) for m in measures}
    if resample:
        indices = resample_indices(n, replicates, seed)
        for start in range(0, replicates, _BLOCK):
            sums = (bootstrap_counts(indices[start : start + _BLOCK], n) @ X).astype(np.float64)  # exact integers
            for m in measures:
                _, terms, estimates, _ = measure_terms(m, sums, G, K, S, present, observed_measures[m][0])
                reps[m][0][start : start + len(sums)] = estimates
                reps[m][1][start : start + len(sums)] = terms
    results = {}
    for m in measures:
        selected, terms, estimate, dropped = observed_measures[m]
        estimates, term_reps = reps[m]
        low, high = _quantiles(estimates, level) if resample else (np.nan, np.nan)
        terms_low, terms_high = _quantiles(term_reps, level) if resample else (np.full((G, K), np.nan),) * 2
        results[m] = AmplificationResult(
            float(estimate[0]),
            float(low),
            float(high),
            level,
            replicates,
            seed,
            m,
            n,
            S,
            int(dropped[0]),
            int(np.count_nonzero(~np.isfinite(estimates))) if resample else 0,
            *names,
            terms[0],
            terms_low,
            terms_high,
            selected[0],
            estimates,
            term_reps,
            tuple(t for t, p in zip(names[1], present) if not p),
        )
    return results


def bias_amplification(
    attributes, truth, predictions, *, measure: str = "directional", **options
) -> AmplificationResult:
    """One bias amplification measure (``"directional"``: Wang & Russakovsky's BiasAmp_{A->T}; ``"zhao"``:
    Zhao et al. 2017) with a bootstrap interval over images (options of :func:`bias_amplifications`)."""
    return bias_amplifications(attributes, truth, predictions, measures=[measure], **options)[measure]


def attribute_shifts(result: AmplificationResult) -> tuple[np.ndarray, np.ndarray]:
    """``(shift, replicates)`` of a directional result: the observed |A| x |T| shifts of :func:`attribute_shift`
    and theirs in every replicate (R x |A| x |T|), drawn with the same images."""
    sign = np.where(result.selected, 1.0, -1.0)
    deltas = [result.terms * sign, result.replicate_terms * sign]
    G = deltas[0].shape[-2]
    observed, replicates = (d - (d.sum(axis=-2, keepdims=True) - d) / (G - 1) for d in deltas)
    return observed, replicates


def attribute_shift(result: AmplificationResult) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(shift, low, high)`` (|A| x |T|) of a directional result: how much more the predictions over-predict
    task t for attribute a than for the other attributes, ``delta_at - mean_{a' != a} delta_a't`` with
    ``delta_at = P(That=t | a) - P(T=t | a)``, and its percentile interval from the same replicates. Unlike the
    term it does not depend on the ground truth's direction ``y_at`` (noise where t and a are near independent),
    and a network that over-predicts t for everyone shifts nothing: positive, the predictions move t towards a."""
    observed, replicates = attribute_shifts(result)
    low, high = _quantiles(replicates, result.level)
    return observed, low, high
