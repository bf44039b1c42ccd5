"""Trajectory embeddings: the analysis sets embedded after chosen epochs of a finetuning run, from the
model in memory (no checkpoint per epoch).

Files go to a staging folder beside the job's outputs while it runs (Snakemake deletes declared outputs
before a job starts, and a resumed job must keep the epochs it already embedded) and are moved into the
declared folders once training ends: ``{out_dir}/epoch{NN}.parquet``, in the embeddings schema of
docs/formats.md, with ``epoch`` and ``trajectory: true`` in the provenance.

The analysis images are decoded and preprocessed once, at the first epoch embedded, and kept in memory for
the others while they fit in ``cache_bytes`` (1 GiB by default; a set beyond it is decoded again at each
epoch). The features are the same either way.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import torch
from torch import nn

from biastransfer.data.manifest import read_manifest, verify_files
from biastransfer.embeddings import epoch_file, epoch_files, write_embeddings
from biastransfer.hashing import file_digest
from biastransfer.models.features import (
    embed_batches,
    embedding_provenance,
    embedding_runtime,
    extract_features,
    preprocessed_images,
)
from biastransfer.models.spec import ModelSpec


class TrajectoryWriter:
    """``writer(epoch, model)``, the ``after_epoch`` of :func:`~biastransfer.train.loop.train_classifier`.

    ``manifests`` and ``out_dirs`` map each analysis set to its manifest and its output folder; ``epochs``
    are the epochs to embed; ``staging`` is a folder kept outside the declared outputs. ``provenance`` is
    merged into every file's metadata (stage, config hash, the run's origin digests, ...). Preprocessed
    images are kept in memory up to ``cache_bytes`` in all. ``channels_last`` is the training run's memory
    format (the model is embedded as it trains, never converted); ``amp`` asks for bf16 autocast, used where
    the device computes bf16 natively (both are recorded in the provenance).
    """

    def __init__(
        self,
        spec: ModelSpec,
        manifests: Mapping[str, str],
        out_dirs: Mapping[str, str],
        epochs: Sequence[int],
        staging: str | os.PathLike,
        *,
        batch_size: int,
        num_workers: int,
        device: torch.device,
        provenance: Mapping | None = None,
        log: Callable[[str], None] = print,
        cache_bytes: int = 2**30,
        channels_last: bool = False,
        amp: bool = True,
    ):
        if set(manifests) != set(out_dirs):
            raise ValueError(
                f"analysis sets of the manifests ({sorted(manifests)}) and of the output folders "
                f"({sorted(out_dirs)}) differ"
            )
        self.spec, self.out_dirs, self.epochs = spec, dict(out_dirs), sorted(set(epochs))
        self.staging = Path(staging)
        self.batch_size, self.num_workers, self.device = batch_size, num_workers, device
        self.runtime = {**embedding_runtime(device, amp), "channels_last": channels_last}
        self.provenance, self.log = dict(provenance or {}), log
        self.images = {}
        for name, path in manifests.items():
            frame = read_manifest(path)
            verify_files(frame, ".")
            self.images[name] = (frame, file_digest(path))
        self._cached, self._cache, left = set(), {}, cache_bytes
        for name, (frame, _) in self.images.items():
            size = len(frame) * 3 * spec.preprocess.crop**2 * 4  # float32 (3, crop, crop) per image
            if size <= left:
                self._cached.add(name)
                left -= size
            else:
                log(
                    f"{name}: {size / 2**20:.0f} MiB of preprocessed images exceed the trajectory cache's "
                    f"{left / 2**20:.0f} MiB left; decoding them again at every epoch"
                )
        self._started = False

    def identity(self) -> dict:
        """What a resume state must also match: the epochs and the manifests' digests (a resumed run keeps
        the epochs it embedded before)."""
        return {
            "trajectory": {
                "epochs": self.epochs,
                "manifests": {name: digest for name, (_, digest) in sorted(self.images.items())},
            }
        }

    def _staged(self, name: str, epoch: int) -> Path:
        return self.staging / name / epoch_file(epoch)

    def _forget_from(self, epoch: int) -> None:
        """Remove staged files of ``epoch`` and later (left by a run that stopped without saving them)."""
        for name in self.images:
            folder = self.staging / name
            if folder.is_dir():
                for e, path in epoch_files(folder).items():
                    if e >= epoch:
                        path.unlink()

    def __call__(self, epoch: int, model: nn.Module) -> None:
        if not self._started:
            self._forget_from(epoch)
            self._started = True
        if epoch not in self.epochs:
            return
        backbone = getattr(model, "backbone", model)
        for name, (frame, digest) in self.images.items():
            features = self._embed(name, frame["path"].tolist(), backbone)
            meta = embedding_provenance(
                self.spec,
                None,
                **self.provenance,
                analysis_set=name,
                manifest_sha256=digest,
                device=str(self.device),
                **self.runtime,
                epoch=epoch,
                trajectory=True,
            )
            write_embeddings(self._staged(name, epoch), frame["image_id"], frame["class"], features, meta)
        self.log(f"embedded {', '.join(self.images)} after epoch {epoch}")

    def _embed(self, name: str, paths: list[str], backbone: nn.Module):
        """Features of one analysis set, from its tensors in memory where it was given a place there."""
        if name not in self._cached:
            return extract_features(
                backbone,
                paths,
                self.spec.preprocess,
                batch_size=self.batch_size,
                num_workers=self.num_workers,
                device=self.device,
                **self.runtime,
            )
        if name not in self._cache:
            images = preprocessed_images(
                paths, self.spec.preprocess, batch_size=self.batch_size, num_workers=self.num_workers
            )
            self._cache[name] = images.pin_memory() if self.device.type == "cuda" else images
        return embed_batches(backbone, self._cache[name].split(self.batch_size), device=self.device, **self.runtime)

    def publish(self) -> None:
        """Copy every staged epoch into its output folder (each file atomically); FileNotFoundError naming
        any epoch not staged. The staged files stay until :meth:`clean`, called once the resume state is
        gone: a run killed in between finds them again on its rerun (resumed after its last epoch, it
        embeds nothing)."""
        missing = [
            str(self._staged(n, e)) for n in self.images for e in self.epochs if not self._staged(n, e).is_file()
        ]
        if missing:
            raise FileNotFoundError(f"trajectory embeddings missing after training: {', '.join(missing)}")
        for name, out in self.out_dirs.items():
            Path(out).mkdir(parents=True, exist_ok=True)
            for epoch in self.epochs:
                target = Path(out) / epoch_file(epoch)
                partial = target.with_name(f"{target.name}.partial")
                shutil.copyfile(self._staged(name, epoch), partial)
                os.replace(partial, target)

    def clean(self) -> None:
        """Remove the staged files (after :meth:`publish` and the resume state's removal)."""
        remove_staging(self.staging)


def staging_folder(resume: str | os.PathLike) -> Path:
    """Where a finetune job with resume state ``resume`` stages its trajectory files."""
    return Path(resume).parent / f"{Path(resume).name}.trajectory"


def remove_staging(staging: str | os.PathLike) -> None:
    """Remove a staging folder (if any): after publishing, or left by a killed run whose trajectory has
    since been turned off."""
    shutil.rmtree(staging, ignore_errors=True)
