"""Config checks that need torch, remembered once passed, and values read from those libraries, remembered
once computed: a second ``snakemake`` call on the same config (a dry run, a rerun, each job of a cluster
run, which parses the Snakefile again) neither runs the checks nor imports the libraries again.

A check passes, or a value is computed, for a key made of its inputs (JSON), the library's version and
source, and the versions of the packages it runs (torch, timm, open_clip); a passed key is an empty file
under ``$BIASTRANSFER_CACHE_DIR`` (default ``$XDG_CACHE_HOME/biastransfer`` or ``~/.cache/biastransfer``),
``config-checks/``, a computed value a JSON file beside it. A check that finds problems is never
remembered, so its message is always today's. A cache that cannot be written is skipped.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from biastransfer import __version__
from biastransfer.atomic import write_text
from biastransfer.provenance import installed_version

LIBRARY = Path(__file__).resolve().parent
#: The packages whose versions join every key.
PACKAGES = ("torch", "torchvision", "timm", "open_clip_torch")


def cache_dir() -> Path:
    """Where passed checks are remembered."""
    if os.environ.get("BIASTRANSFER_CACHE_DIR"):
        return Path(os.environ["BIASTRANSFER_CACHE_DIR"]) / "config-checks"
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "biastransfer" / "config-checks"


def check_key(name: str, inputs, code: str) -> str:
    """The key of check ``name`` on ``inputs``: their JSON, the library version, the sha256 of the library's
    ``code`` subpackage sources (e.g. ``models``) and the versions of :data:`PACKAGES`."""
    source = hashlib.sha256()
    for path in sorted((LIBRARY / code).rglob("*.py")):
        source.update(path.relative_to(LIBRARY).as_posix().encode() + b"\0" + path.read_bytes())
    key = {
        "check": name,
        "inputs": inputs,
        "version": __version__,
        "code": source.hexdigest(),
        "packages": {p: installed_version(p) for p in PACKAGES},
    }
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()


def passed_check(name: str, inputs, check: Callable[[], list[str]], *, code: str) -> list[str]:
    """``check()`` (its problems, one line each), or ``[]`` without running it when it passed before for the
    same key (:func:`check_key`)."""
    marker = cache_dir() / f"{name}-{check_key(name, inputs, code)}"
    if marker.is_file():
        return []
    problems = check()
    if not problems:
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            write_text(marker, "")
        except OSError:
            pass
    return problems


def remembered(name: str, inputs, compute: Callable[[], Any], *, code: str) -> Any:
    """``compute()`` (a JSON value), or the value it gave before for the same key (:func:`check_key`),
    read back from JSON without running it."""
    stored = cache_dir() / f"{name}-{check_key(name, inputs, code)}.json"
    try:
        return json.loads(stored.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    value = compute()
    try:
        stored.parent.mkdir(parents=True, exist_ok=True)
        write_text(stored, json.dumps(value))
    except OSError:
        pass
    return value
