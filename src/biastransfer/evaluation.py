"""A dataset's evaluation split as the prediction-level statistics read it: the ground truth of its tasks, the
protected attribute of each image (images without one counted and left out) and each network's scores of
those images from its predictions file (:mod:`biastransfer.predictions`), and its embedding from the file
written beside it, every file checked against the split's digest. Rules amplification and link; it imports
the statistics, so rule predict does not import it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import numpy as np

from biastransfer.data.attributes import read_attributes
from biastransfer.data.splits import read_split
from biastransfer.embeddings import (
    checked_embedding_ids,
    open_parquet,
    read_embedding_rows,
    read_metadata,
    string_column,
)
from biastransfer.hashing import file_digest
from biastransfer.predictions import read_predictions
from biastransfer.stages import PRETRAINED, parse_stage, stage_kind
from biastransfer.stats.amplification import Evaluation

log = logging.getLogger(__name__)


def read_evaluation(split_path: str, attributes_path: str) -> tuple[Evaluation, np.ndarray, str]:
    """``(evaluation, image ids, split digest)`` of one dataset's test split and attribute file."""
    split, attrs = read_split(split_path), read_attributes(attributes_path)
    digest = file_digest(split_path)
    if attrs.split_sha256 != digest:
        raise ValueError(
            f"{attributes_path}: describes another version of the split than {split_path} (sha256 "
            f"{attrs.split_sha256[:12]} recorded, {digest[:12]} now)"
        )
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
    return _scores_of(read_predictions(path), path, ev, ids, digest)


def _scores_of(table, path: str, ev: Evaluation, ids: np.ndarray, digest: str) -> np.ndarray:
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
    return table.columns(ev.tasks, where=path, rows=[rows[i] for i in ids])


class NetworkScores(Mapping):
    """``{(network, model): {seed: scores}}`` of one dataset's prediction files (:func:`network_scores`), each
    family's files read when it is asked for and not kept: one family's scores are in memory at a time (an
    Open Images network's are 33k images x 594 tasks, 0.16 GB, and the paper has six)."""

    def __init__(self, files: Mapping[tuple[str, str], Mapping[int, str]], ev: Evaluation, ids, digest: str):
        self._files, self._evaluation = files, (ev, ids, digest)

    def __getitem__(self, key: tuple[str, str]) -> dict[int, np.ndarray]:
        return {seed: network_scores(path, *self._evaluation) for seed, path in self._files[key].items()}

    def __iter__(self):
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)


def read_evaluations(splits, attributes) -> dict[str, tuple[Evaluation, np.ndarray, str]]:
    """``{dataset: (evaluation, image ids, split digest)}`` of the test splits and attribute files (in the
    same order; see :func:`read_evaluation`)."""
    splits = [splits] if isinstance(splits, str) else list(splits)
    attributes = [attributes] if isinstance(attributes, str) else list(attributes)
    if len(splits) != len(attributes):
        raise ValueError(f"{len(splits)} test splits but {len(attributes)} attribute files")
    datasets = {}
    for split_path, attributes_path in zip(splits, attributes):
        ev, ids, digest = read_evaluation(split_path, attributes_path)
        datasets[ev.dataset] = (ev, ids, digest)
        log.info(
            "%s: %d images (%s), %d without an attribute left out; tasks %s",
            ev.dataset,
            len(ids),
            ev.per_attribute,
            ev.n_excluded,
            ", ".join(ev.tasks),
        )
    return datasets


def _network_of(path, meta: dict, datasets: Mapping) -> tuple[str, tuple[str, str], int]:
    """``(dataset, (network, model), seed)`` of a prediction file's metadata."""
    stage = str(meta.get("stage", ""))
    dataset, seed = parse_stage(stage)
    if dataset not in datasets:
        raise ValueError(f"{path}: stage {stage!r} is of no dataset whose test split was given ({', '.join(datasets)})")
    return dataset, (stage_kind(stage), str(meta.get("model", ""))), seed


def scores_by_network(datasets: Mapping, predictions) -> dict[str, NetworkScores]:
    """``{dataset: {(network, model): {seed: scores}}}`` of the prediction files (matched to the
    :func:`read_evaluations` ``datasets`` by their stage): every file is read and checked here, as
    :func:`network_scores` checks it, before any is used; the scores are read again, a family at a time,
    when they are asked for (:class:`NetworkScores`)."""
    predictions = [predictions] if isinstance(predictions, str) else list(predictions)
    files = {name: {} for name in datasets}
    for path in predictions:
        table = read_predictions(path)
        dataset, key, seed = _network_of(path, table.metadata, datasets)
        _scores_of(table, path, *datasets[dataset])
        files[dataset].setdefault(key, {})[seed] = path
        del table
    return {name: NetworkScores(files[name], *datasets[name]) for name in datasets}


def evaluations_and_scores(splits, attributes, predictions) -> dict[str, tuple[Evaluation, dict]]:
    """``{dataset: (evaluation, {(network, model): {seed: scores}})}`` of the test splits and attribute files
    (in the same order) and the prediction files of the networks trained on them (matched by their stage)."""
    datasets = read_evaluations(splits, attributes)
    scores = scores_by_network(datasets, predictions)
    return {name: (ev, scores[name]) for name, (ev, _, _) in datasets.items()}


#: Metadata an embedding file shares with the predictions of the same forward pass.
SAME_NETWORK = ("model", "stage", "weights_sha256", "dataset", "split", "split_sha256")


def check_embeddings(datasets: Mapping, predictions, embeddings) -> list[tuple[str, tuple[str, str], int, str]]:
    """``[(dataset, (network, model), seed, embedding file)]`` of the embedding files written beside the
    prediction files (the same order; those read by :func:`scores_by_network`), each checked, before any attacker runs, to be of the same network and
    split as its predictions (:data:`SAME_NETWORK`), valid (:func:`~biastransfer.embeddings.checked_embedding_ids`)
    and with the same images in the same order; errors name the file."""
    predictions = [predictions] if isinstance(predictions, str) else list(predictions)
    embeddings = [embeddings] if isinstance(embeddings, str) else list(embeddings)
    if len(predictions) != len(embeddings):
        raise ValueError(f"{len(predictions)} prediction files but {len(embeddings)} embedding files")
    out = []
    for pred, emb in zip(predictions, embeddings):
        theirs, mine = read_metadata(pred), read_metadata(emb)
        differ = [k for k in SAME_NETWORK if mine.get(k) != theirs.get(k)]
        if differ:
            shown = "; ".join(f"{k} {str(mine.get(k))[:16]!r}, not {str(theirs.get(k))[:16]!r}" for k in differ)
            raise ValueError(f"{emb}: not the embedding of the network and split of {pred} ({shown})")
        ids = checked_embedding_ids(emb)  # every row checked, batch by batch: no matrix held
        expected = string_column(pred, open_parquet(pred).read(columns=["image_id"]).column("image_id"), "image_id")
        n = min(len(ids), len(expected))
        if len(ids) != len(expected) or (ids[:n] != expected[:n]).any():
            wrong = np.flatnonzero(ids[:n] != expected[:n])
            row = int(wrong[0]) if len(wrong) else n
            got = str(ids[row]) if row < len(ids) else "no image"
            want = str(expected[row]) if row < len(expected) else "no image"
            raise ValueError(
                f"{emb}: row {row} is {got!r} but {pred} has {want!r} there ({len(ids)} rows against "
                f"{len(expected)}; both come from one forward pass over the split, in its order)"
            )
        out.append((*_network_of(pred, theirs, datasets), emb))
    return out


def check_pretrained_embeddings(datasets: Mapping, embeddings) -> list[tuple[str, str, str]]:
    """``[(dataset, model, embedding file)]`` of the pretrained networks' embeddings of the test splits (rule
    predict's ``pretrained_embeddings``), each checked, before any attacker runs, to be of a pretrained network
    (stage ``pretrained``), of the test split of one of the :func:`read_evaluations` ``datasets`` (its digest),
    valid and with a row for every image of it with an attribute; errors name the file."""
    embeddings = [embeddings] if isinstance(embeddings, str) else list(embeddings)
    out = []
    for emb in embeddings:
        meta = read_metadata(emb)
        dataset, stage = str(meta.get("dataset", "")), str(meta.get("stage", ""))
        if stage != PRETRAINED:
            raise ValueError(f"{emb}: an embedding of stage {stage!r}, not of the pretrained network")
        if dataset not in datasets or meta.get("split") != "test" or meta.get("split_sha256") != datasets[dataset][2]:
            raise ValueError(
                f"{emb}: an embedding of split {dataset}/{meta.get('split')} (sha256 "
                f"{str(meta.get('split_sha256'))[:12]}), not of a test split given ({', '.join(datasets)})"
            )
        present = set(checked_embedding_ids(emb).tolist())
        missing = [i for i in datasets[dataset][1] if i not in present]
        if missing:
            raise ValueError(f"{emb}: no row for image {missing[0]!r} of {dataset}/test")
        out.append((dataset, str(meta.get("model", "")), emb))
    return out


def embedding_rows(path, ids: np.ndarray) -> np.ndarray:
    """The (len(ids), d) embedding of the images ``ids`` (in that order) from one checked embedding file."""
    return read_embedding_rows(path, ids)
