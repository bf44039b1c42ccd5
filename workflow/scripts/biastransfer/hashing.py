"""File checksums (manifests, weights, downloads' recorded digests)."""

from __future__ import annotations

import hashlib
import os


def file_digest(path: str | os.PathLike, algorithm: str = "sha256") -> str:
    """Hex digest of a file's bytes (``algorithm``: any hashlib name, sha256 by default)."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, algorithm).hexdigest()
