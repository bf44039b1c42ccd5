"""Your own images: analysis sets from a folder or a table, finetuning datasets from a table.

A folder analysis set is ``<root>/<class>/<image>`` for every class of the config entry; a table (CSV or
Parquet) lists ``path`` and ``class`` (optional ``image_id``, ``source``, ``licence``). Both become the
manifest every other source writes (:mod:`biastransfer.data.manifest`), each image hashed and opened as
an image, with the reason ``"listed by the user"``. A table finetuning dataset lists ``path`` and
``labels`` (a list, or a string joined by ``label_separator``; optional ``image_id`` and ``split``) and
becomes two :class:`~biastransfer.data.splits.Split` files. Relative paths in a table are read from
the table's folder (or the entry's ``root``). Every problem found is reported at once, one line per
offending file or row (:class:`UserDataError`).
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image, UnidentifiedImageError

from biastransfer.data.manifest import COLUMNS, write_manifest
from biastransfer.data.splits import Split
from biastransfer.data.table_attributes import attribute_problems, empty_attribute_problems, row_name
from biastransfer.images import unsupported_mode

log = logging.getLogger(__name__)

IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp"})
REASON = "listed by the user"
_SOURCE_SPLIT = "user"
_ANALYSIS_COLUMNS = ("path", "class")
_DATASET_COLUMNS = ("path", "labels")
#: The values of a dataset table's split column, and the split each names.
SPLIT_NAMES = {"train": "train", "val": "val", "validation": "val", "test": "test"}
_BLOCK = 1 << 20


class UserDataError(ValueError):
    """Every problem found in a user's folder or table, one line each."""

    def __init__(self, where: str, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__(f"{where}: {len(self.problems)} problem(s):\n  " + "\n  ".join(self.problems))


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    """A CSV (every column as text) or Parquet table; ValueError naming the file if it cannot be read."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"table not found: {path}")
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            return pd.read_parquet(path)
        if path.suffix.lower() == ".csv":
            return pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable table ({exc})") from exc
    raise ValueError(f"{path}: a table must be .csv or .parquet")


def _table_base(entry: Mapping) -> Path:
    """The folder relative paths of a table are read from: the entry's ``root``, else the table's folder."""
    return Path(entry["root"]) if entry.get("root") else Path(entry["table"]).parent


def _resolve(path: str, base: Path) -> str:
    """``path`` as written when absolute, else below ``base`` (normalised, still relative if ``base`` is)."""
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(base, path))


def missing_columns(frame: pd.DataFrame, required: Iterable[str], where: str) -> None:
    """UserDataError naming the table (``where``) and the ``required`` columns it lacks, if any."""
    missing = [c for c in required if c not in frame.columns]
    if missing:
        has = ", ".join(map(str, frame.columns))
        raise UserDataError(where, [f"missing column(s) {', '.join(missing)}; has {has}"])


def config_problems(where: str, entry: Mapping, *, dataset: bool = False) -> list[str]:
    """What the config check can find cheaply: the folder and class folders exist, the table exists and
    has the required columns, its classes are the listed ones (analysis sets) or its labels are in
    ``classes`` (datasets, when given) and its attribute values are the declared ones
    (:func:`attribute_problems`). Per-file checks are the manifest / split rules' job."""
    if "table" not in entry:
        root = Path(entry["root"])
        if not root.is_dir():
            return [f"{where}.root: folder not found: {root}"]
        return [
            f"{where}.classes: class folder not found: {root / c}" for c in entry["classes"] if not (root / c).is_dir()
        ]
    try:
        frame = read_table(entry["table"])
        missing_columns(frame, _DATASET_COLUMNS if dataset else _ANALYSIS_COLUMNS, str(entry["table"]))
    except (OSError, ValueError) as exc:  # not found (FileNotFoundError), unreadable, columns missing
        return [f"{where}.table: {exc}"]
    if dataset:
        separator = entry.get("label_separator", "|")
        labels = _label_lists(frame["labels"], separator)
        problems = _label_problems(
            frame["labels"], separator, frame["path"], f"{where}.classes", entry.get("classes"), entry["table"]
        )
        known = set(entry.get("classes") or [])
        return (
            [f"{where}.table: {p}" for p in problems]
            + [
                f"{where}.table: {row_name(i, p, entry['table'])}: label(s) {sorted(set(ls) - known)} not in {where}.classes"
                for i, (p, ls) in enumerate(zip(frame["path"], labels))
                if known and set(ls) - known
            ]
            + attribute_problems(entry, frame, f"{where}.attributes")
        )
    listed, present = set(entry["classes"]), set(frame["class"])
    return [
        f"{where}.table: {row_name(i, p, entry['table'])}: class {c!r} is not in {where}.classes"
        for i, (p, c) in enumerate(zip(frame["path"], frame["class"]))
        if c not in listed
    ] + [f"{where}.classes: class {c!r} has no rows in {entry['table']}" for c in entry["classes"] if c not in present]


def intervention_classes(where: str, entry: Mapping) -> tuple[tuple[str, ...] | None, list[str]]:
    """(the classes of a ``kind: table`` dataset that an intervention takes: its ``classes``, else the labels
    its table lists; the problems: no ``attribute`` column, a training row with an empty one). None, no
    problem: an unreadable table, which :func:`config_problems` names (as it names a value that is not
    declared, :func:`attribute_problems`)."""
    try:
        frame = read_table(entry["table"])
        missing_columns(frame, _DATASET_COLUMNS, str(entry["table"]))
    except (OSError, ValueError):
        return None, []
    if "attribute" not in frame.columns:
        return None, [
            f"{where}: table {entry['table']} has no 'attribute' column (each training row's protected "
            "attribute, which an intervention rebalances and a mitigation arm's groups need)"
        ]
    labels = _label_lists(frame["labels"], entry.get("label_separator", "|"))
    problems = empty_attribute_problems(where, entry["table"], frame, ~_is_val(frame, entry) & ~is_test_row(frame))
    return tuple(entry.get("classes") or sorted({x for ls in labels for x in ls})), problems


def _folder_entries(root: str | os.PathLike, classes: Sequence[str]) -> tuple[pd.DataFrame, list[str]]:
    """One row per image file in ``<root>/<class>/`` (hidden files skipped), and the problems found:
    a missing or empty class folder, a file without an image suffix, a nested folder."""
    root = Path(root)
    if not root.is_dir():
        raise UserDataError(str(root), ["folder not found"])
    rows, problems = [], []
    for cls in classes:
        folder = root / cls
        if not folder.is_dir():
            problems.append(f"class {cls!r}: folder not found: {folder}")
            continue
        n = 0
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            path = os.path.join(root, cls, entry.name)
            if entry.name.startswith("."):
                continue
            try:
                is_dir = entry.is_dir()
                os.stat(path)  # a symlink loop or a dangling link: named with the folder's other problems
            except OSError as exc:
                problems.append(f"class {cls!r}: cannot be read: {path} ({exc.strerror})")
                continue
            if is_dir:
                problems.append(f"class {cls!r}: nested folder (not read): {path}")
            elif Path(entry.name).suffix.lower() not in IMAGE_SUFFIXES:
                problems.append(f"class {cls!r}: not an image file: {path}")
            else:
                rows.append((f"{cls}/{entry.name}", cls, path, "", "", ""))
                n += 1
        if n == 0:
            problems.append(f"class {cls!r}: no images in {folder}")
    return pd.DataFrame(rows, columns=["image_id", "class", "path", "source", "licence", "listed"]), problems


def _table_entries(entry: Mapping) -> tuple[pd.DataFrame, list[str]]:
    """The rows of an analysis-set table with resolved paths, and the problems found: a class not in
    the list, an empty path, a path listed twice (in one class or in two), an image id used twice."""
    where = str(entry["table"])
    frame = read_table(entry["table"])
    missing_columns(frame, _ANALYSIS_COLUMNS, where)
    base = _table_base(entry)
    raw = frame["path"].astype(str).str.strip()
    out = pd.DataFrame(
        {
            "image_id": frame["image_id"].astype(str) if "image_id" in frame.columns else raw,
            "class": frame["class"].astype(str),
            "path": [_resolve(p, base) if p else "" for p in raw],
            "source": frame["source"].astype(str) if "source" in frame.columns else "",
            "licence": frame["licence"].astype(str) if "licence" in frame.columns else "",
            "listed": [row_name(i, p, where) for i, p in enumerate(raw)],
        }
    )
    listed = set(entry["classes"])
    problems = [
        f"{row_name(i, p, where)}: class {c!r} is not in the class list"
        for i, (p, c) in enumerate(zip(raw, out["class"]))
        if c not in listed
    ]
    problems += [f"class {c!r}: no rows in the table" for c in entry["classes"] if c not in set(out["class"])]
    problems += [f"{row_name(i, p, where)}: empty path" for i, p in enumerate(raw) if not p]
    problems += _repeats(out, where)
    return out, problems


def _repeats(out: pd.DataFrame, table: str | os.PathLike) -> list[str]:
    """A path listed twice (in one class or in two), an image id used twice; rows named as :func:`_row`."""
    problems = []
    out = out[out["path"].duplicated(keep=False) | out["image_id"].duplicated(keep=False)]
    for path, rows in out[out["path"] != ""].groupby("path", sort=True).groups.items():
        if len(rows) > 1:
            where = ", ".join(row_name(i, None, table) for i in sorted(rows))
            classes = sorted(set(out.loc[rows, "class"]))
            what = f"listed in {len(classes)} classes ({', '.join(classes)})" if len(classes) > 1 else "duplicate path"
            problems.append(f"{path}: {what}: {where}")
    for image_id, rows in out.groupby("image_id", sort=True).groups.items():
        if len(rows) > 1:
            where = ", ".join(row_name(i, None, table) for i in sorted(rows))
            problems.append(f"image id {image_id!r} used more than once: {where}")
    return problems


def _file_problems(entries: pd.DataFrame, why: Sequence[str | None]) -> list[str]:
    """``<path>: <problem>`` for each file with one, and the table row that lists it (tables only)."""
    return [
        f"{p}: {w}" + (f" ({listed})" if listed else "")
        for p, listed, w in zip(entries["path"], entries["listed"], why)
        if w
    ]


def _image_problem(head: bytes, path: str) -> str | None:
    """None if Pillow recognises an image of non-empty size in a pixel mode that decodes to 8-bit RGB
    (header only: from the first bytes, else the file), else the problem."""
    for source in (io.BytesIO(head), path):
        try:
            with Image.open(source) as im:
                if im.width > 0 and im.height > 0:
                    return unsupported_mode(im.mode)
                break
        except (UnidentifiedImageError, Image.DecompressionBombError, OSError, SyntaxError, ValueError):
            if len(head) < _BLOCK:
                break
    return "not a readable image"


def _inspect_file(path: str) -> tuple[str, str | None]:
    """(sha256, problem or None) of one file: read once, hashed, its header opened as an image."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return "", "file not found"
    except OSError as exc:
        return "", f"unreadable ({exc.strerror or exc})"
    try:
        head = os.read(fd, _BLOCK)
        digest = hashlib.sha256(head)
        while len(head) == _BLOCK and (block := os.read(fd, _BLOCK)):
            digest.update(block)
    except OSError as exc:
        return "", f"unreadable ({exc.strerror or exc})"
    finally:
        os.close(fd)
    return digest.hexdigest(), _image_problem(head, path)


def _parallel_map(func: Callable[[str], tuple], items: Sequence[str], workers: int) -> list[tuple]:
    """``func`` over ``items`` in order, with ``workers`` threads (1: in this thread; threads help on
    network file systems, where each read waits on the server)."""
    if workers <= 1 or len(items) < 2:
        return [func(x) for x in items]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(func, items, chunksize=64))


def _build_manifest(
    entries: pd.DataFrame,
    problems: Sequence[str],
    *,
    min_per_class: int = 2,
    workers: int = 1,
    where: str = "analysis set",
) -> pd.DataFrame:
    """Hash and open every listed file, then raise UserDataError naming every problem (those passed in,
    missing or unreadable files, one image in two classes or twice in one, classes below
    ``min_per_class``) or return the manifest."""
    problems = list(problems)
    inspected = _parallel_map(_inspect_file, entries["path"].tolist(), workers)
    digests = [d for d, _ in inspected]
    problems += _file_problems(entries, [why for _, why in inspected])
    sha = pd.Series(digests, index=entries.index)
    repeated = sha.duplicated(keep=False) & (sha != "")
    for digest, rows in entries[repeated].groupby(sha[repeated], sort=True).groups.items():
        if len(rows) > 1 and entries.loc[rows, "path"].nunique() > 1:
            files = ", ".join(f"{p} ({c})" for p, c in zip(entries.loc[rows, "path"], entries.loc[rows, "class"]))
            problems.append(f"the same image (sha256 {digest[:12]}) is listed as: {files}")
    sizes = entries.groupby("class").size()
    problems += [
        f"class {c!r}: {n} image(s), at least {min_per_class} needed" for c, n in sizes.items() if 0 < n < min_per_class
    ]
    if problems:
        raise UserDataError(where, problems)
    source = [
        " ".join(x for x in (s, f"licence: {lic}" if lic else "") if x)
        for s, lic in zip(entries["source"], entries["licence"])
    ]
    return pd.DataFrame(
        {
            "image_id": entries["image_id"].astype(str),
            "class": entries["class"],
            "path": entries["path"],
            "sha256": digests,
            "source_split": _SOURCE_SPLIT,
            "source": source,
            "reason": REASON,
        }
    ).loc[:, list(COLUMNS)]


def analysis_set_manifest(
    analysis_set: Mapping, manifest: str | os.PathLike, *, workers: int | None = None
) -> pd.DataFrame:
    """Build, check and write the manifest of a ``source: folder | table`` analysis set."""
    source = analysis_set["source"]
    if source == "folder":
        entries, problems = _folder_entries(analysis_set["root"], analysis_set["classes"])
        where = f"analysis set folder {analysis_set['root']}"
    elif source == "table":
        entries, problems = _table_entries(analysis_set)
        where = f"analysis set table {analysis_set['table']}"
    else:
        raise ValueError(f"analysis set source {source!r}: expected 'folder' or 'table'")
    min_per_class = int(analysis_set.get("min_per_class", 2))
    frame = _build_manifest(
        entries,
        problems,
        min_per_class=min_per_class,
        workers=int(workers or analysis_set.get("workers", 1)),
        where=where,
    )
    write_manifest(manifest, frame, min_per_class=min_per_class)
    return frame


def _label_lists(column: pd.Series, separator: str) -> list[list[str]]:
    """Labels per row: list-likes as they are, strings split on ``separator``; blanks dropped."""
    out = []
    for value in column:
        items = value.split(separator) if isinstance(value, str) else list(value)
        out.append([s for s in (str(x).strip() for x in items) if s])
    return out


def _label_problems(
    column: pd.Series, separator: str, paths: Sequence[str], key: str, classes, table: str | os.PathLike
) -> list[str]:
    """Rows with an empty label (``kite||boat``, a trailing separator; an empty cell is no label) and,
    when ``classes`` is not given (the classes are the labels found), each label on one row only: a typo
    there would silently become a class of one image."""
    paths, problems = list(paths), []
    for i, (path, value) in enumerate(zip(paths, column)):
        if isinstance(value, str):
            items = value.split(separator) if value.strip() else []
        else:
            items = list(value)
        if any(not str(x).strip() for x in items):
            problems.append(
                f"{row_name(i, path, table)}: empty label in {value if isinstance(value, str) else items!r}"
            )
    if not classes:
        rows: dict[str, list[int]] = {}
        for i, labels in enumerate(_label_lists(column, separator)):
            for label in dict.fromkeys(labels):
                rows.setdefault(label, []).append(i)
        problems += [
            f"label {label!r} is on {row_name(found[0], paths[found[0]], table)} only; list it in {key} to keep it as a class"
            for label, found in sorted(rows.items())
            if len(found) == 1
        ]
    return problems


def _check_image(path: str) -> tuple[str | None]:
    """(problem or None,) of one finetuning image: it exists and its header opens as an image."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_BLOCK)
    except FileNotFoundError:
        return ("file not found",)
    except OSError as exc:
        return (f"unreadable ({exc.strerror or exc})",)
    return (_image_problem(head, path),)


def checked_rows(dataset: Mapping, name: str) -> tuple[pd.DataFrame, pd.DataFrame, tuple[str, ...], str]:
    """(the table, its rows with resolved paths and label lists, the class order, how errors name it) of a
    ``kind: table`` dataset; UserDataError naming every bad row or file."""
    where = f"dataset {name} table {dataset['table']}"
    frame = read_table(dataset["table"])
    missing_columns(frame, _DATASET_COLUMNS, where)
    raw = frame["path"].astype(str).str.strip()
    labels = _label_lists(frame["labels"], dataset.get("label_separator", "|"))
    rows = pd.DataFrame(
        {
            "image_id": frame["image_id"].astype(str) if "image_id" in frame.columns else raw,
            "class": "",
            "path": [_resolve(p, _table_base(dataset)) if p else "" for p in raw],
            "labels": labels,
            "listed": [row_name(i, p, dataset["table"]) for i, p in enumerate(raw)],
        }
    )
    classes = tuple(dataset.get("classes") or sorted({x for ls in labels for x in ls}))
    known = set(classes)
    problems = _label_problems(
        frame["labels"], dataset.get("label_separator", "|"), raw, "classes", dataset.get("classes"), dataset["table"]
    )
    problems += [
        f"{row_name(i, p, dataset['table'])}: label(s) {sorted(set(ls) - known)} not in the class list"
        for i, (p, ls) in enumerate(zip(raw, labels))
        if set(ls) - known
    ]
    problems += [f"{row_name(i, p, dataset['table'])}: empty path" for i, p in enumerate(raw) if not p]
    problems += _repeats(rows, dataset["table"])
    if "split" in frame.columns:
        problems += [
            f"{row_name(i, p, dataset['table'])}: split {s!r} is not one of {', '.join(SPLIT_NAMES)}"
            for i, (p, s) in enumerate(zip(raw, frame["split"].astype(str)))
            if s not in SPLIT_NAMES
        ]
    checked = _parallel_map(_check_image, rows["path"].tolist(), int(dataset.get("workers", 1)))
    problems += _file_problems(rows[rows["path"] != ""], [why for (why,), p in zip(checked, rows["path"]) if p])
    if problems:
        raise UserDataError(where, problems)
    return frame, rows, classes, where


def is_test_row(frame: pd.DataFrame) -> np.ndarray:
    """The rows of a dataset table in its evaluation split (``split: test``)."""
    if "split" not in frame.columns:
        return np.zeros(len(frame), dtype=bool)
    return frame["split"].astype(str).map(SPLIT_NAMES).eq("test").to_numpy()


def _is_val(frame: pd.DataFrame, dataset: Mapping) -> np.ndarray:
    """The rows of a dataset table in its validation split: the ``split`` column's, else a seeded draw of
    ``val_fraction`` (:func:`val_draw`)."""
    if "split" in frame.columns:
        return frame["split"].astype(str).map(SPLIT_NAMES).eq("val").to_numpy()
    return val_draw(len(frame), float(dataset.get("val_fraction", 0.2)), int(dataset.get("seed", 0)))


def table_splits(dataset: Mapping, name: str, exclude: set[str] = frozenset()) -> tuple[Split, Split]:
    """Train and validation splits of a ``kind: table`` dataset: the table's ``split`` column (train,
    val or validation; test rows are the evaluation split, :func:`table_test_split`) or a seeded draw of
    ``val_fraction``; the class order is ``classes`` or the sorted labels. Rows whose image id is in
    ``exclude`` are dropped."""
    frame, rows, classes, where = checked_rows(dataset, name)
    test, is_val = is_test_row(frame), _is_val(frame, dataset)
    keep = ~rows["image_id"].isin(exclude).to_numpy()
    if (~keep).any():
        log.info("%s: %d analysis image(s) left out of the splits", where, int((~keep).sum()))
    out = []
    for split, mask in (("train", ~is_val & ~test & keep), ("val", is_val & keep)):
        part = rows.loc[mask, ["image_id", "path", "labels"]].reset_index(drop=True)
        if part.empty:
            raise UserDataError(where, [f"no images in the {split} split"])
        out.append(Split(name, split, classes, part))
    return out[0], out[1]


def val_draw(n: int, fraction: float, seed: int) -> np.ndarray:
    """A seeded validation mask: ``round(fraction * n)`` rows (at least one, at most n - 1)."""
    n_val = min(max(1, round(fraction * n)), n - 1)
    mask = np.zeros(n, dtype=bool)
    mask[np.random.default_rng(seed).choice(n, size=max(n_val, 0), replace=False)] = True
    return mask


class Table:
    """``kind: table``: finetuning data listed in a CSV or Parquet table (no download, no curation)."""

    image_base_url = None

    def download(self, dataset: Mapping) -> list[Path]:
        read_table(dataset["table"])
        return [Path(dataset["table"])]

    def paper_selection(self, dataset: Mapping, lists: Mapping[str, Path]) -> pd.DataFrame:
        raise ValueError("a table dataset has no paper lists; list the analysis images with source: table or folder")

    def curate(self, dataset: Mapping, analysis_set: Mapping, words) -> pd.DataFrame:
        raise ValueError("a table dataset is not curated here; list the analysis images with source: table or folder")

    def make_splits(self, dataset: Mapping, name: str, exclude: set[str]) -> tuple[Split, Split]:
        return table_splits(dataset, name, exclude)
