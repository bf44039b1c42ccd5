"""Atomic file output: write to a temporary sibling, then rename over the target.

The temporary file is ``.<name>.<host>.<pid>.<random>.partial`` beside the target. A process killed
with SIGKILL cannot delete it; the next write of the same target (the next run of the same job)
removes such leftovers: those of dead processes on this host, those older than a day from any host,
and older-style names (``.<name>.<random>.partial``) without a host and pid.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import tempfile
import time
from pathlib import Path
from typing import Iterator

_UMASK = os.umask(0)
os.umask(_UMASK)
_HOST = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname()) or "host"
_STALE_AFTER_S = 24 * 3600


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _is_stale(tmp: Path, suffix: str) -> bool:
    """Whether ``tmp`` (``suffix`` is its name after ``.<target name>.``) was left by a finished process."""
    if re.fullmatch(r"[a-z0-9_]{8}\.partial", suffix):  # the older name, without host and pid
        return True
    owner = re.fullmatch(r"([A-Za-z0-9-]+)\.(\d+)\.[a-z0-9_]+\.partial", suffix)
    if owner is None:  # another target's file (``.a.b.*`` beside ``a``)
        return False
    try:
        age = time.time() - tmp.lstat().st_mtime
    except FileNotFoundError:
        return False
    return age > _STALE_AFTER_S or (owner.group(1) == _HOST and not _alive(int(owner.group(2))))


def remove_stale_temporaries(path: str | os.PathLike) -> list[Path]:
    """Delete the temporary files that killed writers of ``path`` left beside it; return them."""
    target = Path(path)
    prefix = f".{target.name}."
    removed = []
    if not target.parent.is_dir():
        return removed
    for tmp in target.parent.iterdir():
        if tmp.name.startswith(prefix) and tmp.name.endswith(".partial") and _is_stale(tmp, tmp.name[len(prefix):]):
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
    return removed


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success rename it to ``path``, on error delete it.

    The finished file gets the usual permissions (0666 less the umask), not mkstemp's 0600.

    A crash or exception never leaves a file at ``path`` that looks finished; temporary files that
    killed writers of ``path`` left are removed first.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{_HOST}.{os.getpid()}.", suffix=".partial", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o666 & ~_UMASK)
        os.replace(tmp_path, target)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_csv(path: str | os.PathLike, frame) -> None:
    """Write a pandas DataFrame to ``path`` as CSV (no index), atomically."""
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)
