"""The torch device a job runs on, and whether bf16 autocast pays off there."""

from __future__ import annotations

import torch

from biastransfer.gpus import claim_gpu, visible_gpus


def torch_device(requested: str) -> torch.device:
    """``auto`` is CUDA when available, else CPU; asking for CUDA without one is an error. CUDA is the
    first visible GPU that no other job of this user holds (:func:`biastransfer.gpus.claim_gpu`)."""
    if requested == "auto":
        requested = "cuda" if torch.cuda.is_available() else "cpu"
    elif requested == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' was requested but no CUDA device is available")
    if requested != "cuda":
        return torch.device(requested)
    count = torch.cuda.device_count()
    names = visible_gpus()[:count]
    index = claim_gpu(names + [f"index{i}" for i in range(len(names), count)])
    torch.cuda.set_device(index)
    return torch.device("cuda", index)


def native_bf16(capability: tuple[int, int]) -> bool:
    """Whether a CUDA compute capability computes bf16 in hardware (Ampere, 8.0, and later); older GPUs
    (V100 7.0, T4 7.5) emulate it, slower than fp32."""
    return tuple(capability) >= (8, 0)


def bf16_autocast(device: torch.device) -> bool:
    """Whether bf16 autocast is the fast path on ``device``: a CUDA GPU with native bf16 (never the CPU).
    ``torch.cuda.is_bf16_supported()`` also counts emulated bf16, so it is not asked."""
    device = torch.device(device)
    return device.type == "cuda" and native_bf16(torch.cuda.get_device_capability(device))
