"""Resumable, verified, parallel downloads (the only network code of the project).

``fetch`` gets one file from an http(s) URL, a ``file://`` URL or a local path into ``dest``:

* bytes go to ``<dest>.partial``; after an interruption the next try (or the next run) asks the server
  for the rest with an HTTP ``Range`` header and appends;
* transient failures (connection errors, timeouts, HTTP 5xx/408/429, a short body) are retried with
  exponential backoff; permanent ones (other HTTP 4xx, a missing local file) fail at once;
* the finished file is checked against a published SHA-256 or MD5 where one is given; otherwise
  against the SHA-256 recorded in the sidecar ``<dest>.sha256`` on first download (the sidecar is
  written for every verified file); a mismatch deletes the partial file, so nothing that looks complete is left behind;
* the file appears at ``dest`` only by an atomic rename, once verified.

A ``mirror`` (URL prefix or local directory) replaces every remote source: ``scheme://host/path``
becomes ``<mirror>/host/path``, the layout ``wget --force-directories`` produces, so an air-gapped
cluster can serve a copy of every file from one place.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.client import HTTPException
from pathlib import Path

from biastransfer.progress import EVERY_S, Progress
from biastransfer.progress import LOGGER as progress_log

log = logging.getLogger(__name__)

CHUNK = 1 << 16
_RETRYABLE_HTTP = {408, 425, 429, 500, 502, 503, 504}


class DownloadError(RuntimeError):
    """A download failed for good; the message names the URL and the reason."""


class ChecksumError(DownloadError, ValueError):
    """The downloaded bytes do not match the expected checksum."""


class _Transient(Exception):
    """Internal: a failure worth retrying."""


@dataclass(frozen=True)
class Download:
    """One item for ``fetch_many``: ``dest`` is relative to the target directory."""

    source: str
    dest: str
    sha256: str | None = None
    md5: str | None = None


def is_remote(source: str) -> bool:
    return urllib.parse.urlsplit(source).scheme in ("http", "https")


def apply_mirror(source: str, mirror: str | os.PathLike | None) -> str:
    """Map a remote URL onto ``mirror`` (``<mirror>/<host>/<path>``); local sources stay as they are."""
    if mirror is None or not is_remote(source):
        return source
    parts = urllib.parse.urlsplit(source)
    tail = f"{parts.netloc}{parts.path}"
    mirror = str(mirror)
    if is_remote(mirror) or mirror.startswith("file://"):
        return f"{mirror.rstrip('/')}/{tail}"
    return str(Path(mirror) / tail)


def sidecar_path(dest: str | os.PathLike) -> Path:
    return Path(f"{dest}.sha256")


def partial_path(dest: str | os.PathLike) -> Path:
    return Path(f"{dest}.partial")


def _hash_file(path: Path, *names: str) -> dict[str, str]:
    digests = {name: hashlib.new(name) for name in names}
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            for d in digests.values():
                d.update(block)
    return {name: d.hexdigest() for name, d in digests.items()}


def _expected(dest: Path, sha256: str | None, md5: str | None) -> dict[str, str]:
    """Checksums to verify: the published ones, else the one recorded in the sidecar."""
    want = {}
    if sha256:
        want["sha256"] = sha256.lower()
    if md5:
        want["md5"] = md5.lower()
    if not want and sidecar_path(dest).is_file():
        recorded = sidecar_path(dest).read_text().split()
        if recorded:
            want["sha256"] = recorded[0].lower()
    return want


def _check(path: Path, want: dict[str, str], url: str) -> str:
    """Verify ``path`` against ``want``; return its sha256; raise ChecksumError naming both values."""
    got = _hash_file(path, "sha256", *[n for n in want if n != "sha256"])
    for name, value in want.items():
        if got[name] != value:
            raise ChecksumError(f"{url}: {name} mismatch: expected {value}, got {got[name]}")
    return got["sha256"]


def _record(dest: Path, sha256: str) -> None:
    side = sidecar_path(dest)
    tmp = side.with_name(side.name + ".tmp")
    tmp.write_text(f"{sha256}  {dest.name}\n")
    os.replace(tmp, side)


class _Progress:
    def __init__(self, url: str, total: int | None, start: int, enabled: bool, every: float = EVERY_S):
        self.url, self.total, self.done, self.enabled, self.every = url, total, start, enabled, every
        self.t0 = self.last = time.monotonic()
        self.start = start

    def add(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if self.enabled and now - self.last >= self.every:
            self.last = now
            rate = (self.done - self.start) / max(now - self.t0, 1e-9) / 1e6
            frac = f" ({100 * self.done / self.total:.1f}%)" if self.total else ""
            progress_log.info("%s: %d bytes%s, %.1f MB/s", self.url, self.done, frac, rate)


def _copy_local(src: str, part: Path) -> None:
    path = Path(urllib.parse.urlsplit(src).path) if src.startswith("file://") else Path(src)
    if not path.is_file():
        raise DownloadError(f"{src}: no such file")
    with open(path, "rb") as fin, open(part, "wb") as fout:
        shutil.copyfileobj(fin, fout, CHUNK)


def _http_get(url: str, part: Path, timeout: float, progress: bool) -> None:
    """Fetch ``url`` into ``part``, resuming from its current size. Raises _Transient or DownloadError."""
    have = part.stat().st_size if part.exists() else 0
    req = urllib.request.Request(url, headers={"User-Agent": "biastransfer-download/1"})
    if have:
        req.add_header("Range", f"bytes={have}-")
    try:
        resp = urllib.request.urlopen(req, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:  # our partial is already whole (or the server changed): start over
            part.unlink()
            raise _Transient(f"HTTP 416 for a resume at byte {have}; restarting") from exc
        reason = f"HTTP {exc.code} {exc.reason}"
        if exc.code in _RETRYABLE_HTTP:
            raise _Transient(reason) from exc
        raise DownloadError(f"{url}: {reason}") from exc
    except (urllib.error.URLError, OSError, HTTPException) as exc:
        raise _Transient(f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}") from exc
    with resp:
        length = resp.headers.get("Content-Length")
        if have and resp.status == 206:
            mode, start = "ab", have
        else:  # 200: the server sends everything (it may ignore Range)
            mode, start = "wb", 0
        total = start + int(length) if length is not None else None
        meter = _Progress(url, total, start, progress)
        try:
            with open(part, mode) as fh:
                while block := resp.read(CHUNK):
                    fh.write(block)
                    meter.add(len(block))
        except (OSError, HTTPException) as exc:
            raise _Transient(f"connection lost after {meter.done} bytes: {exc}") from exc
    if total is not None and meter.done != total:
        raise _Transient(f"short body: {meter.done} of {total} bytes")


def fetch(
    source: str | os.PathLike,
    dest: str | os.PathLike,
    *,
    sha256: str | None = None,
    md5: str | None = None,
    mirror: str | os.PathLike | None = None,
    retries: int = 5,
    timeout: float = 60,
    progress: bool = True,
    backoff: float = 1.0,
) -> Path:
    """Download ``source`` to ``dest`` (see the module docstring); return ``dest``.

    An existing ``dest`` that passes verification is kept without touching the network; one that fails
    is downloaded again. ``retries`` counts extra attempts after the first; the wait before retry ``k``
    is ``backoff * 2**(k-1)`` seconds.
    """
    source, dest = str(source), Path(dest)
    url = apply_mirror(source, mirror)
    want = _expected(dest, sha256, md5)
    if dest.is_file():
        try:
            _record(dest, _check(dest, want, url))
            return dest
        except ChecksumError as exc:
            log.warning("%s exists but fails verification (%s); downloading again", dest, exc)
            dest.unlink()
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = partial_path(dest)
    if progress:
        log.info("downloading %s -> %s", url, dest)
    for attempt in range(retries + 1):
        try:
            if is_remote(url):
                _http_get(url, part, timeout, progress)
            else:
                _copy_local(url, part)
            break
        except _Transient as exc:
            if attempt == retries:
                raise DownloadError(f"{url}: giving up after {retries + 1} attempts: {exc}") from exc
            wait = backoff * 2**attempt
            log.warning("%s: %s; retry %d/%d in %.1f s", url, exc, attempt + 1, retries, wait)
            time.sleep(wait)
    try:
        digest = _check(part, want, url)
    except ChecksumError:
        part.unlink(missing_ok=True)
        raise
    os.replace(part, dest)
    _record(dest, digest)
    if progress:
        log.info("verified %s (sha256 %s)", dest, digest)
    return dest


def fetch_many(
    items: Iterable[Download | tuple | str],
    dest_dir: str | os.PathLike,
    *,
    workers: int = 8,
    **kwargs,
) -> list[Path]:
    """Fetch many files with ``workers`` parallel connections; return their paths in input order.

    ``items`` are ``Download`` objects, ``(source, dest[, sha256[, md5]])`` tuples or bare URLs (saved
    under the last path component). Every item is attempted; afterwards one DownloadError lists the
    failures. ``kwargs`` go to ``fetch`` (``mirror``, ``retries``, ``timeout``, ``backoff``).
    """
    jobs = []
    for item in items:
        if isinstance(item, str):
            item = Download(item, urllib.parse.urlsplit(item).path.rsplit("/", 1)[-1])
        elif not isinstance(item, Download):
            item = Download(*item)
        dest = Path(item.dest)
        if dest.is_absolute() or ".." in dest.parts or not dest.parts:
            raise ValueError(f"{item.source}: destination {item.dest!r} is not a path inside {dest_dir}")
        jobs.append(item)
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    root = Path(dest_dir)
    kwargs.setdefault("progress", False)
    lock, failures = threading.Lock(), []
    files = Progress(f"fetching into {root}", len(jobs), unit="files")

    def one(job: Download) -> Path | None:
        try:
            return fetch(job.source, root / job.dest, sha256=job.sha256, md5=job.md5, **kwargs)
        except DownloadError as exc:
            with lock:
                failures.append(str(exc))
            return None
        finally:
            with lock:
                files.update()

    with ThreadPoolExecutor(max_workers=workers) as pool:
        paths = list(pool.map(one, jobs))
    if failures:
        shown = "\n  ".join(failures[:10])
        more = f"\n  ... and {len(failures) - 10} more" if len(failures) > 10 else ""
        raise DownloadError(f"{len(failures)} of {len(jobs)} downloads failed:\n  {shown}{more}")
    return paths
