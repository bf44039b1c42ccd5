"""Configured models as ModelSpecs, and the torch device a job runs on."""

from __future__ import annotations

from typing import Mapping

import torch

from .models import ModelSpec, resolve_spec


def model_spec(name: str, entry: Mapping) -> ModelSpec:
    """The ``biastransfer.models.ModelSpec`` of a configured model.

    A ``source: workflow`` model (the demo's) is a timm architecture trained from scratch here: its
    weights are the workflow's own pretraining checkpoint, never a download.
    """
    entry = {k: v for k, v in entry.items() if k not in ("pretrain", "device")}
    if entry.get("source") == "workflow":
        entry.update(source="timm", weights=None, sha256=None)
    return resolve_spec(name, entry)


def torch_device(requested: str) -> torch.device:
    """``auto`` is CUDA when available, else CPU; asking for CUDA without one is an error."""
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if requested == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' was requested but no CUDA device is available")
    return torch.device(requested)
