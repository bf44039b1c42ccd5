"""Which workflow wrote a record: its version and the git commit of its checkout, read at run time; and the
record of a whole run that its report shows (:func:`run_record`).

Every provenance record (embeddings metadata, the provenance table, finetuning metrics, weights and zoo
status records) carries :func:`workflow_provenance`. It is read inside the job, never passed as a rule's
params, so a new commit does not rerun any job. Together with the timing fields these values differ
between two runs of the same config, so a comparison of two runs ignores :data:`RUN_DEPENDENT_FIELDS`.
"""

from __future__ import annotations

import platform
import subprocess
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from biastransfer import __version__

#: The checkout this library was loaded from (src/biastransfer -> the repository root).
CHECKOUT = Path(__file__).resolve().parents[2]
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


#: The libraries a run's report names the versions of (as the job that builds the report sees them; each
#: embeddings file records the versions of the job that wrote it).
LIBRARIES = ("snakemake", "numpy", "scipy", "pandas", "pyarrow", "matplotlib", "torch", "timm", "open_clip_torch")
MISSING = "not in this job's environment"
#: The config sections whose settings decide the statistics (analysis.<name>).
STATISTICS_SECTIONS = ("similarity", "ieat", "bts", "attribution", "trajectory")


def installed_version(name: str) -> str | None:
    """The installed version of distribution ``name`` (package metadata, no import), or None."""
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _settings(section: Mapping) -> str:
    """A config section's scalar and list settings as ``key value`` pairs (nested sections left out)."""
    words = []
    for key, value in section.items():
        if isinstance(value, Mapping):
            continue
        if isinstance(value, list):
            value = ", ".join(map(str, value)) if value else "none"
        words.append(f"{key} {value}")
    return "; ".join(words)


def run_record(config: Mapping, *, now: datetime | None = None) -> dict[str, str]:
    """What a reviewer cites of a run, in words: when its report was built, which workflow (version, commit)
    and Snakemake, Python and libraries built it, and the statistics settings and seeds of the filled
    ``config``."""
    workflow = workflow_provenance()
    commit = workflow["git_commit"]
    if commit != UNKNOWN:
        commit += " (with uncommitted changes to tracked files)" if workflow["git_dirty"] == "true" else ""
    finetune = config["finetune"]
    record = {
        "report built (UTC)": (now or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M:%S"),
        "workflow": f"biastransfer {workflow['workflow_version']}, git commit {commit}",
        "Python": f"{platform.python_version()} on {platform.platform(terse=True)}",
        "libraries": ", ".join(f"{name} {installed_version(name) or MISSING}" for name in LIBRARIES),
        "finetuning": (
            f"on {', '.join(finetune['datasets'])}, seeds {', '.join(map(str, finetune['seeds']))}"
            if finetune["datasets"]
            else "none (pretrained networks only)"
        ),
        "significance": f"alpha {config['analysis']['ieat']['alpha']}, p-values adjusted by "
        f"{config['report']['p_adjust']} within each table",
    }
    for name in STATISTICS_SECTIONS:
        if name in config["analysis"]:
            record[f"statistics: {name}"] = _settings(config["analysis"][name])
    return record
