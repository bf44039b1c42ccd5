"""Atomic file output: write to a temporary sibling, then rename over the target.

The temporary file is ``.<name>.<host>.<pid>.<random>.partial`` beside the target. A process killed
with SIGKILL cannot delete it; the next run that writes into the same folder (the next run of the same
job) removes such leftovers: those of dead processes on this host, those older than a day from any host,
and older-style names (``.<name>.<random>.partial``) without a host and pid. Each process sweeps a
folder once, at its first atomic write there, so unpacking many files into one folder stays linear.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

_UMASK = os.umask(0)
os.umask(_UMASK)
_HOST = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname()) or "host"
_STALE_AFTER_S = 24 * 3600
_OURS = re.compile(r"\.(?P<target>.+)\.(?P<host>[A-Za-z0-9-]+)\.(?P<pid>\d+)\.[a-z0-9_]+\.partial")
_OLDER = re.compile(r"\.(?P<target>.+)\.[a-z0-9_]{8}\.partial")  # mkstemp's 8 random characters
_swept: set[str] = set()
_swept_lock = threading.Lock()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stale_target(entry: os.DirEntry) -> str | None:
    """The target name of a temporary file left by a finished writer, or None if ``entry`` is not one."""
    ours = _OURS.fullmatch(entry.name)
    if ours is None:
        older = _OLDER.fullmatch(entry.name)
        return older["target"] if older else None
    try:
        age = time.time() - entry.stat(follow_symlinks=False).st_mtime
    except FileNotFoundError:
        return None
    dead = ours["host"] == _HOST and not _alive(int(ours["pid"]))
    return ours["target"] if dead or age > _STALE_AFTER_S else None


def _remove_stale(folder: Path, target: str | None = None) -> list[Path]:
    removed = []
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return removed
    for entry in entries:
        if entry.name.startswith(".") and entry.name.endswith(".partial"):
            name = _stale_target(entry)
            if name is not None and (target is None or name == target):
                Path(entry.path).unlink(missing_ok=True)
                removed.append(Path(entry.path))
    return removed


def remove_stale_temporaries(path: str | os.PathLike) -> list[Path]:
    """Delete the temporary files that killed writers of ``path`` left beside it; return them."""
    target = Path(path)
    return _remove_stale(target.parent, target.name)


def _sweep_once(folder: Path) -> None:
    """Remove every stale temporary file in ``folder``, the first time this process writes there."""
    key = os.path.abspath(folder)
    with _swept_lock:
        if key in _swept:
            return
        _swept.add(key)
    _remove_stale(folder)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success rename it to ``path``, on error delete it.

    The finished file gets the usual permissions (0666 less the umask), not mkstemp's 0600.

    A crash or exception never leaves a file at ``path`` that looks finished; temporary files that
    killed writers left in the folder are removed at this process's first write there.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    _sweep_once(target.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{_HOST}.{os.getpid()}.", suffix=".partial", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o666 & ~_UMASK)
        os.replace(tmp_path, target)
    except OSError as exc:
        tmp_path.unlink(missing_ok=True)
        if exc.errno == errno.ENOSPC:  # named with the file it was writing (the writer's own message may not)
            raise OSError(errno.ENOSPC, "no space left on device", str(target)) from exc
        raise
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


class _KeepsWriteErrors:
    """A binary file that remembers the first error of its ``write``, for a writer that swallows it."""

    def __init__(self, fh: BinaryIO):
        self._fh, self.error = fh, None

    def write(self, data) -> int:
        try:
            return self._fh.write(data)
        except OSError as exc:
            self.error = self.error or exc
            raise

    def __getattr__(self, name):
        return getattr(self._fh, name)


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """Yield a binary file open on :func:`atomic_path`'s temporary sibling of ``path``.

    A write error is raised as itself once the writer returns or fails, whatever the writer made of it
    (``torch.save``'s C++ zip writer turns a full disk into ``RuntimeError: [enforce fail at
    inline_container.cc] unexpected pos``, naming neither the cause nor the file); a full disk is thus
    named as such, with ``path`` (:func:`atomic_path`)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        kept = _KeepsWriteErrors(fh)
        try:
            yield kept
        except Exception:
            if kept.error is None:
                raise
        if kept.error is not None:
            raise kept.error from None


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_csv(path: str | os.PathLike, frame) -> None:
    """Write a pandas DataFrame to ``path`` as CSV (no index), atomically."""
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)
