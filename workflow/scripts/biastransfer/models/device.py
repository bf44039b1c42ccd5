"""The torch device a job runs on."""

from __future__ import annotations

import torch


def torch_device(requested: str) -> torch.device:
    """``auto`` is CUDA when available, else CPU; asking for CUDA without one is an error."""
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if requested == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' was requested but no CUDA device is available")
    return torch.device(requested)
