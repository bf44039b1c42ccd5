"""The ``attribute`` column of a ``kind: table`` dataset's table: its values checked against the ones the
entry declares (``attributes``), by every reader of the column and by the config check, and how a problem
names a table's rows (:func:`row_name`)."""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

SHOWN = 20  # rows named per problem; the rest are counted


def row_name(i: int, path: str | None, table: str | os.PathLike) -> str:
    """How a problem names row ``i`` (0-based) of ``table``: the line an editor shows it on for a CSV (the
    header is line 1), its 1-based number in a Parquet table; and the path as written."""
    where = f"line {i + 2}" if Path(table).suffix.lower() == ".csv" else f"row {i + 1}"
    return where if path is None else f"{where} ({path!r})"


def attribute_cell(value) -> str:
    """An ``attribute`` cell as text, stripped ('' for an empty or missing one: no attribute)."""
    return "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value).strip()


def named_rows(rows: Sequence[int], paths: pd.Series, table: str | os.PathLike) -> str:
    """The first :data:`SHOWN` of ``rows`` as :func:`row_name` names them, and how many more there are."""
    named = ", ".join(row_name(i, paths.iloc[i], table) for i in rows[:SHOWN])
    return named + (f" and {len(rows) - SHOWN} more" if len(rows) > SHOWN else "")


def attribute_problems(dataset: Mapping, frame: pd.DataFrame, key: str) -> list[str]:
    """What is wrong with the ``attribute`` column of a ``kind: table`` dataset's table (``frame``, read with
    its ``path`` column) against the values its entry declares in ``attributes`` (``key``: how the problems
    name that entry): a column without declared values, values declared for a table without the column, and
    each value outside them, with the table, every line (row) that holds it and the closest declared value.
    An empty cell is no attribute, never a problem here. Every reader of the column checks it with this, so
    that a typo (``mann``) is an error, not a group of its own."""
    table, declared = dataset["table"], list(dataset.get("attributes") or [])
    if "attribute" not in frame.columns:
        return [f"{key}: declared, but table {table} has no 'attribute' column"] if declared else []
    cells = [attribute_cell(v) for v in frame["attribute"]]
    if not declared:
        found = sorted(set(cells) - {""})
        shown = ", ".join(map(repr, found[:SHOWN])) + (f" and {len(found) - SHOWN} more" if len(found) > SHOWN else "")
        return [
            f"{key}: not set, but table {table} has an 'attribute' column (values found: {shown or 'none'}); "
            "declare the values it may hold, e.g. attributes: [man, woman]"
        ]
    rows: dict[str, list[int]] = {}
    for i, value in enumerate(cells):
        if value and value not in declared:
            rows.setdefault(value, []).append(i)
    paths, problems = frame["path"].astype(str).str.strip(), []
    for value, found in rows.items():
        close = difflib.get_close_matches(value, declared, n=1, cutoff=0.5)
        problems.append(
            f"{table}, {named_rows(found, paths, table)}: attribute {value!r} is not one of {key} "
            f"({', '.join(declared)})" + (f"; did you mean {close[0]!r}?" if close else "")
        )
    return problems


def empty_attribute_problems(where: str, table: str | os.PathLike, frame: pd.DataFrame, rows: np.ndarray) -> list[str]:
    """The rows of ``frame`` (a mask) without an attribute, named with ``where`` and the table: every training
    row of a table that an intervention takes needs one (it rebalances each by its attribute)."""
    empty = [i for i in np.flatnonzero(rows) if not attribute_cell(frame["attribute"].iloc[i])]
    if not empty:
        return []
    paths = frame["path"].astype(str).str.strip()
    return [
        f"{where}: table {table}, {named_rows(empty, paths, table)}: empty 'attribute' cell on a training row (an "
        "intervention rebalances every training row by its attribute)"
    ]
