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
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from biastransfer.atomic import atomic_path
from biastransfer.embeddings import check_unique_ids, open_parquet, string_column

METADATA_KEY = b"biastransfer"


@dataclass(frozen=True)
class PredictionTable:
    """Scores of one network: row ``i`` is image ``image_ids[i]``, column ``j`` class ``classes[j]``."""

    image_ids: np.ndarray
    classes: tuple[str, ...]
    scores: np.ndarray
    metadata: dict = field(default_factory=dict)

    def columns(self, names: Sequence[str], *, where: str, rows: Sequence[int] | None = None) -> np.ndarray:
        """The (n, len(names)) scores of the named classes (of the ``rows`` given, in their order, else of
        every image); ValueError naming ``where`` and the first class this network does not predict."""
        lacking = [c for c in names if c not in self.classes]
        if lacking:
            raise ValueError(
                f"{where}: the network predicts no class {lacking[0]!r} (its classes: {', '.join(self.classes)})"
            )
        cols = [self.classes.index(c) for c in names]
        if rows is None:
            return self.scores[:, cols]
        return self.scores[np.ix_(np.asarray(rows, dtype=np.int64), cols)]  # no copy of every row


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
    pf = open_parquet(path)
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
    ids = string_column(path, table.column("image_id"), "image_id")
    check_unique_ids(path, ids)
    scores = np.empty((table.num_rows, len(classes)), dtype=np.float64)
    for j, c in enumerate(classes):  # column by column into one matrix: no list of columns beside it
        scores[:, j] = table.column(c).to_numpy(zero_copy_only=False)  # a null score becomes NaN, which _check names
    del table
    _check(path, ids, classes, scores)
    return PredictionTable(ids, classes, scores, meta)
