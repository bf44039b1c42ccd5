"""Which workflow wrote a record: its version and the git commit of its checkout, read at run time.

Every provenance record (embeddings metadata, the provenance table, finetuning metrics, weights and zoo
status records) carries :func:`workflow_provenance`. It is read inside the job, never passed as a rule's
params, so a new commit does not rerun any job. Together with the timing fields these values differ
between two runs of the same config, so a comparison of two runs ignores :data:`RUN_DEPENDENT_FIELDS`.
"""

from __future__ import annotations

import subprocess
from functools import cache
from pathlib import Path

from biastransfer import __version__

#: The checkout this library was loaded from (workflow/scripts/biastransfer -> the repository root).
CHECKOUT = Path(__file__).resolve().parents[3]
UNKNOWN = "unknown"
#: Fields that differ between two runs of the same config on the same data: the training loop's timings
#: (biastransfer.train.config.EpochRecord) and which workflow ran (workflow_provenance).
RUN_DEPENDENT_FIELDS = frozenset(
    {"seconds", "images_per_s", "data_seconds", "workflow_version", "git_commit", "git_dirty"}
)


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(CHECKOUT), *args], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


@cache
def workflow_provenance() -> dict[str, str]:
    """``workflow_version``, ``git_commit`` and ``git_dirty`` ("true" when tracked files differ from the
    commit, as ``git describe --dirty``; a run's own untracked outputs do not count) of the running
    workflow; the git fields are "unknown" when the library is not loaded from a git checkout of the workflow
    (an installed copy, an exported tree) or git cannot read it."""
    commit = dirty = UNKNOWN
    if (CHECKOUT / ".git").exists() and (CHECKOUT / "Snakefile").is_file():
        head = _git("rev-parse", "HEAD")
        status = _git("status", "--porcelain", "--untracked-files=no") if head else None
        if head and status is not None:
            commit, dirty = head, "true" if status else "false"
    return {"workflow_version": __version__, "git_commit": commit, "git_dirty": dirty}
