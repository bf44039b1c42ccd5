"""A dataset's evaluation split as the prediction-level statistics read it: the ground truth of its tasks, the
protected attribute of each image (images without one counted and left out) and each network's scores of
those images from its predictions file (:mod:`biastransfer.predictions`), every file checked against the
split's digest. Rules amplification and link; it imports the statistics, so rule predict does not import it.
"""

from __future__ import annotations

import logging

import numpy as np

from biastransfer.data.attributes import read_attributes
from biastransfer.data.splits import read_split
from biastransfer.hashing import file_digest
from biastransfer.predictions import read_predictions
from biastransfer.stages import parse_stage, stage_kind
from biastransfer.stats.amplification import Evaluation

log = logging.getLogger(__name__)


def read_evaluation(split_path: str, attributes_path: str) -> tuple[Evaluation, np.ndarray, str]:
    """``(evaluation, image ids, split digest)`` of one dataset's test split and attribute file."""
    split, attrs = read_split(split_path), read_attributes(attributes_path)
    digest = file_digest(split_path)
    if attrs.split_sha256 != digest:
        raise ValueError(f"{attributes_path}: describes another version of the split than {split_path} (sha256 "
                         f"{attrs.split_sha256[:12]} recorded, {digest[:12]} now)")  # fmt: skip
    ids = split.frame["image_id"].astype(str).to_numpy()
    values = attrs.of(ids, where=split_path)
    keep = np.asarray([v is not None for v in values])
    tasks = tuple(c for c in split.classes if c not in attrs.attribute_classes)
    labels = split.frame["labels"].to_numpy()[keep]
    truth = np.asarray([[t in set(row) for t in tasks] for row in labels], dtype=np.int8)
    onehot = np.asarray([[v == a for a in attrs.attributes] for v in values[keep]], dtype=np.int8)
    ev = Evaluation(split.dataset, attrs.attributes, tasks, onehot, truth, int((~keep).sum()))
    return ev, ids[keep], digest


def network_scores(path: str, ev: Evaluation, ids: np.ndarray, digest: str) -> np.ndarray:
    """The scores of ``ev.tasks`` for the images ``ids`` (in that order) from one prediction file."""
    table = read_predictions(path)
    meta = table.metadata
    if meta.get("split_sha256") != digest or meta.get("split") != "test":
        raise ValueError(
            f"{path}: predictions of split {meta.get('dataset')}/{meta.get('split')} (sha256 "
            f"{str(meta.get('split_sha256'))[:12]}), not of the test split of {ev.dataset} ({digest[:12]})"
        )
    rows = {i: r for r, i in enumerate(table.image_ids)}
    missing = [i for i in ids if i not in rows]
    if missing:
        raise ValueError(f"{path}: no prediction for image {missing[0]!r} of {ev.dataset}/test")
    return table.columns(ev.tasks, where=path)[[rows[i] for i in ids]]


def evaluations_and_scores(splits, attributes, predictions) -> dict[str, tuple[Evaluation, dict]]:
    """``{dataset: (evaluation, {(network, model): {seed: scores}})}`` of the test splits and attribute files
    (in the same order) and the prediction files of the networks trained on them (matched by their stage)."""
    splits = [splits] if isinstance(splits, str) else list(splits)
    attributes = [attributes] if isinstance(attributes, str) else list(attributes)
    predictions = [predictions] if isinstance(predictions, str) else list(predictions)
    if len(splits) != len(attributes):
        raise ValueError(f"{len(splits)} test splits but {len(attributes)} attribute files")
    datasets = {}
    for split_path, attributes_path in zip(splits, attributes):
        ev, ids, digest = read_evaluation(split_path, attributes_path)
        datasets[ev.dataset] = (ev, ids, digest, {})
        log.info("%s: %d images (%s), %d without an attribute left out; tasks %s", ev.dataset, len(ids),
                 ev.per_attribute, ev.n_excluded, ", ".join(ev.tasks))  # fmt: skip
    for path in predictions:
        meta = read_predictions(path).metadata
        stage = str(meta.get("stage", ""))
        dataset, seed = parse_stage(stage)
        if dataset not in datasets:
            raise ValueError(f"{path}: stage {stage!r} is of no dataset whose test split was given "
                             f"({', '.join(datasets)})")  # fmt: skip
        ev, ids, digest, networks = datasets[dataset]
        networks.setdefault((stage_kind(stage), str(meta.get("model", ""))), {})[seed] = network_scores(
            path, ev, ids, digest
        )
    return {name: (ev, networks) for name, (ev, _, _, networks) in datasets.items()}
