"""Checksums: of files (manifests, weights, downloads' recorded digests) and of config fragments."""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any


def file_digest(path: str | os.PathLike, algorithm: str = "sha256") -> str:
    """Hex digest of a file's bytes (``algorithm``: any hashlib name, sha256 by default)."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, algorithm).hexdigest()


def config_hash(obj: Any) -> str:
    """Short stable hash of a JSON-serialisable config fragment (recorded as provenance)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]
