"""Which GPUs a job can see and which one it takes, without importing torch (the Snakefile reads these).

A local run with ``--resources gpu=N`` starts up to N GPU jobs at once on one machine; each job takes
the first visible GPU no other job holds (an exclusive lock file per GPU, released when the job's process
ends) and waits while all are taken. Under SLURM a job sees only the GPU it was given, so it takes that one.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

LOG = logging.getLogger(__name__)
_HELD: dict[int, object] = {}  # index -> open lock file, held until the process ends


def visible_gpus(environ: Mapping[str, str] = os.environ, dev: str | os.PathLike = "/dev") -> list[str]:
    """Names of the NVIDIA GPUs this process may use: the entries of ``CUDA_VISIBLE_DEVICES`` when it is
    set (empty, or starting at ``-1``: none), else the driver's device files ``/dev/nvidia<N>``."""
    given = environ.get("CUDA_VISIBLE_DEVICES")
    if given is not None:
        names = []
        for name in (n.strip() for n in given.split(",")):
            if not name or name.startswith("-"):  # CUDA ignores this entry and every one after it
                break
            names.append(name)
        return names
    try:
        files = os.listdir(dev)
    except OSError:
        return []
    return sorted((f for f in files if re.fullmatch(r"nvidia\d+", f)), key=lambda f: int(f[6:]))


def books_gpu(device: str, environ: Mapping[str, str] = os.environ, dev: str | os.PathLike = "/dev") -> int:
    """GPUs (0 or 1) a job with this ``device`` setting books: ``cuda`` always; ``auto`` when this machine
    (the one that runs Snakemake) sees a GPU, since the job will then run on it; ``cpu`` never."""
    if device == "cuda":
        return 1
    return int(device == "auto" and bool(visible_gpus(environ, dev)))


def lock_folder() -> Path:
    """Where GPU jobs of this user on this machine keep their lock files."""
    return Path(tempfile.gettempdir()) / f"biastransfer-gpus-{os.getuid()}"


def claim_gpu(
    names: list[str],
    folder: str | os.PathLike | None = None,
    *,
    wait_s: float = 5.0,
    log: Callable[[str], None] = LOG.warning,
) -> int:
    """Index (into ``names``, the visible GPUs) of a GPU no other process of this user holds, held by this
    process until it ends; with a single GPU, 0 without locking. While every GPU is held, waits, polling
    every ``wait_s`` seconds."""
    if len(names) <= 1:
        return 0
    if _HELD:
        return next(iter(_HELD))
    folder = Path(folder) if folder is not None else lock_folder()
    folder.mkdir(parents=True, exist_ok=True)
    told = False
    while True:
        for index, name in enumerate(names):
            safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)  # MIG UUIDs hold slashes
            handle = open(folder / f"gpu-{safe}.lock", "a")  # noqa: SIM115 (kept open: it is the lock)
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            _HELD[index] = handle
            return index
        if not told:
            log(f"all {len(names)} visible GPUs are in use by other jobs (locks in {folder}); waiting for one")
            told = True
        time.sleep(wait_s)


def release_gpus() -> None:
    """Give up every GPU this process holds (they are also released when it ends)."""
    for handle in _HELD.values():
        handle.close()
    _HELD.clear()
