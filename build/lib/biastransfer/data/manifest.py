"""Analysis-set manifests: which image belongs to which analysis class, with its checksum and origin.

Columns: ``image_id``, ``class``, ``path`` (relative to the manifest's ``root`` or absolute),
``sha256``, ``source_split`` (the split the image came from), ``source`` (licence or URL),
``reason`` (why the curation chose it). Every source of analysis sets (synthetic, the paper's lists,
our own curation) writes this one format.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from biastransfer.atomic import atomic_path
from biastransfer.hashing import file_digest

COLUMNS = ("image_id", "class", "path", "sha256", "source_split", "source", "reason")


def validate_manifest(df: pd.DataFrame, *, where: str = "manifest", min_per_class: int = 2) -> pd.DataFrame:
    """Check a manifest's columns and contents; raise ValueError naming the offending class or image.

    Classes are mutually exclusive: an image id may appear in one class only, and once.
    """
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{where}: missing column(s) {', '.join(missing)}; expected {', '.join(COLUMNS)}")
    if df.empty:
        raise ValueError(f"{where}: no images")
    for col in ("image_id", "class", "path", "sha256"):
        blank = df[col].isna() | (df[col].astype(str).str.strip() == "")
        if blank.any():
            raise ValueError(f"{where}: empty {col!r} in row(s) {', '.join(map(str, df.index[blank][:5]))}")
    dup = df[df.duplicated("image_id", keep=False)]
    if not dup.empty:
        first = dup.iloc[0]["image_id"]
        classes = sorted(dup.loc[dup["image_id"] == first, "class"])
        raise ValueError(
            f"{where}: image {first!r} appears more than once (classes {', '.join(classes)}); "
            f"{dup['image_id'].nunique()} duplicated image id(s) in all"
        )
    sizes = df.groupby("class", sort=False).size()
    small = sizes[sizes < min_per_class]
    if not small.empty:
        detail = ", ".join(f"{c!r} has {n}" for c, n in small.items())
        raise ValueError(f"{where}: classes need at least {min_per_class} images: {detail}")
    return df


def read_manifest(path: str | os.PathLike, *, min_per_class: int = 2) -> pd.DataFrame:
    """Read and validate a manifest (Parquet)."""
    try:
        df = pd.read_parquet(path)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable manifest ({exc})") from exc
    return validate_manifest(df, where=str(path), min_per_class=min_per_class)


def write_manifest(path: str | os.PathLike, df: pd.DataFrame, *, min_per_class: int = 2) -> None:
    """Validate and write a manifest atomically."""
    validate_manifest(df, where=str(path), min_per_class=min_per_class)
    with atomic_path(path) as tmp:
        df.loc[:, list(COLUMNS)].to_parquet(tmp, index=False)


def resolve_paths(df: pd.DataFrame, root: str | os.PathLike) -> list[Path]:
    """Absolute image paths of a manifest whose ``path`` column is relative to ``root``."""
    base = Path(root)
    return [p if p.is_absolute() else base / p for p in map(Path, df["path"])]


def verify_files(df: pd.DataFrame, root: str | os.PathLike) -> None:
    """Check every image exists and matches its recorded sha256; the error names the file."""
    for path, expected in zip(resolve_paths(df, root), df["sha256"]):
        if not path.is_file():
            raise FileNotFoundError(f"analysis image missing: {path}")
        actual = file_digest(path)
        if actual != expected:
            raise ValueError(f"analysis image corrupt or changed: {path} (sha256 {actual}, manifest says {expected})")
