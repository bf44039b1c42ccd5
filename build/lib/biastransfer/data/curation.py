"""Pieces shared by the COCO and Open Images analysis-set builders.

A *selection* is a manifest without hashes: columns ``image_id``, ``class``, ``source_split``, ``path``,
``source`` (the image URL) and ``reason``. ``manifest_from_selection`` fetches whatever images are
missing and adds ``sha256``, which gives the manifest of ``biastransfer.data.manifest``.
"""

from __future__ import annotations

import logging
import os
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from biastransfer.data.download import Download, fetch_many
from biastransfer.data.manifest import COLUMNS
from biastransfer.hashing import file_digest

log = logging.getLogger(__name__)

SELECTION_COLUMNS = ("image_id", "class", "source_split", "path", "source", "reason")


def list_selection(
    lists: Mapping[str, str | Path], image_of, *, root: str | Path, image_path, image_url
) -> pd.DataFrame:
    """Selection from per-class list files (``{class: list file}``, one image a line): ``image_of(path, lineno,
    line)`` gives a stripped non-empty line's (split, image id) or raises ValueError naming file and line;
    ``image_path(root, split, id)`` and ``image_url(split, id)`` locate the image. Repeats within a class are
    dropped; the reason records the list file, line and its text."""
    rows = []
    for cls, path in lists.items():
        try:
            lines = Path(path).read_text().splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: cannot read list ({exc})") from exc
        seen = set()
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                continue
            split, image_id = image_of(path, lineno, line.strip())
            if image_id in seen:
                continue
            seen.add(image_id)
            reason = f"paper list {Path(path).name} line {lineno}: {line.strip()}"
            rows.append(
                (str(image_id), cls, split, image_path(root, split, image_id), image_url(split, image_id), reason)
            )
    return pd.DataFrame(rows, columns=list(SELECTION_COLUMNS))


def class_rng(seed: int, name: str) -> np.random.Generator:
    """A generator for one class: the draw for a class does not change when other classes change."""
    return np.random.default_rng(np.random.SeedSequence([int(seed), zlib.crc32(name.encode())]))


def draw(candidates: Sequence, size: int, *, seed: int, name: str, on_shortfall: str = "error") -> list:
    """``size`` items drawn without replacement from ``candidates`` (sorted first, so input order does
    not matter), returned sorted. Too few candidates raise ValueError, or with ``on_shortfall="keep"``
    all of them are kept."""
    pool = sorted(candidates)
    if size < 1:
        raise ValueError(f"class {name!r}: size must be >= 1, got {size}")
    if len(pool) < size:
        if on_shortfall != "keep":
            raise ValueError(
                f"class {name!r}: only {len(pool)} candidate image(s) satisfy the curation rule, {size} requested "
                "(relax the rule, lower the size, or set on_shortfall: keep)"
            )
        log.warning("class %r: keeping all %d candidates (%d requested)", name, len(pool), size)
        return pool
    picks = class_rng(seed, name).choice(len(pool), size=size, replace=False)
    return sorted(pool[i] for i in picks)


def check_class_names(sizes: Mapping[str, int], objects: Mapping[str, str], genders: Sequence[str]) -> None:
    """Every requested class must be a gender, an object, ``<object>_<gender>`` or ``random``."""
    known = set(genders) | set(objects) | {f"{o}_{g}" for o in objects for g in genders} | {"random"}
    unknown = sorted(set(sizes) - known)
    if unknown:
        raise ValueError(
            f"curation.sizes: unknown class(es) {unknown}; expected one of {sorted(known)} "
            "(genders, objects, <object>_<gender>, random)"
        )


def manifest_from_selection(
    selection: pd.DataFrame, *, download: bool = True, mirror: str | None = None, workers: int = 8
) -> pd.DataFrame:
    """Fetch missing images (from ``source``, or its mirror) and add their ``sha256``.

    With ``download=False`` a missing image is an error naming it (for ``images: all`` runs, where
    every image should already be unpacked).
    """
    missing = [Path(p) for p in selection["path"] if not Path(p).is_file()]
    if missing and not download:
        raise FileNotFoundError(f"{len(missing)} analysis image(s) missing, e.g. {missing[0]}")
    if missing:
        todo = selection[[not Path(p).is_file() for p in selection["path"]]]
        log.info("fetching %d missing analysis images", len(todo))
        # The images may live anywhere (an absolute data folder, or one above the working directory):
        # fetch them into the deepest folder that holds them all.
        targets = [Path(p).resolve() for p in todo["path"]]
        root = Path(os.path.commonpath([t.parent for t in targets]))
        items = [Download(u, str(t.relative_to(root))) for u, t in zip(todo["source"], targets)]
        fetch_many(items, root, workers=workers, mirror=mirror)
    out = selection.copy()
    out["sha256"] = [file_digest(p) for p in out["path"]]
    return out.loc[:, list(COLUMNS)]
