"""Weights files: checksum verification, the download cache, and the fetch rule's weights records."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from urllib.parse import urlparse

from biastransfer.atomic import atomic_path
from biastransfer.data.download import fetch
from biastransfer.hashing import file_digest
from biastransfer.models.spec import ModelSpec
from biastransfer.provenance import workflow_provenance


def verify_checksum(path: str | Path, *, sha256: str | None = None, md5: str | None = None) -> str:
    """Check ``path`` against a full or prefix digest; return its full sha256. ValueError on mismatch."""
    actual = file_digest(path, "sha256")
    if sha256 and not actual.startswith(sha256.lower()):
        raise ValueError(f"{path}: sha256 {actual} does not match the expected {sha256}; refusing these weights")
    if md5:
        actual_md5 = file_digest(path, "md5")
        if not actual_md5.startswith(md5.lower()):
            raise ValueError(f"{path}: md5 {actual_md5} does not match the expected {md5}; refusing these weights")
    return actual


def _is_url(location: str) -> bool:
    return urlparse(location).scheme in ("http", "https", "ftp", "s3", "gs")


def weights_cache_path(spec: ModelSpec, cache_dir: str | Path) -> Path:
    """Where a remote weights file of ``spec`` is cached: ``cache_dir/<model name>/<key>/<file name>``,
    the key ``<source>-<pretrained tag>-<16 hex digits of the URL's sha256>``. Hub files all have one name
    (``model.safetensors``), so a new tag or hub id under the same model name is a new file, never the
    old one reused."""
    if not spec.weights or not _is_url(spec.weights):
        raise ValueError(f"model {spec.name!r}: weights {spec.weights!r} are not a URL, nothing to cache")
    tag = re.sub(r"[^A-Za-z0-9_.-]+", "_", spec.pretrained_tag or "untagged")
    key = f"{spec.source}-{tag}-{hashlib.sha256(spec.weights.encode()).hexdigest()[:16]}"
    return Path(cache_dir) / spec.name / key / Path(urlparse(spec.weights).path).name


def resolve_weights(spec: ModelSpec, cache_dir: str | Path, mirror: str | Path | None = None) -> Path:
    """A verified local weights file for ``spec``: the local path itself, or the cached download.

    A remote file is fetched with ``biastransfer.data.download.fetch`` (resume, retry, atomic) into
    :func:`weights_cache_path`; ``mirror`` (a URL prefix or folder in ``wget --force-directories``
    layout, see ``biastransfer.data.download``) replaces the network. Any checksum mismatch, of a local
    file, a cached file or a download, raises ValueError; prefix digests are checked here.
    """
    if not spec.weights:
        raise ValueError(f"model {spec.name!r} has no weights configured. {spec.notes or ''}".strip())
    if not _is_url(spec.weights):
        local = Path(spec.weights.removeprefix("file://")).expanduser()
        if not local.is_file():
            raise FileNotFoundError(f"model {spec.name!r}: weights file {local} does not exist")
        verify_checksum(local, sha256=spec.sha256, md5=spec.md5)
        return local
    dest = weights_cache_path(spec, cache_dir)
    if not dest.is_file():
        full = {k: v for k, v, n in (("sha256", spec.sha256, 64), ("md5", spec.md5, 32)) if v and len(v) == n}
        fetch(spec.weights, dest, mirror=mirror, **full)
    verify_checksum(dest, sha256=spec.sha256, md5=spec.md5)
    return dest


WEIGHTS_RECORD_FORMAT = "biastransfer-weights/1"


def write_weights_record(path: str | Path, spec: ModelSpec, weights_file: str | Path, **extra) -> dict:
    """Write a small JSON record pointing at a verified weights file (the fetch rule's output; the zoo's
    check adds ``extra`` keys)."""
    weights_file = Path(weights_file).resolve()
    record = {
        **extra,
        "format": WEIGHTS_RECORD_FORMAT,
        "model": spec.name,
        "path": str(weights_file),
        "sha256": file_digest(weights_file),
        "url": spec.weights,
        "spec": spec.as_dict(),
        **workflow_provenance(),
    }
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    return record


def read_weights_record(path: str | Path) -> dict | None:
    """The record written by :func:`write_weights_record`, or None if ``path`` is not one."""
    path = Path(path)
    if not path.is_file() or path.stat().st_size > 1 << 20:
        return None
    with open(path, "rb") as f:
        if f.read(1) != b"{":
            return None
    try:
        record = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return record if isinstance(record, dict) and record.get("format") == WEIGHTS_RECORD_FORMAT else None


def weights_file_and_sha256(path: str | Path) -> tuple[Path, str]:
    """(weights file, its sha256) for a weights file or a weights record; the record's digest is checked."""
    record = read_weights_record(path)
    if record is None:
        return Path(path), file_digest(path)
    target = Path(record["path"])
    if not target.is_file():
        raise FileNotFoundError(f"{path}: weights file {target} named by this record does not exist")
    return target, verify_checksum(target, sha256=record["sha256"])
