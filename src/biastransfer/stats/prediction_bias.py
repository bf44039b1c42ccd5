"""Every prediction-level measure of the networks trained on one dataset, as the summary tables' rows.

For each network family (finetuned, scratch) of a model, per seed and pooled over seeds (the mean over
seeds, every seed resampled with the same images): bias amplification A -> T (directional and Zhao et al.'s;
:mod:`~biastransfer.stats.amplification`) of the labels predicted at a score threshold and at per-class
base-rate thresholds, and the leakage of the attribute from the network's scores, the leakage of the
ground-truth labels perturbed to the network's F1, and their difference (leakage amplification;
:mod:`~biastransfer.stats.leakage`), and the leakage of the attribute from the network's embedding of the
same images (its classifier's input, from the same forward pass). The dataset's own leakage (from its
ground-truth labels) is a row of its own, and so is each pretrained network's embedding leakage (the same
layer, the same images: the baseline of the finetuned networks'; the pretrained network has no head for the
dataset's tasks, so it has no other measure). Needs scikit-learn (through the leakage module), so
``biastransfer.stats`` does not re-export it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from biastransfer.stats.amplification import (
    SUMMARY_COLUMNS,
    TERM_COLUMNS,
    Evaluation,
    attribute_shift,
    bias_amplifications,
    predict_at_base_rate,
    predict_at_threshold,
)
from biastransfer.stats.bootstrap import percentile_interval
from biastransfer.stats.leakage import LeakageResult, leakage, leakage_amplification


@dataclass(frozen=True)
class Settings:
    """``analysis.predictions``: threshold, bootstrap replicates, interval level, attacker folds, seed, and the
    principal components the embedding attacker reads (0: the whole embedding)."""

    threshold: float = 0.5
    bootstrap: int = 1000
    ci_level: float = 0.95
    folds: int = 5
    seed: int = 0
    embedding_components: int = 256


def _row(ev: Evaluation, key: Mapping, measure: str, threshold: str, result, seeds: int, **values) -> dict:
    return {
        **key,
        "dataset": ev.dataset,
        "measure": measure,
        "threshold": threshold,
        "estimate": result.estimate,
        "ci_low": result.ci_low,
        "ci_high": result.ci_high,
        "level": result.level,
        "replicates": result.replicates,
        "n_images": len(ev.truth),
        "n_excluded": ev.n_excluded,
        "images_per_attribute": ev.per_attribute,
        "seeds": seeds,
        **values,
    }


def dataset_leakage(ev: Evaluation, settings: Settings) -> dict:
    """The row of the leakage of the attribute from the dataset's own ground-truth task labels."""
    result = leakage(
        ev.truth,
        ev.attributes,
        folds=settings.folds,
        replicates=settings.bootstrap,
        level=settings.ci_level,
        seed=settings.seed,
    )
    return _row(ev, {"network": "dataset", "model": "", "seed": ""}, "leakage_dataset", "", result, 0)


def embedding_leakage(ev: Evaluation, features: np.ndarray, settings: Settings) -> LeakageResult:
    """Leakage of the attribute from one network's embedding of ``ev``'s images (n x d, rows in its order)."""
    return leakage(
        features,
        ev.attributes,
        folds=settings.folds,
        replicates=settings.bootstrap,
        level=settings.ci_level,
        seed=settings.seed,
        components=settings.embedding_components or None,
    )


class _Pooled:
    """The mean over seeds of results drawn with the same images: estimate and percentile interval."""

    def __init__(self, estimates: Sequence[float], replicates: Sequence[np.ndarray], first):
        reps = np.mean(np.stack(replicates), axis=0)
        self.estimate = float(np.mean(estimates))
        self.ci_low, self.ci_high = percentile_interval(reps, first.level)
        self.level, self.replicates = first.level, first.replicates


def _amplification_rows(ev, key, label, preds, threshold, settings, nseeds):
    results = bias_amplifications(
        ev.attributes,
        ev.truth,
        preds,
        attribute_names=ev.attribute_names,
        task_names=ev.tasks,
        replicates=settings.bootstrap,
        level=settings.ci_level,
        seed=settings.seed,
    )
    rows, terms = [], []
    sizes = dict(zip(ev.attribute_names, ev.attributes.sum(axis=0).astype(int)))
    for measure, result in results.items():
        rows.append(_row(ev, {**key, "seed": label}, measure, threshold, result, nseeds))
        table = result.table().rename(columns={"y_at": "selected"})
        table = table.assign(
            **key, seed=label, dataset=ev.dataset, threshold=threshold, n_attribute=table["attribute"].map(sizes)
        )
        if measure == "directional":
            shift, low, high = attribute_shift(result)
            table = table.assign(shift=shift.ravel(), shift_low=low.ravel(), shift_high=high.ravel())
        terms.append(table)
    return rows, terms


def network_rows(
    ev: Evaluation,
    network: str,
    model: str,
    scores: Mapping[int, np.ndarray],
    settings: Settings,
    embedded: Mapping[int, LeakageResult] | None = None,
) -> tuple[list[dict], list[pd.DataFrame]]:
    """Summary rows and term tables of one network family (``scores``: {seed: n x |T| scores of ev.tasks};
    ``embedded``: {seed: :func:`embedding_leakage`} of the same seeds, or None for no embedding rows)."""
    key = {"network": network, "model": model}
    seeds = sorted(scores)
    if embedded is not None and sorted(embedded) != seeds:
        raise ValueError(f"{network} {model}: embeddings of seeds {sorted(embedded)} but predictions of seeds {seeds}")
    thresholds = {
        f"{settings.threshold:g}": {s: predict_at_threshold(scores[s], settings.threshold) for s in seeds},
        "base_rate": {s: predict_at_base_rate(scores[s], ev.truth) for s in seeds},
    }
    rows, terms = [], []
    groups = [(str(s), [s]) for s in seeds] + ([("pooled", seeds)] if len(seeds) > 1 else [])
    for label, members in groups:
        for threshold, preds in thresholds.items():
            r, t = _amplification_rows(ev, key, label, [preds[s] for s in members], threshold, settings, len(members))
            rows += r
            terms += t
    leaks = {
        s: leakage_amplification(
            ev.attributes,
            ev.truth,
            thresholds[f"{settings.threshold:g}"][s],
            model_features=scores[s],
            folds=settings.folds,
            replicates=settings.bootstrap,
            level=settings.ci_level,
            seed=settings.seed,
        )
        for s in seeds
    }
    parts = {
        "leakage_model": lambda r: (r.model.estimate, r.model.replicate_estimates, r.model),
        "leakage_dataset_matched": lambda r: (r.dataset.estimate, r.dataset.replicate_estimates, r.dataset),
        "leakage_amplification": lambda r: (r.estimate, r.model.replicate_estimates - r.dataset.replicate_estimates, r),
    }
    threshold = f"{settings.threshold:g}"
    for label, members in groups:
        for measure, part in parts.items():
            if len(members) == 1:
                result = part(leaks[members[0]])[2]
            else:
                got = [part(leaks[s]) for s in members]
                result = _Pooled([g[0] for g in got], [g[1] for g in got], got[0][2])
            rows.append(_row(ev, {**key, "seed": label}, measure, threshold, result, len(members)))
    if embedded is not None:
        for label, members in groups:
            got = [embedded[s] for s in members]
            result = (
                got[0]
                if len(got) == 1
                else _Pooled([g.estimate for g in got], [g.replicate_estimates for g in got], got[0])
            )
            rows.append(_row(ev, {**key, "seed": label}, "leakage_embedding", "", result, len(members)))
    return rows, terms


def prediction_bias(
    ev: Evaluation,
    networks: Mapping[tuple[str, str], Mapping[int, np.ndarray]],
    settings: Settings,
    embedded: Mapping[tuple[str, str], Mapping[int, LeakageResult]] | None = None,
    pretrained: Mapping[str, LeakageResult] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(summary, terms)`` of one dataset: its leakage row, the embedding leakage of each model's pretrained
    network (``pretrained``: {model: :func:`embedding_leakage`}; it has no classifier head for the dataset's
    tasks, so no other measure), then every ``{(network, model): {seed: scores}}`` (with its embedding leakage
    rows where ``embedded`` has the same key)."""
    rows, terms = [dataset_leakage(ev, settings)], []
    for model, result in (pretrained or {}).items():
        rows.append(_row(ev, {"network": "pretrained", "model": model, "seed": ""}, "leakage_embedding", "", result, 1))
    embedded = embedded or {}
    for (network, model), scores in networks.items():
        r, t = network_rows(ev, network, model, scores, settings, embedded.get((network, model)))
        rows += r
        terms += t
    summary = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
    term_table = (
        pd.concat(terms, ignore_index=True)[list(TERM_COLUMNS)] if terms else pd.DataFrame(columns=TERM_COLUMNS)
    )
    return summary, term_table
