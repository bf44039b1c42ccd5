"""Per-image protected attributes of an evaluation split: which group (e.g. person_a / person_b, man / woman)
each image shows, and where that comes from.

Parquet, one row per image of the split it describes: ``image_id`` (string), ``attribute`` (string, or
null: the image shows no one, so it has no attribute), ``source`` (string: how the attribute was found,
e.g. ``synthetic scene: drawn figure`` or ``caption words``). File metadata ``biastransfer``: ``dataset``,
``split``, ``split_sha256`` (the digest of the split file), ``attributes`` (the ordered attribute values)
and ``attribute_classes`` (the classifier classes that name the attribute or a person, e.g. ``person``:
left out of the tasks whose bias is measured). Every kind of dataset writes this one format
(docs/formats.md); the synthetic kind reads the figure it drew.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from biastransfer.data.splits import read_tagged, write_tagged

COLUMNS = ("image_id", "attribute", "source")


@dataclass(frozen=True)
class Attributes:
    """The protected attribute of every image of one split (``frame``: image_id, attribute, source)."""

    dataset: str
    split: str
    split_sha256: str
    attributes: tuple[str, ...]
    attribute_classes: tuple[str, ...]
    frame: pd.DataFrame

    def counts(self) -> dict[str, int]:
        """Images per attribute value, in :attr:`attributes` order, and ``None``: those without one."""
        values = self.frame["attribute"]
        return {a: int((values == a).sum()) for a in self.attributes} | {None: int(values.isna().sum())}

    def of(self, image_ids: Sequence[str], *, where: str) -> np.ndarray:
        """The attribute of each of ``image_ids`` (None where the image has none); ValueError naming ``where``
        and the first image that is not in this split's attribute file."""
        known = dict(zip(self.frame["image_id"], self.frame["attribute"]))
        missing = [i for i in image_ids if i not in known]
        if missing:
            raise ValueError(
                f"{where}: image {missing[0]!r} has no row in the attribute file of {self.dataset}/{self.split} "
                f"({len(missing)} image(s) without one); are they from another split?"
            )
        return np.asarray([None if pd.isna(known[i]) else known[i] for i in image_ids], dtype=object)


def check_attributes(attrs: Attributes, *, where: str) -> None:
    """Raise ValueError naming ``where`` and the image or value if an attribute file is malformed."""
    frame = attrs.frame
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{where}: missing column(s) {', '.join(missing)}; expected {', '.join(COLUMNS)}")
    if frame.empty:
        raise ValueError(f"{where}: no images")
    if len(attrs.attributes) < 2 or len(set(attrs.attributes)) != len(attrs.attributes):
        raise ValueError(f"{where}: needs at least 2 distinct attribute values, got {list(attrs.attributes)}")
    blank = frame["image_id"].isna() | (frame["image_id"].astype(str).str.strip() == "")
    if blank.any():
        raise ValueError(f"{where}: empty image_id in row {int(np.flatnonzero(blank)[0])}")
    dup = frame["image_id"][frame["image_id"].duplicated()]
    if not dup.empty:
        raise ValueError(f"{where}: image {dup.iloc[0]!r} appears more than once")
    given = frame["attribute"].dropna()
    unknown = given[~given.isin(attrs.attributes)]
    if not unknown.empty:
        row = unknown.index[0]
        raise ValueError(
            f"{where}: image {frame.loc[row, 'image_id']!r} has attribute {unknown.iloc[0]!r}, not one of "
            f"{', '.join(attrs.attributes)}"
        )
    no_source = frame["attribute"].notna() & (frame["source"].isna() | (frame["source"].astype(str) == ""))
    if no_source.any():
        raise ValueError(f"{where}: image {frame.loc[no_source.idxmax(), 'image_id']!r} has an attribute but no source")
    empty = [a for a, n in attrs.counts().items() if a is not None and n == 0]
    if empty:
        raise ValueError(f"{where}: no image has attribute {empty[0]!r}")


def write_attributes(path: str | os.PathLike, attrs: Attributes) -> None:
    """Validate and write an attribute file atomically."""
    check_attributes(attrs, where=str(path))
    table = pa.table(
        {
            "image_id": pa.array(attrs.frame["image_id"].astype(str).tolist(), type=pa.string()),
            "attribute": pa.array([None if pd.isna(v) else str(v) for v in attrs.frame["attribute"]], pa.string()),
            "source": pa.array([None if pd.isna(v) else str(v) for v in attrs.frame["source"]], pa.string()),
        }
    )
    write_tagged(
        path,
        table,
        {
            "dataset": attrs.dataset,
            "split": attrs.split,
            "split_sha256": attrs.split_sha256,
            "attributes": list(attrs.attributes),
            "attribute_classes": list(attrs.attribute_classes),
        },
    )


def read_attributes(path: str | os.PathLike) -> Attributes:
    """Read and validate an attribute file; errors name the file."""
    frame, meta = read_tagged(path, COLUMNS, what="attribute file", holding="the attribute values")
    attrs = Attributes(
        meta.get("dataset", ""),
        meta.get("split", ""),
        meta.get("split_sha256", ""),
        tuple(meta.get("attributes", ())),
        tuple(meta.get("attribute_classes", ())),
        frame,
    )
    check_attributes(attrs, where=str(path))
    return attrs
