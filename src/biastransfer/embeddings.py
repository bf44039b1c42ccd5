"""The embeddings Parquet format: one row per (image, analysis class), with provenance metadata.

Columns: ``image_id`` (string), ``class`` (string), ``embedding`` (fixed_size_list<float32>[d]).
File-level metadata key ``biastransfer`` holds a JSON object (model, stage, weights sha256, layer,
preprocessing, config hash, library versions, ...). Users who bring their own embeddings write the
same three columns; the metadata is optional for them.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from biastransfer.atomic import atomic_path

METADATA_KEY = b"biastransfer"
COLUMNS = ("image_id", "class", "embedding")
_BATCH_ROWS = 4096  # rows converted at a time: a 4096 x 2048 list<double> batch is 64 MB
_EPOCH_FILE = re.compile(r"^epoch(?P<epoch>[0-9]+)\.parquet$")


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


def open_parquet(path: str | os.PathLike) -> pq.ParquetFile:
    """The Parquet file at ``path``; FileNotFoundError or ValueError naming it if there is none."""
    if not os.path.lexists(path):
        raise FileNotFoundError(f"{path}: no such file")
    if os.path.isdir(path):
        raise ValueError(f"{path}: is a directory, not an embeddings file")
    try:
        return pq.ParquetFile(path, buffer_size=1 << 22, pre_buffer=False)
    except (OSError, pa.ArrowException) as exc:
        raise ValueError(f"{path}: not a readable Parquet file ({exc})") from exc


def read_metadata(path: str | os.PathLike) -> dict:
    """The provenance metadata of an embeddings file (empty if it has none); errors name the file."""
    raw = (open_parquet(path).schema_arrow.metadata or {}).get(METADATA_KEY)
    return json.loads(raw) if raw else {}


def string_column(path, column: pa.ChunkedArray, name: str) -> np.ndarray:
    """A string column as a numpy array; ValueError naming the first null row."""
    if column.null_count:
        row = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
        raise ValueError(f"{path}: column {name!r} is null in row {row} ({column.null_count} null row(s) in all)")
    return column.to_numpy(zero_copy_only=False).astype(str)


def check_unique_ids(path, ids: np.ndarray) -> None:
    """ValueError naming ``path``, the first repeated image id and its rows, if any id repeats."""
    values, first, counts = np.unique(ids, return_index=True, return_counts=True)
    if (counts > 1).any():
        dup = values[counts > 1]
        worst = dup[np.argmin(first[counts > 1])]
        rows = np.flatnonzero(ids == worst)[:5].tolist()
        raise ValueError(
            f"{path}: column 'image_id' repeats {str(worst)!r} (rows {', '.join(map(str, rows))}); "
            f"{len(dup)} duplicated id(s) in all"
        )


def _embedding_dim(path, pf: pq.ParquetFile) -> int | None:
    """The fixed length of the embedding lists (None: variable-length lists, found while reading)."""
    kind = pf.schema_arrow.field("embedding").type
    if pa.types.is_fixed_size_list(kind):
        dim = kind.list_size
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind):
        dim = None
    else:
        raise ValueError(f"{path}: column 'embedding' must be a list of floats, got {kind}")
    if not (pa.types.is_floating(kind.value_type) or pa.types.is_integer(kind.value_type)):
        raise ValueError(f"{path}: column 'embedding' must be a list of floats, got {kind}")
    return dim


def _embedding_blocks(path, pf: pq.ParquetFile, ids: np.ndarray):
    """``(first row, (rows, d) float32 block)`` of the embedding column, batch by batch (a list<double>
    column never exists whole as float64 or Python lists); errors name the row and its image."""
    dim, row = _embedding_dim(path, pf), 0
    for batch in pf.iter_batches(batch_size=_BATCH_ROWS, columns=["embedding"], use_threads=False):
        col = batch.column(0)
        if col.null_count:
            bad = row + int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
            raise ValueError(f"{path}: column 'embedding' is null in row {bad} (image {str(ids[bad])!r})")
        if not pa.types.is_fixed_size_list(col.type):
            lengths = pc.list_value_length(col).to_numpy(zero_copy_only=False)
            dim = int(lengths[0]) if dim is None else dim
            if (lengths != dim).any():
                bad = int(np.flatnonzero(lengths != dim)[0])
                raise ValueError(
                    f"{path}: column 'embedding' has {lengths[bad]} values in row {row + bad} "
                    f"(image {str(ids[row + bad])!r}) but {dim} in row 0"
                )
        values = col.flatten()
        if values.null_count:
            bad = row + int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0]) // max(dim, 1)
            raise ValueError(f"{path}: column 'embedding' holds a null value in row {bad} (image {str(ids[bad])!r})")
        if dim == 0:
            raise ValueError(f"{path}: column 'embedding' has empty lists (0 dims)")
        yield row, values.to_numpy(zero_copy_only=False).reshape(len(col), dim).astype(np.float32, copy=False)
        row += len(col)
        del batch, col, values


def _embedding_matrix(path, pf: pq.ParquetFile, ids: np.ndarray, keep: np.ndarray | None = None) -> np.ndarray:
    """The embedding column as an (n, d) float32 matrix (with ``keep``, a mask over the rows, only those
    rows, in file order)."""
    out, filled = None, 0
    for row, block in _embedding_blocks(path, pf, ids):
        if out is None:
            out = np.empty((len(ids) if keep is None else int(keep.sum()), block.shape[1]), dtype=np.float32)
        if keep is not None:
            block = block[keep[row : row + len(block)]]
        out[filled : filled + len(block)] = block
        filled += len(block)
    return out


def _checked_columns(path, pf: pq.ParquetFile) -> tuple[np.ndarray, np.ndarray]:
    """(image ids, classes) of an embeddings file whose columns and rows are there, ids unique."""
    missing = [c for c in COLUMNS if c not in pf.schema_arrow.names]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)}; expected {', '.join(COLUMNS)}")
    if pf.metadata.num_rows == 0:
        raise ValueError(f"{path}: no rows (an embeddings file needs at least one image)")
    labels = pf.read(columns=["image_id", "class"])
    ids = string_column(path, labels.column("image_id"), "image_id")
    cls = string_column(path, labels.column("class"), "class")
    check_unique_ids(path, ids)
    return ids, cls


def read_embeddings(path: str | os.PathLike) -> EmbeddingTable:
    """Read and validate an embeddings file; errors name the file, the column and the row.

    Rejected: a missing file, a directory, a file that is not Parquet, missing columns, no rows, null
    ids, classes, embedding rows or values, embedding rows of different lengths, repeated image ids
    and non-finite values.
    """
    pf = open_parquet(path)
    try:
        ids, cls = _checked_columns(path, pf)
        emb = _embedding_matrix(path, pf, ids)
    except (OSError, pa.ArrowException) as exc:
        raise ValueError(f"{path}: not a readable Parquet file ({exc})") from exc
    _check_finite(path, ids, emb)
    raw = (pf.schema_arrow.metadata or {}).get(METADATA_KEY)
    return EmbeddingTable(ids, cls, emb, json.loads(raw) if raw else {})


def checked_embedding_ids(path: str | os.PathLike) -> np.ndarray:
    """The image ids of an embeddings file, every row checked as :func:`read_embeddings` checks it, batch by
    batch: its matrix is never held whole (a check of many large files before any of them is used)."""
    pf = open_parquet(path)
    try:
        ids, _ = _checked_columns(path, pf)
        for row, block in _embedding_blocks(path, pf, ids):
            _check_finite(path, ids[row : row + len(block)], block)
    except (OSError, pa.ArrowException) as exc:
        raise ValueError(f"{path}: not a readable Parquet file ({exc})") from exc
    return ids


def read_embedding_rows(path: str | os.PathLike, image_ids) -> np.ndarray:
    """The (len(image_ids), d) float32 embeddings of ``image_ids``, in that order, from an embeddings file,
    read batch by batch keeping only their rows (a fraction of :func:`read_embeddings`' memory when they
    are a fraction of the file, as an evaluation split's images with an attribute); errors name the file
    and the first image it lacks."""
    pf = open_parquet(path)
    wanted = np.asarray(image_ids).astype(str)
    try:
        ids = string_column(path, pf.read(columns=["image_id"]).column("image_id"), "image_id")
        check_unique_ids(path, ids)
        position = dict(zip(ids.tolist(), range(len(ids))))
        missing = [i for i in wanted.tolist() if i not in position]
        if missing:
            raise ValueError(f"{path}: no embedding of image {missing[0]!r}")
        rows = np.array([position[i] for i in wanted.tolist()], dtype=np.int64)
        keep = np.zeros(len(ids), dtype=bool)
        keep[rows] = True
        kept = _embedding_matrix(path, pf, ids, keep)  # the kept rows in file order
    except (OSError, pa.ArrowException) as exc:
        raise ValueError(f"{path}: not a readable Parquet file ({exc})") from exc
    out = kept[np.searchsorted(np.flatnonzero(keep), rows)]
    _check_finite(path, wanted, out)
    return out


def epoch_file(epoch: int) -> str:
    """File name of one trajectory epoch's embeddings (``epoch03.parquet``; two digits at least, so that
    names sort by epoch)."""
    return f"epoch{epoch:02d}.parquet"


def epoch_files(folder: str | os.PathLike) -> dict[int, Path]:
    """``{epoch: path}`` of the trajectory epoch files in ``folder``, sorted by epoch."""
    found = {}
    for path in Path(folder).iterdir():
        match = _EPOCH_FILE.match(path.name)
        if match:
            found[int(match["epoch"])] = path
    return dict(sorted(found.items()))
