"""The predictions Parquet format: one network's per-image sigmoid scores on an evaluation split.

Columns: ``image_id`` (string), then one float32 column per class of the classifier, named by the class, in
the classifier's output order (each a sigmoid score in [0, 1]). File-level metadata key ``biastransfer``
holds a JSON object: ``classes`` (the column order), ``dataset``, ``split``, ``split_sha256`` (the digest of
the split file the images come from), ``weights_sha256``, ``stage``, ``model`` and the provenance of the
embeddings (preprocessing, library versions, workflow commit: biastransfer.models.features).

Rule ``predict`` writes, from the same forward pass, the network's embedding of the same images (the input
of its classifier head: the features ``embed`` writes at the model's layer) beside the scores: the embeddings format
(:mod:`biastransfer.embeddings`) with ``class`` the split's name (an evaluation image has labels, not one
class) and the predictions' metadata (less ``classes``), rows in the predictions' order.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from biastransfer.atomic import atomic_path
from biastransfer.data.attributes import read_attributes
from biastransfer.data.splits import read_split
from biastransfer.embeddings import _check_unique, _open, _strings, read_embeddings, read_metadata
from biastransfer.hashing import file_digest
from biastransfer.stages import parse_stage, stage_kind
from biastransfer.stats.amplification import Evaluation

log = logging.getLogger(__name__)

METADATA_KEY = b"biastransfer"


@dataclass(frozen=True)
class PredictionTable:
    """Scores of one network: row ``i`` is image ``image_ids[i]``, column ``j`` class ``classes[j]``."""

    image_ids: np.ndarray
    classes: tuple[str, ...]
    scores: np.ndarray
    metadata: dict = field(default_factory=dict)

    def columns(self, names: Sequence[str], *, where: str) -> np.ndarray:
        """The (n, len(names)) scores of the named classes; ValueError naming ``where`` and the first class
        this network does not predict."""
        lacking = [c for c in names if c not in self.classes]
        if lacking:
            raise ValueError(
                f"{where}: the network predicts no class {lacking[0]!r} (its classes: {', '.join(self.classes)})"
            )
        return self.scores[:, [self.classes.index(c) for c in names]]


def _check(path, ids: np.ndarray, classes: Sequence[str], scores: np.ndarray) -> None:
    if scores.ndim != 2 or scores.shape != (len(ids), len(classes)):
        raise ValueError(f"{path}: scores of shape {scores.shape} for {len(ids)} images and {len(classes)} classes")
    if len(set(classes)) != len(classes) or "image_id" in classes or not classes:
        raise ValueError(f"{path}: class names must be distinct, non-empty and not 'image_id': {list(classes)}")
    bad = ~(np.isfinite(scores) & (scores >= 0) & (scores <= 1))
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise ValueError(
            f"{path}: score {float(scores[row, col])!r} of image {str(ids[row])!r}, class {classes[col]!r} is not in [0, 1]"
        )


def write_predictions(path: str | os.PathLike, image_ids, classes: Sequence[str], scores, metadata: dict) -> None:
    """Write scores atomically to ``path`` (Parquet, zstd); ``metadata`` gets the class order."""
    import pyarrow.parquet as pq

    ids = np.asarray(image_ids).astype(str)
    classes = [str(c) for c in classes]
    scores = np.asarray(scores, dtype=np.float32)
    _check(path, ids, classes, scores)
    columns = {"image_id": pa.array(ids, type=pa.string())}
    columns |= {c: pa.array(scores[:, j], type=pa.float32()) for j, c in enumerate(classes)}
    meta = {**metadata, "classes": classes}
    table = pa.table(columns).replace_schema_metadata({METADATA_KEY: json.dumps(meta, sort_keys=True).encode()})
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def read_predictions(path: str | os.PathLike) -> PredictionTable:
    """Read and validate a predictions file; errors name the file, the image and the class."""
    pf = _open(path)
    raw = (pf.schema_arrow.metadata or {}).get(METADATA_KEY)
    meta = json.loads(raw) if raw else {}
    classes = tuple(meta.get("classes", ()))
    if not classes:
        raise ValueError(f"{path}: no 'biastransfer' metadata with the class list")
    missing = [c for c in ("image_id", *classes) if c not in pf.schema_arrow.names]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)}")
    try:
        table = pf.read(columns=["image_id", *classes])
    except (OSError, pa.ArrowException) as exc:
        raise ValueError(f"{path}: not a readable Parquet file ({exc})") from exc
    if table.num_rows == 0:
        raise ValueError(f"{path}: no rows")
    ids = _strings(path, table.column("image_id"), "image_id")
    _check_unique(path, ids)
    scores = np.column_stack(
        [table.column(c).to_numpy(zero_copy_only=False).astype(np.float64) for c in classes]
    )  # a null score becomes NaN, which _check names
    _check(path, ids, classes, scores)
    return PredictionTable(ids, classes, scores, meta)


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
        log.info("%s: %d images (%s), %d without an attribute left out; tasks %s", ev.dataset, len(ids),
                 ev.per_attribute, ev.n_excluded, ", ".join(ev.tasks))  # fmt: skip
    return datasets


def _network_of(path, meta: dict, datasets: Mapping) -> tuple[str, tuple[str, str], int]:
    """``(dataset, (network, model), seed)`` of a prediction file's metadata."""
    stage = str(meta.get("stage", ""))
    dataset, seed = parse_stage(stage)
    if dataset not in datasets:
        raise ValueError(f"{path}: stage {stage!r} is of no dataset whose test split was given "
                         f"({', '.join(datasets)})")  # fmt: skip
    return dataset, (stage_kind(stage), str(meta.get("model", ""))), seed


def scores_by_network(datasets: Mapping, predictions) -> dict[str, dict[tuple[str, str], dict[int, np.ndarray]]]:
    """``{dataset: {(network, model): {seed: scores}}}`` of the prediction files (matched to the
    :func:`read_evaluations` ``datasets`` by their stage)."""
    predictions = [predictions] if isinstance(predictions, str) else list(predictions)
    out = {name: {} for name in datasets}
    for path in predictions:
        dataset, key, seed = _network_of(path, read_predictions(path).metadata, datasets)
        ev, ids, digest = datasets[dataset]
        out[dataset].setdefault(key, {})[seed] = network_scores(path, ev, ids, digest)
    return out


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
    split as its predictions (:data:`SAME_NETWORK`), valid (:func:`~biastransfer.embeddings.read_embeddings`)
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
        ids = read_embeddings(emb).image_ids
        expected = _strings(pred, _open(pred).read(columns=["image_id"]).column("image_id"), "image_id")
        n = min(len(ids), len(expected))
        if len(ids) != len(expected) or (ids[:n] != expected[:n]).any():
            wrong = np.flatnonzero(ids[:n] != expected[:n])
            row = int(wrong[0]) if len(wrong) else n
            got = str(ids[row]) if row < len(ids) else "no image"
            want = str(expected[row]) if row < len(expected) else "no image"
            raise ValueError(f"{emb}: row {row} is {got!r} but {pred} has {want!r} there ({len(ids)} rows against "
                             f"{len(expected)}; both come from one forward pass over the split, in its order)")  # fmt: skip
        out.append((*_network_of(pred, theirs, datasets), emb))
    return out


def embedding_rows(path, ids: np.ndarray) -> np.ndarray:
    """The (len(ids), d) embedding of the images ``ids`` (in that order) from one checked embedding file."""
    table = read_embeddings(path)
    rows = {i: r for r, i in enumerate(table.image_ids)}
    missing = [i for i in ids if i not in rows]
    if missing:
        raise ValueError(f"{path}: no embedding of image {missing[0]!r}")
    return table.embeddings[[rows[i] for i in ids]]
