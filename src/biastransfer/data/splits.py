"""Finetuning splits: Parquet tables of (image_id, path, labels) with the ordered class list.

The class order in the file metadata is the order of the classifier's outputs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from biastransfer.atomic import atomic_path

METADATA_KEY = b"biastransfer"
COLUMNS = ("image_id", "path", "labels")


@dataclass(frozen=True)
class Split:
    """One split of a dataset: its rows and the classes its labels index into."""

    dataset: str
    name: str
    classes: tuple[str, ...]
    frame: pd.DataFrame


def write_split(path: str | os.PathLike, split: Split) -> None:
    """Validate and write a split atomically."""
    check_split(split, where=str(path))
    table = pa.table(
        {
            "image_id": pa.array(split.frame["image_id"].astype(str).tolist(), type=pa.string()),
            "path": pa.array(split.frame["path"].astype(str).tolist(), type=pa.string()),
            "labels": pa.array([list(map(str, v)) for v in split.frame["labels"]], type=pa.list_(pa.string())),
        }
    )
    write_tagged(path, table, {"dataset": split.dataset, "split": split.name, "classes": list(split.classes)})


def write_tagged(path: str | os.PathLike, table: pa.Table, meta: dict) -> None:
    """Write ``table`` atomically (Parquet, zstd) with ``meta`` as its ``biastransfer`` JSON metadata (the
    split and attribute files)."""
    table = table.replace_schema_metadata({METADATA_KEY: json.dumps(meta).encode()})
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def read_tagged(path: str | os.PathLike, columns, *, what: str, holding: str) -> tuple[pd.DataFrame, dict]:
    """``(frame of the present ``columns``, metadata)`` of a file :func:`write_tagged` wrote; ValueError naming
    the file when it is not a readable ``what`` or has no metadata (with ``holding``)."""
    try:
        names = pq.read_schema(path).names
        table = pq.read_table(path, columns=[c for c in columns if c in names])
    except (OSError, pa.ArrowInvalid) as exc:
        raise ValueError(f"{path}: not a readable {what} ({exc})") from exc
    raw = (table.schema.metadata or {}).get(METADATA_KEY)
    if not raw:
        raise ValueError(f"{path}: no 'biastransfer' metadata with {holding}")
    frame = pd.DataFrame({c: table.column(c).to_pylist() for c in columns if c in table.column_names})
    return frame, json.loads(raw)


def read_split(path: str | os.PathLike) -> Split:
    """Read and validate a split; errors name the file."""
    frame, meta = read_tagged(path, COLUMNS, what="split file", holding="the class list")
    split = Split(meta.get("dataset", ""), meta.get("split", ""), tuple(meta.get("classes", ())), frame)
    check_split(split, where=str(path))
    return split


def read_split_columns(path: str | os.PathLike, columns: Sequence[str]) -> pd.DataFrame:
    """Some of a split file's columns, as written (``image_id`` for a leakage check: a fraction of
    :func:`read_split`'s memory for the 1.7M images of Open Images' train split, whose labels it leaves
    unread); errors name the file and the column."""
    unknown = [c for c in columns if c not in COLUMNS]
    if unknown:
        raise ValueError(
            f"{path}: a split file has no column(s) {', '.join(unknown)} (its columns: {', '.join(COLUMNS)})"
        )
    frame, _ = read_tagged(path, columns, what="split file", holding="the class list")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)}")
    return frame


def check_split(split: Split, *, where: str) -> None:
    """Raise ValueError naming the file and problem if a split is malformed."""
    missing = [c for c in COLUMNS if c not in split.frame.columns]
    if missing:
        raise ValueError(f"{where}: missing column(s) {', '.join(missing)}")
    if not split.classes:
        raise ValueError(f"{where}: empty class list")
    if split.frame.empty:
        raise ValueError(f"{where}: no images")
    dup = split.frame["image_id"][split.frame["image_id"].duplicated()]
    if not dup.empty:
        raise ValueError(f"{where}: duplicate image id(s) {', '.join(map(str, dup.iloc[:5]))}")
    known = set(split.classes)
    for image_id, labels in zip(split.frame["image_id"], split.frame["labels"]):
        unknown = set(labels) - known
        if unknown:
            raise ValueError(f"{where}: image {image_id!r} has label(s) {sorted(unknown)} not in the class list")
