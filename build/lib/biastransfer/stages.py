"""Stage names: ``pretrained``, ``ft-{dataset}-seed{n}`` (finetuned) and ``scratch-{dataset}-seed{n}``
(the same architecture trained from random initialisation, the BTS reference)."""

from __future__ import annotations

import re

PRETRAINED = "pretrained"
_STAGE = re.compile(r"^(?P<kind>ft|scratch)-(?P<dataset>[A-Za-z0-9_]+)-seed(?P<seed>[0-9]+)$")


def finetuned_stage(dataset: str, seed: int) -> str:
    """Stage name of a model finetuned on ``dataset`` with ``seed``."""
    return f"ft-{dataset}-seed{seed}"


def scratch_stage(dataset: str, seed: int) -> str:
    """Stage name of the reference network: the model's architecture trained from random
    initialisation on ``dataset`` with the finetuning recipe and ``seed``."""
    return f"scratch-{dataset}-seed{seed}"


def parse_stage(stage: str) -> tuple[str | None, int | None]:
    """``(dataset, seed)`` of a finetuned or scratch stage, ``(None, None)`` for ``pretrained``."""
    if stage == PRETRAINED:
        return None, None
    match = _STAGE.match(stage)
    if match is None:
        raise ValueError(
            f"stage {stage!r} is neither 'pretrained', 'ft-<dataset>-seed<n>' nor 'scratch-<dataset>-seed<n>'"
        )
    return match["dataset"], int(match["seed"])


def stage_kind(stage: str) -> str:
    """``pretrained``, ``finetuned`` or ``scratch``."""
    parse_stage(stage)
    return PRETRAINED if stage == PRETRAINED else ("scratch" if stage.startswith("scratch-") else "finetuned")
