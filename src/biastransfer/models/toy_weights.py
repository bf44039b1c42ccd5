"""Randomly initialised weights for the paper's six models, in the file formats their sources publish.

* torchvision ``.pth``: a plain ResNet state dict (``torch.save``);
* Google BiT ``.npz``: ``resnet/...`` keys, HWIO convolution kernels, the 21,843-class ImageNet-21k head;
* open_clip ``open_clip_model.safetensors``: the whole CLIP state dict (image and text towers);
* MoCo ``.pth.tar``: ``{'epoch', 'arch', 'state_dict', 'optimizer'}`` with ``module.encoder_q.*``,
  ``module.encoder_k.*``, ``module.queue`` and ``module.queue_ptr``;
* converted SimCLR ``.pth``: ``{'state_dict': <torchvision ResNet-50 state dict>}``;
* timm hub ``model.safetensors``: the whole model's state dict, classifier included;
* a user's checkpoint (source ``checkpoint``): ``torch.save`` of a timm or torchvision state dict.

They exercise every loader on the real path (``biastransfer.models.loading``) at the real sizes; the
embeddings they give mean nothing.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from biastransfer.models.spec import ModelSpec

BIT_CLASSES = 21843  # ImageNet-21k head of BiT-M
MOCO_DIM, MOCO_QUEUE = 128, 65536  # MoCo v1 defaults (facebookresearch/moco main_moco.py)


def _resnet(arch: str, num_classes: int = 1000, seed: int = 0) -> dict:
    import torchvision

    torch.manual_seed(seed)
    return torchvision.models.get_model(arch, weights=None, num_classes=num_classes).state_dict()


def _bit_npz(path: Path, seed: int) -> None:
    import timm

    from biastransfer.models.loading import bit_npz_layout

    torch.manual_seed(seed)
    model = timm.create_model("resnetv2_50x1_bit", num_classes=0)
    state = model.state_dict()
    arrays = {}
    for key, param in bit_npz_layout(model).items():
        w = state[param].numpy()
        arrays[key] = w.transpose(2, 3, 1, 0) if w.ndim == 4 else w  # torch OIHW -> TF HWIO
    rng = np.random.default_rng(seed)
    arrays["resnet/head/conv2d/kernel"] = rng.standard_normal((1, 1, 2048, BIT_CLASSES), np.float32) * 0.01
    arrays["resnet/head/conv2d/bias"] = np.zeros(BIT_CLASSES, np.float32)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def _open_clip(path: Path, arch: str, seed: int) -> None:
    import open_clip
    from safetensors.torch import save_file

    torch.manual_seed(seed)
    model = open_clip.create_model(arch, pretrained=None, load_weights=False)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path))


def _timm_state(arch: str, seed: int) -> dict:
    import timm

    torch.manual_seed(seed)
    return timm.create_model(arch, pretrained=False).state_dict()


def _moco(path: Path, seed: int) -> None:
    q = _resnet("resnet50", MOCO_DIM, seed)
    k = _resnet("resnet50", MOCO_DIM, seed + 1)
    state = {f"module.encoder_q.{n}": v for n, v in q.items()}
    state.update({f"module.encoder_k.{n}": v for n, v in k.items()})
    state["module.queue"] = torch.nn.functional.normalize(torch.randn(MOCO_DIM, MOCO_QUEUE), dim=0)
    state["module.queue_ptr"] = torch.zeros(1, dtype=torch.long)
    torch.save(
        {"epoch": 200, "arch": "resnet50", "state_dict": state, "optimizer": {"state": {}, "param_groups": []}}, path
    )


def write_weights(spec: ModelSpec, path: str | Path, seed: int = 0) -> Path:
    """Write random weights for ``spec`` at ``path`` in its source's published format."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if spec.source == "torchvision":
        torch.save(_resnet(spec.arch, seed=seed), path)
    elif spec.source == "timm" and spec.arch.startswith("resnetv2_50x1_bit"):
        _bit_npz(path, seed)
    elif spec.source == "timm":
        from safetensors.torch import save_file

        save_file({k: v.contiguous() for k, v in _timm_state(spec.arch, seed).items()}, str(path))
    elif spec.source == "checkpoint":
        from biastransfer.models.resolve import is_timm_arch

        torch.save(_timm_state(spec.arch, seed) if is_timm_arch(spec.arch) else _resnet(spec.arch, seed=seed), path)
    elif spec.source == "open_clip":
        _open_clip(path, spec.arch, seed)
    elif spec.source == "moco":
        _moco(path, seed)
    else:  # simclr (ModelSpec admits no other source)
        torch.save({"state_dict": _resnet(spec.arch, seed=seed)}, path)
    return path


def toy_crop(spec: ModelSpec, size: int) -> int | None:
    """The toy's input size for a model: ``size``; for an open_clip ViT the multiple of its patch at or above
    it (its checkpoint's position embeddings are interpolated to that grid: 64 px for ViT-B/32, a 2 x 2 grid,
    about a tenth of the tokens at 224); None for another open_clip model, which keeps its own size."""
    if spec.source != "open_clip":
        return size
    import open_clip

    patch = (open_clip.get_model_config(spec.arch) or {}).get("vision_cfg", {}).get("patch_size")
    return -(-size // patch) * patch if isinstance(patch, int) else None
