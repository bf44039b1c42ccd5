"""Embedding extraction: decode and preprocess images in DataLoader workers, run a feature extractor.

On CUDA the forward pass runs with channels_last tensors and pinned memory, and under bf16 autocast on
GPUs with native bf16 (:func:`embedding_runtime`; the config can turn autocast off); both switches can be
forced on CPU (tests exercise them there). On CPU the result is deterministic.
"""

from __future__ import annotations

import functools
import platform
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from biastransfer.images import load_rgb
from biastransfer.models.device import bf16_autocast, torch_device
from biastransfer.models.spec import ModelSpec, Preprocess
from biastransfer.provenance import installed_version, workflow_provenance


class ImageFiles(Dataset):
    """Images by path -> preprocessed tensors; an unreadable file raises an error naming it."""

    def __init__(self, paths: Sequence[str | Path], transform):
        self.paths = [Path(p) for p in paths]
        self.transform = transform

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> torch.Tensor:
        return self.transform(load_rgb(self.paths[index]))


def undersized_images(paths: Sequence[str | Path], crop: int) -> list[tuple[Path, int, int]]:
    """(path, width, height) of every image with a side shorter than ``crop`` pixels (read from headers)."""
    from PIL import Image

    small = []
    for path in map(Path, paths):
        try:
            with Image.open(path) as img:
                width, height = img.size
        except Exception:  # unreadable files are reported, with their name, when they are decoded
            continue
        if min(width, height) < crop:
            small.append((path, width, height))
    return small


def embedding_runtime(device: str | torch.device, amp: bool = True) -> dict:
    """How extraction runs on ``device``: ``amp`` (bf16 autocast) if asked for and the device computes bf16
    natively, ``channels_last`` on CUDA. Keyword arguments of :func:`extract_features` and entries of the
    embeddings' provenance."""
    device = torch.device(device)
    return {"amp": bool(amp) and bf16_autocast(device), "channels_last": device.type == "cuda"}


def forward_batch(
    model: torch.nn.Module, batch: torch.Tensor, device: torch.device, *, amp: bool, channels_last: bool
) -> torch.Tensor:
    """One batch through ``model`` as extraction runs it (to ``device``, optionally channels_last and
    bf16 autocast); float32 features on the CPU. Call under ``torch.inference_mode()``."""
    batch = batch.to(device, non_blocking=device.type == "cuda")
    if channels_last:
        batch = batch.contiguous(memory_format=torch.channels_last)
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=amp):
        feats = model(batch)
    return feats.float().cpu()


def _check_loader_args(batch_size: int, num_workers: int) -> None:
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    if num_workers < 0:
        raise ValueError(f"num_workers must be >= 0, got {num_workers}")


def _image_loader(paths, preprocess: Preprocess, batch_size: int, num_workers: int, pin_memory: bool) -> DataLoader:
    return DataLoader(
        ImageFiles(paths, preprocess.transform(train=False)),
        batch_size=batch_size,
        shuffle=False,
        num_workers=num_workers,
        pin_memory=pin_memory,
        persistent_workers=False,
    )


def embed_batches(
    model: torch.nn.Module,
    batches: Iterable[torch.Tensor],
    *,
    device: str | torch.device = "cpu",
    amp: bool | None = None,
    channels_last: bool | None = None,
    progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """(N, d) float32 features of preprocessed image ``batches``, in order (see :func:`extract_features`)."""
    device = torch.device(device)
    default = embedding_runtime(device)
    amp = default["amp"] if amp is None else amp
    channels_last = default["channels_last"] if channels_last is None else channels_last
    model = model.eval().to(device)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    out = []
    with torch.inference_mode():
        for batch in batches:
            out.append(forward_batch(model, batch, device, amp=amp, channels_last=channels_last).numpy())
            if progress is not None:
                progress(len(batch))
    dim = getattr(model, "embed_dim", None)
    if not out:
        return np.zeros((0, dim or 0), dtype=np.float32)
    return np.concatenate(out).astype(np.float32, copy=False)


def extract_features(
    model: torch.nn.Module,
    paths: Sequence[str | Path],
    preprocess: Preprocess,
    *,
    batch_size: int = 64,
    num_workers: int = 0,
    device: str | torch.device = "cpu",
    amp: bool | None = None,
    channels_last: bool | None = None,
    progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """(N, d) float32 features of the images at ``paths``, in order.

    ``amp`` (bf16 autocast) and ``channels_last`` default to :func:`embedding_runtime`'s: on for CUDA
    (autocast only with native bf16) and off elsewhere.
    ``progress`` is called with the number of images of each batch once it is embedded.
    """
    _check_loader_args(batch_size, num_workers)
    device = torch.device(device)
    loader = _image_loader(paths, preprocess, batch_size, num_workers, pin_memory=device.type == "cuda")
    return embed_batches(model, loader, device=device, amp=amp, channels_last=channels_last, progress=progress)


def preprocessed_images(
    paths: Sequence[str | Path], preprocess: Preprocess, *, batch_size: int = 64, num_workers: int = 0
) -> torch.Tensor:
    """(N, C, H, W) tensors of the images at ``paths`` after the evaluation transform, in order: decoded once,
    to embed again and again (``embed_batches(model, images.split(batch_size))`` equals
    ``extract_features(model, paths, ...)`` at the same ``batch_size``)."""
    _check_loader_args(batch_size, num_workers)
    batches = list(_image_loader(paths, preprocess, batch_size, num_workers, pin_memory=False))
    if not batches:
        raise ValueError("no images to preprocess")
    return torch.cat(batches)


def library_versions() -> dict[str, str]:
    """Versions of the libraries that shape an embedding (read from package metadata, no imports)."""
    versions = {"python": platform.python_version()}
    for key, dist in (
        ("torch", "torch"),
        ("torchvision", "torchvision"),
        ("timm", "timm"),
        ("open_clip", "open_clip_torch"),
        ("numpy", "numpy"),
        ("pillow", "pillow"),
    ):
        versions[key] = installed_version(dist) or "not installed"
    return versions


def embedding_provenance(spec: ModelSpec, weights_sha256: str | None, **extra) -> dict:
    """Provenance for the embeddings Parquet metadata: model, weights digest, layer, preprocessing, library
    versions, and the workflow's version and git commit (:func:`biastransfer.provenance.workflow_provenance`).

    ``extra`` (stage, analysis_set, config_hash, device, ...) is merged in last.
    """
    meta = {
        "model": spec.name,
        "source": spec.source,
        "arch": spec.arch,
        "pretrained_tag": spec.pretrained_tag,
        "weights": spec.weights,
        "weights_sha256": weights_sha256,
        "layer": spec.layer,
        "pool": spec.pool,
        "preprocessing": spec.preprocess.as_dict(),
        "spec": spec.as_dict(),
        "versions": library_versions(),
        **workflow_provenance(),
    }
    meta.update(extra)
    return meta


@dataclass(frozen=True)
class Inference:
    """How the embed, embed_layers and predict jobs run a network over images (``analysis.embed``):
    ``batch_size`` images a batch, decoded by ``num_workers`` loader workers, on ``device`` (``auto``: CUDA
    when there is one), with bf16 autocast where the device has it (``amp``)."""

    batch_size: int
    num_workers: int
    device: str = "auto"
    amp: bool = True

    @functools.cached_property
    def torch_device(self) -> torch.device:
        """The device resolved once (:func:`biastransfer.models.device.torch_device`)."""
        return torch_device(self.device)


def run_on_images(
    model: torch.nn.Module,
    paths: Sequence[str | Path],
    spec: ModelSpec,
    inference: Inference,
    *,
    what: str,
    log: Callable[..., None],
) -> tuple[np.ndarray, dict]:
    """``(outputs, runtime)``: ``model`` (an extractor or a classifier) on the images at ``paths``, batched,
    as the embed, embed_layers and predict rules run it, with a warning for images smaller than the crop and
    progress lines for ``what``; ``runtime`` (for the provenance) is the device and :func:`embedding_runtime`."""
    device = inference.torch_device
    runtime = embedding_runtime(device, inference.amp)
    small = undersized_images(paths, spec.preprocess.crop)
    if small:
        shown = ", ".join(f"{p} ({w}x{h})" for p, w, h in small[:5]) + (", ..." if len(small) > 5 else "")
        log(
            "%d of %d images are smaller than the %d-pixel crop of %s and are upscaled: %s",
            len(small),
            len(paths),
            spec.preprocess.crop,
            spec.name,
            shown,
        )
    from biastransfer.progress import Progress

    progress = Progress(what, len(paths), unit="images")
    outputs = extract_features(
        model,
        paths,
        spec.preprocess,
        batch_size=inference.batch_size,
        num_workers=inference.num_workers,
        device=device,
        progress=progress.update,
        **runtime,
    )
    return outputs, {"device": str(device), **runtime}
