"""Your own images: the evaluation split of a ``kind: table`` dataset (its ``split: test`` rows) and each of
its images' protected attribute (the table's ``attribute`` column, every value one of the entry's declared
``attributes``), for the predictions
(docs/datasets.md, "Evaluation splits"); and that of each image of its training split, for an intervention
(docs/finetuning.md). The train and val splits are :func:`biastransfer.data.user.table_splits`.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from biastransfer.data.splits import Split
from biastransfer.data.table_attributes import attribute_cell, attribute_problems, row_name
from biastransfer.data.user import Table, UserDataError, checked_rows, is_test_row, missing_columns, read_table


def has_test_split(dataset: Mapping) -> bool:
    """Whether a ``kind: table`` dataset's table has rows with ``split: test`` (an evaluation split)."""
    frame = read_table(dataset["table"])
    return bool(is_test_row(frame).any())


#: Where a table dataset's attribute comes from (the attribute file's ``source`` column).
TABLE_ATTRIBUTE_SOURCE = "the table's attribute column"


def table_test_split(dataset: Mapping, name: str, exclude: set[str] = frozenset()) -> Split:
    """The evaluation split of a ``kind: table`` dataset: its rows with ``split: test`` (which need an
    ``attribute`` column, see :func:`table_attributes`), less the image ids in ``exclude``."""
    frame, rows, classes, where = checked_rows(dataset, name)
    if "attribute" not in frame.columns:
        raise UserDataError(where, ["rows with split 'test' need an 'attribute' column (empty: no attribute)"])
    mask = is_test_row(frame) & ~rows["image_id"].isin(exclude).to_numpy()
    part = rows.loc[mask, ["image_id", "path", "labels"]].reset_index(drop=True)
    if part.empty:
        raise UserDataError(where, ["no rows with split 'test' (outside the analysis sets)"])
    return Split(name, "test", classes, part)


def _attribute_table(dataset: Mapping, name: str, where: str) -> pd.DataFrame:
    """The table of a ``kind: table`` dataset with its ``path`` and ``attribute`` columns, every attribute
    value one of the declared ``attributes`` (:func:`~biastransfer.data.table_attributes.attribute_problems`), else
    UserDataError naming ``where`` and each problem."""
    frame = read_table(dataset["table"])
    missing_columns(frame, ("path", "attribute"), where)
    problems = attribute_problems(dataset, frame, f"datasets.{name}.attributes")
    if problems:
        raise UserDataError(where, problems)
    return frame


def declared_present(dataset: Mapping, values) -> tuple[str, ...]:
    """The declared ``attributes`` of a table dataset that ``values`` hold, in the declared order."""
    present = set(values)
    return tuple(a for a in dataset["attributes"] if a in present)


def table_attributes(dataset: Mapping, name: str, image_ids) -> pd.DataFrame:
    """(image_id, attribute, source) of the ``image_ids`` of a table dataset's evaluation split from its
    ``attribute`` column; an empty cell is no attribute (counted and excluded). UserDataError naming the
    table and the image for an id the table does not list with split test, and the table, the lines and the
    value for a value the entry does not declare (anywhere in the table)."""
    where = f"dataset {name} table {dataset['table']}"
    frame = _attribute_table(dataset, name, where)
    raw = frame["path"].astype(str).str.strip()
    ids = frame["image_id"].astype(str) if "image_id" in frame.columns else raw
    test = is_test_row(frame)
    values = dict(zip(ids[test], frame["attribute"][test]))
    missing = [i for i in map(str, image_ids) if i not in values]
    if missing:
        raise UserDataError(
            where, [f"image {i!r} of the evaluation split has no row with split 'test'" for i in missing[:20]]
        )
    rows = []
    for image_id in map(str, image_ids):
        value = attribute_cell(values[image_id])
        if value:
            rows.append((image_id, value, TABLE_ATTRIBUTE_SOURCE))
        else:
            rows.append((image_id, None, "the table's attribute column is empty; excluded"))
    return pd.DataFrame(rows, columns=["image_id", "attribute", "source"], dtype=object)


def table_train_attributes(dataset: Mapping, name: str, image_ids) -> pd.DataFrame:
    """(image_id, attribute, source) of the ``image_ids`` of a table dataset's training split from its
    ``attribute`` column. Unlike the evaluation split's, every training row needs one (what an intervention
    rebalances): UserDataError naming the table, the column, and each row (line, path, image) without one, or
    the lines and the value of a value the entry does not declare."""
    where = f"dataset {name} table {dataset['table']}: an intervention takes its training rows"
    frame = _attribute_table(dataset, name, where)
    raw = frame["path"].astype(str).str.strip()
    ids = frame["image_id"].astype(str) if "image_id" in frame.columns else raw
    row_of = {image_id: i for i, (image_id, test) in enumerate(zip(ids, is_test_row(frame))) if not test}
    wanted = list(map(str, image_ids))
    unlisted = [i for i in wanted if i not in row_of]
    if unlisted:
        raise UserDataError(where, [f"image {i!r} of the training split has no training row" for i in unlisted[:20]])
    values = {i: attribute_cell(frame["attribute"].iloc[row_of[i]]) for i in wanted}
    empty = [i for i in wanted if not values[i]]
    if empty:
        raise UserDataError(
            where,
            [
                f"{row_name(row_of[i], raw.iloc[row_of[i]], dataset['table'])}: image {i!r}: empty 'attribute' column"
                for i in empty[:20]
            ]
            + ([f"... and {len(empty) - 20} more"] if len(empty) > 20 else []),
        )
    return pd.DataFrame(
        [(i, values[i], TABLE_ATTRIBUTE_SOURCE) for i in wanted],
        columns=["image_id", "attribute", "source"],
        dtype=object,
    )


class TableKind(Table):
    """``kind: table`` with its evaluation split (the adapter of :data:`biastransfer.data.kinds.KINDS`)."""

    def test_split(self, dataset: Mapping, name: str, exclude: set[str]) -> Split:
        return table_test_split(dataset, name, exclude)

    def attribute_classes(self, split: Split, values: tuple) -> tuple[str, ...]:
        """The classes named like an attribute value (e.g. a ``woman`` label): left out of the measured tasks."""
        return tuple(c for c in split.classes if c in set(values))

    def test_attributes(self, dataset: Mapping, split: Split, words) -> tuple[tuple, pd.DataFrame]:
        """(the declared attribute values it holds, in their order; frame) of the evaluation split from the
        table's attribute column."""
        frame = table_attributes(dataset, split.dataset, split.frame["image_id"])
        return declared_present(dataset, frame["attribute"].dropna()), frame

    def train_attributes(self, dataset: Mapping, split: Split, words) -> tuple[tuple, pd.DataFrame]:
        """(the declared attribute values it holds, in their order; frame) of the training split from the
        table's attribute column."""
        frame = table_train_attributes(dataset, split.dataset, split.frame["image_id"])
        return declared_present(dataset, frame["attribute"]), frame
