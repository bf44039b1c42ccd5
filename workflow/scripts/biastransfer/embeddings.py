"""The embeddings Parquet format: one row per (image, analysis class), with provenance metadata.

Columns: ``image_id`` (string), ``class`` (string), ``embedding`` (fixed_size_list<float32>[d]).
File-level metadata key ``biastransfer`` holds a JSON object (model, stage, weights sha256, layer,
preprocessing, config hash, library versions, ...). Users who bring their own embeddings write the
same three columns; the metadata is optional for them.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from biastransfer.atomic import atomic_path

METADATA_KEY = b"biastransfer"
COLUMNS = ("image_id", "class", "embedding")


@dataclass(frozen=True)
class EmbeddingTable:
    """Embeddings of an analysis set: row ``i`` is image ``image_ids[i]`` in class ``classes[i]``."""

    image_ids: np.ndarray
    classes: np.ndarray
    embeddings: np.ndarray
    metadata: dict = field(default_factory=dict)

    @property
    def class_names(self) -> list[str]:
        """Class names in order of first appearance."""
        return list(dict.fromkeys(self.classes.tolist()))

    def of_class(self, name: str) -> np.ndarray:
        """The (k, d) embedding matrix of one class; KeyError naming the class if absent."""
        mask = self.classes == name
        if not mask.any():
            raise KeyError(f"class {name!r} not in embeddings (have: {', '.join(self.class_names)})")
        return self.embeddings[mask]

    def by_class(self) -> dict[str, np.ndarray]:
        """All classes as ``{name: (k, d) matrix}``."""
        return {name: self.of_class(name) for name in self.class_names}


def _check_finite(path, ids: np.ndarray, emb: np.ndarray) -> None:
    if not np.isfinite(emb).all():
        bad = ids[~np.isfinite(emb).all(axis=1)]
        raise ValueError(f"{path}: non-finite embeddings for images {', '.join(bad[:5])}")


def write_embeddings(
    path: str | os.PathLike,
    image_ids,
    classes,
    embeddings: np.ndarray,
    metadata: dict | None = None,
) -> None:
    """Write embeddings atomically to ``path`` (Parquet, zstd)."""
    emb = np.asarray(embeddings, dtype=np.float32)
    ids = np.asarray(image_ids).astype(str)
    cls = np.asarray(classes).astype(str)
    if emb.ndim != 2:
        raise ValueError(f"{path}: embeddings must be 2-D (rows, dims), got shape {emb.shape}")
    if not (len(ids) == len(cls) == emb.shape[0]):
        raise ValueError(
            f"{path}: {len(ids)} image ids, {len(cls)} classes and {emb.shape[0]} embeddings differ in length"
        )
    _check_finite(path, ids, emb)
    dim = emb.shape[1]
    flat = pa.array(emb.reshape(-1), type=pa.float32())
    table = pa.table(
        {
            "image_id": pa.array(ids, type=pa.string()),
            "class": pa.array(cls, type=pa.string()),
            "embedding": pa.FixedSizeListArray.from_arrays(flat, dim),
        }
    )
    meta = dict(metadata or {})
    meta.setdefault("dim", dim)
    table = table.replace_schema_metadata({METADATA_KEY: json.dumps(meta, sort_keys=True).encode()})
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def read_metadata(path: str | os.PathLike) -> dict:
    """The provenance metadata of an embeddings file (empty if it has none)."""
    raw = (pq.read_schema(path).metadata or {}).get(METADATA_KEY)
    return json.loads(raw) if raw else {}


def read_embeddings(path: str | os.PathLike) -> EmbeddingTable:
    """Read and validate an embeddings file; errors name the file and the problem."""
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise ValueError(f"{path}: not a readable Parquet file ({exc})") from exc
    missing = [c for c in COLUMNS if c not in table.column_names]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)}; expected {', '.join(COLUMNS)}")
    col = table.column("embedding").combine_chunks()
    if pa.types.is_fixed_size_list(col.type):
        dim = col.type.list_size
        emb = col.flatten().to_numpy(zero_copy_only=False).reshape(-1, dim)
    elif pa.types.is_list(col.type) or pa.types.is_large_list(col.type):
        rows = col.to_pylist()
        lengths = {len(r) for r in rows if r is not None}
        if None in rows or len(lengths) > 1:
            raise ValueError(f"{path}: column 'embedding' has missing rows or rows of different lengths {sorted(lengths)}")
        emb = np.asarray(rows, dtype=np.float32)
    else:
        raise ValueError(f"{path}: column 'embedding' must be a list of floats, got {col.type}")
    emb = emb.astype(np.float32, copy=False)
    ids = np.asarray(table.column("image_id").to_pylist(), dtype=object).astype(str)
    cls = np.asarray(table.column("class").to_pylist(), dtype=object).astype(str)
    _check_finite(path, ids, emb)
    raw = (table.schema.metadata or {}).get(METADATA_KEY)
    return EmbeddingTable(ids, cls, emb, json.loads(raw) if raw else {})
