"""Reading weights files without unpickling code, and loading them into modules with named errors.

``torch.load(weights_only=True)``, safetensors, or ``.npz`` with ``allow_pickle=False``. Weights that
do not fit the architecture raise a ValueError naming the keys.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from torch import nn

from biastransfer.models.spec import METADATA_KEY


def _is_safetensors(path: Path) -> bool:
    if path.suffix == ".safetensors":
        return True
    with open(path, "rb") as f:
        head = f.read(9)
    return len(head) == 9 and head[8:9] == b"{"


def read_weights_file(path: str | Path) -> tuple[dict[str, torch.Tensor], dict]:
    """(tensors, biastransfer metadata) of a safetensors or ``torch.save`` file; never runs pickled code.

    ``torch.save`` files may wrap the tensors as ``{'state_dict': ...}``, ``{'model': ...}`` or
    ``{'model_state_dict': ...}``.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"weights file {path} does not exist")
    if _is_safetensors(path):
        from safetensors import safe_open

        try:
            with safe_open(str(path), framework="pt") as f:
                meta = f.metadata() or {}
                tensors = {k: f.get_tensor(k) for k in f.keys()}
        except Exception as exc:  # safetensors raises its own error types for corrupt headers/data
            raise ValueError(f"{path}: not a readable safetensors file ({exc})") from exc
        return tensors, json.loads(meta[METADATA_KEY]) if METADATA_KEY in meta else {}
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # UnpicklingError, RuntimeError (bad zip), EOFError, ...
        raise ValueError(
            f"{path}: not a readable weights file (safetensors or torch.save state dict loadable with "
            f"weights_only=True): {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        ) from exc
    if isinstance(obj, dict):
        for key in ("state_dict", "model_state_dict", "model"):
            if isinstance(obj.get(key), dict):
                obj = obj[key]
                break
    if not isinstance(obj, dict) or not obj or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise ValueError(f"{path}: expected a state dict (a mapping of names to tensors)")
    return dict(obj), {}


def select_prefix(state: dict[str, torch.Tensor], prefix: str, path) -> dict[str, torch.Tensor]:
    out = {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}
    if not out:
        sample = ", ".join(list(state)[:5])
        raise ValueError(f"{path}: no key starts with {prefix!r} (keys begin: {sample})")
    return out


def load_state(
    module: nn.Module, state: dict[str, torch.Tensor], *, what: str, path, ignore_prefixes: tuple[str, ...] = ()
) -> None:
    """Load ``state`` into ``module``; ValueError naming missing/unexpected/mis-shaped keys."""
    state = {k: v for k, v in state.items() if not k.startswith(ignore_prefixes)}
    own = module.state_dict()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    shapes = sorted(k for k in set(own) & set(state) if tuple(own[k].shape) != tuple(state[k].shape))
    if missing or unexpected or shapes:

        def show(keys):
            return ", ".join(keys[:8]) + (f" ... ({len(keys)} in all)" if len(keys) > 8 else "")

        parts = []
        if missing:
            parts.append(f"missing keys: {show(missing)}")
        if unexpected:
            parts.append(f"unexpected keys: {show(unexpected)}")
        if shapes:
            parts.append(
                "shape mismatch: " + show([f"{k} {tuple(state[k].shape)} vs {tuple(own[k].shape)}" for k in shapes])
            )
        raise ValueError(f"{path}: weights do not fit {what}; " + "; ".join(parts))
    module.load_state_dict(state, strict=True)


def bit_npz_layout(model: nn.Module, prefix: str = "resnet/") -> dict[str, str]:
    """Google BiT ``.npz`` key -> timm ResNetV2 parameter name (the head conv is the classifier)."""
    layout = {
        f"{prefix}root_block/standardized_conv2d/kernel": "stem.conv.weight",
        f"{prefix}group_norm/gamma": "norm.weight",
        f"{prefix}group_norm/beta": "norm.bias",
    }
    for i, (sname, stage) in enumerate(model.stages.named_children()):
        for j, (bname, block) in enumerate(stage.blocks.named_children()):
            unit = f"{prefix}block{i + 1}/unit{j + 1:02d}/"
            base = f"stages.{sname}.blocks.{bname}."
            for letter, idx in (("a", 1), ("b", 2), ("c", 3)):
                layout[f"{unit}{letter}/standardized_conv2d/kernel"] = f"{base}conv{idx}.weight"
                layout[f"{unit}{letter}/group_norm/gamma"] = f"{base}norm{idx}.weight"
                layout[f"{unit}{letter}/group_norm/beta"] = f"{base}norm{idx}.bias"
            if block.downsample is not None:
                layout[f"{unit}a/proj/standardized_conv2d/kernel"] = f"{base}downsample.conv.weight"
    return layout


BIT_HEAD_KEYS = ("resnet/head/conv2d/kernel", "resnet/head/conv2d/bias")


def load_bit_npz(model: nn.Module, path: Path) -> None:
    """Check an npz against the BiT layout (naming missing/unexpected keys), then load it with timm."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            keys = set(npz.files)
    except (OSError, ValueError, EOFError) as exc:
        raise ValueError(f"{path}: not a readable .npz file ({exc})") from exc
    expected = set(bit_npz_layout(model))
    missing = sorted(expected - keys)
    unexpected = sorted(keys - expected - set(BIT_HEAD_KEYS))
    if missing or unexpected:
        raise ValueError(
            f"{path}: weights do not fit timm {type(model).__name__} (BiT npz layout); "
            f"missing keys: {', '.join(missing[:8]) or 'none'}; unexpected keys: {', '.join(unexpected[:8]) or 'none'}"
        )
    try:
        with torch.no_grad():
            model.load_pretrained(str(path))
    except RuntimeError as exc:
        raise ValueError(f"{path}: BiT npz arrays do not fit {type(model).__name__}: {exc}") from exc
