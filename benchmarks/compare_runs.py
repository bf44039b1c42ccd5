"""Whether two runs' results are the same but for provenance and timing (a restructuring's check).

    python benchmarks/compare_runs.py REF/results NEW/results

Files equal byte for byte pass. Any other Parquet, JSON or CSV file passes when its data are equal once the
provenance (git commit, dirty flag, the digests of files that record them) and timing fields are dropped:
Parquet tables cell for cell with their metadata compared as JSON, JSON documents as values, CSV tables
column for column; HTML pages when equal with hex digests and times masked (they print the commit, the
digests of files that record it and the build time); a zip archive member by member by these rules.
``results/benchmarks`` (per-job times) is not compared. Prints each
file that differs and what differs in it; exit status 1 if any does, or if a file is in one run only.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

#: Keys and columns that record where and when a file was written, not what it holds.
PROVENANCE = {"git_commit", "git_dirty", "workflow_version", "file_sha256"}
#: A key or column name that ends so holds a timing figure (seconds, data_seconds, images_per_s, img_s).
TIMING = re.compile(r"(^|_)(seconds|per_s|img_s|elapsed|waited|wall_s)$")
#: Hex digests (with at least one letter, so that no number is masked) and times of day.
_MASK = re.compile(r"\b(?=[0-9]*[a-f])[0-9a-f]{7,64}\b|\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d")


def _kept(name: str) -> bool:
    return name not in PROVENANCE and not TIMING.search(name)


def _stripped(value):
    if isinstance(value, dict):
        return {k: _stripped(v) for k, v in value.items() if _kept(k)}
    if isinstance(value, list):
        return [_stripped(v) for v in value]
    return value


def _metadata(table) -> dict:
    out = {}
    for key, raw in (table.schema.metadata or {}).items():
        try:
            out[key.decode()] = _stripped(json.loads(raw))
        except ValueError:
            out[key.decode()] = raw
    return out


def difference(name: str, ref: bytes, new: bytes) -> str | None:
    """What differs between two versions of file ``name`` beyond provenance and timing (None: nothing)."""
    if ref == new:
        return None
    suffix = Path(name).suffix
    if suffix == ".parquet":
        a, b = pq.read_table(io.BytesIO(ref)), pq.read_table(io.BytesIO(new))
        if not a.replace_schema_metadata(None).equals(b.replace_schema_metadata(None)):
            return "table data"
        meta_a, meta_b = _metadata(a), _metadata(b)
        keys = sorted(k for k in meta_a.keys() | meta_b.keys() if meta_a.get(k) != meta_b.get(k))
        return f"metadata {keys}" if keys else None
    if suffix == ".json":
        a, b = _stripped(json.loads(ref)), _stripped(json.loads(new))
        return None if a == b else f"keys {sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))}"
    if suffix == ".csv":
        a, b = pd.read_csv(io.BytesIO(ref)), pd.read_csv(io.BytesIO(new))
        if list(a.columns) != list(b.columns):
            return "columns"
        columns = [c for c in a.columns if _kept(c) and not a[c].equals(b[c])]
        return f"columns {columns}" if columns else None
    if suffix == ".html":  # pages print the commit, the digests of files that record it and the build time
        return None if _MASK.sub("#", ref.decode()) == _MASK.sub("#", new.decode()) else "page text"
    if suffix == ".zip":
        with zipfile.ZipFile(io.BytesIO(ref)) as a, zipfile.ZipFile(io.BytesIO(new)) as b:
            if sorted(a.namelist()) != sorted(b.namelist()):
                return "members"
            members = [m for m in a.namelist() if difference(m, a.read(m), b.read(m))]
        return f"members {members}" if members else None
    return "bytes"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ref", type=Path, help="the reference run's results folder")
    ap.add_argument("new", type=Path, help="the new run's results folder")
    args = ap.parse_args(argv)

    def files(root: Path) -> set[Path]:
        return {
            p.relative_to(root) for p in root.rglob("*") if p.is_file() and p.relative_to(root).parts[0] != "benchmarks"
        }

    ref, new = files(args.ref), files(args.new)
    problems = [f"only in {args.ref}: {p}" for p in sorted(ref - new)] + [
        f"only in {args.new}: {p}" for p in sorted(new - ref)
    ]
    for p in sorted(ref & new):
        if found := difference(p.name, (args.ref / p).read_bytes(), (args.new / p).read_bytes()):
            problems.append(f"{p}: {found}")
    print("\n".join(problems) or f"{len(ref)} files: the same but for provenance and timing")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
