"""One training job of the workflow: read splits, train, write the best checkpoint and its metrics."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Sequence

import pandas as pd
import torch

from biastransfer.atomic import write_csv, write_text
from biastransfer.data.cache import ImageCache
from biastransfer.data.rebalance import read_weights
from biastransfer.data.splits import read_split
from biastransfer.hashing import file_digest
from biastransfer.models.checkpoints import save_checkpoint
from biastransfer.models.spec import ModelSpec
from biastransfer.provenance import workflow_provenance
from biastransfer.train.config import TrainConfig
from biastransfer.train.data import ImageLabelDataset
from biastransfer.train.loop import Runtime, remove_resume_state, train_classifier
from biastransfer.train.trajectory import TrajectoryWriter

_HYPER = {f.name for f in dataclasses.fields(TrainConfig)} - {"seed", "num_workers"}


def train_config(hyper: dict, seed: int, num_workers: int) -> TrainConfig:
    """The :class:`TrainConfig` of ``hyper`` (its fields but ``seed`` and ``num_workers``); a clear error
    naming any unknown key."""
    unknown = sorted(set(hyper) - _HYPER)
    if unknown:
        raise ValueError(f"unknown training parameter(s) {', '.join(unknown)}; known: {', '.join(sorted(_HYPER))}")
    return TrainConfig(**hyper, seed=seed, num_workers=num_workers)


def loader_workers(requested: int) -> int:
    """``requested`` loader workers, but at most one fewer than the CPUs this process may run on (a SLURM
    job's allocation, say), which leaves one to the training process."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1  # not on macOS
    return min(requested, max(0, cpus - 1))


@dataclasses.dataclass(frozen=True)
class TrainingFiles:
    """A training job's files: its splits, their decoded-once caches' index files (both or neither;
    :mod:`biastransfer.data.cache`), and its outputs (the curve optional)."""

    train: str
    val: str
    model_out: str
    metrics_out: str
    curve_out: str | None = None
    train_cache: str | None = None
    val_cache: str | None = None

    def __post_init__(self):
        if bool(self.train_cache) != bool(self.val_cache):
            raise ValueError("give both --train_cache and --val_cache, or neither")

    @property
    def cache(self) -> tuple[str, str] | None:
        return (self.train_cache, self.val_cache) if self.train_cache else None


def cache_setting(caches: Sequence[ImageCache], spec: ModelSpec) -> str:
    """The setting name of a job's train and val caches: both resized as ``spec``'s preprocessing resizes,
    with one JPEG quality; a ValueError naming the cache otherwise."""
    pre = spec.preprocess
    for cache in caches:
        setting = cache.setting
        if (setting.side, setting.interpolation) != (pre.resize, pre.interpolation):
            raise ValueError(
                f"cache {cache.index_path} is resized to {setting.side} px ({setting.interpolation}) but {spec.name} "
                f"resizes to {pre.resize} px ({pre.interpolation})"
            )
    names = {cache.setting.name for cache in caches}
    if len(names) > 1:
        raise ValueError(
            f"caches {', '.join(str(c.index_path) for c in caches)} have different settings ({', '.join(sorted(names))})"
        )
    return names.pop()


def run_training(
    build: Callable[[Sequence[str]], torch.nn.Module],
    spec: ModelSpec,
    files: TrainingFiles,
    recipe: TrainConfig,
    *,
    device: torch.device,
    threads: int,
    log: Callable[[str], None],
    resume: str | None = None,
    init_weights_sha256: str | None = None,
    trajectory: TrajectoryWriter | None = None,
    sample_weights: str | None = None,
) -> dict:
    """Train ``build(classes)`` on a job's training split with a ``TrainConfig``; return the metrics written.

    It trains on ``files.train`` and validates on ``files.val`` with ``recipe`` (:func:`train_config`), its
    loader workers capped by :func:`loader_workers`.
    Writes the best epoch's classifier to ``files.model_out``, its metrics and the whole curve to
    ``files.metrics_out`` (JSON) and the curve to ``files.curve_out`` (CSV). ``resume`` (kept outside the
    declared outputs) holds the last epoch's state while the job runs and is removed once the outputs are
    written; it is continued only if it was written from the same initial weights (``init_weights_sha256``;
    None for a model trained from scratch), splits (sha256 of train and val), model spec, preprocessing,
    hyper-parameters and classes. The checkpoint metadata and the metrics record these digests.
    ``trajectory`` embeds the analysis sets after its epochs (its identity joins the resume key) and
    moves them into its output folders once the run's other outputs are written. ``files.cache``: the
    splits' decoded-once caches, checked against the splits and their image files (an image changed since
    it was cached is read from its file; the log says so) and read instead of the image files; both must
    be resized as ``spec`` resizes (:func:`cache_setting`), and the setting joins the resume key. ``sample_weights``: an intervention's weights file of the train split
    (:func:`~biastransfer.data.rebalance.read_weights`); a file of weights all 1 (a subsample) trains as
    without one. Its digest joins the resume key and the metrics.
    """
    torch.set_num_threads(max(1, threads))
    train_split, val_split = read_split(files.train), read_split(files.val)
    if train_split.classes != val_split.classes:
        raise ValueError(f"{files.train} and {files.val} have different class lists")
    workers, seed = loader_workers(recipe.num_workers), recipe.seed
    if workers < recipe.num_workers:
        log(
            f"{workers} loader workers instead of num_workers {recipe.num_workers}: this job may use {workers + 1} CPUs"
        )
    cfg = dataclasses.replace(recipe, num_workers=workers)
    origin = {
        "init_weights_sha256": init_weights_sha256,
        "train_sha256": file_digest(files.train),
        "val_sha256": file_digest(files.val),
    }
    if files.cache is not None:
        caches = [
            ImageCache(
                path,
                split_sha256=origin[f"{name}_sha256"],
                image_ids=split.frame["image_id"],
                paths=split.frame["path"],
            )
            for name, path, split in zip(("train", "val"), files.cache, (train_split, val_split))
        ]
        origin["cache"] = cache_setting(caches, spec)
        for cache in caches:
            if cache.source_note():
                log(cache.source_note())
    else:
        caches = [None, None]
    weights = None
    if sample_weights is not None:
        weights = read_weights(
            sample_weights, train_split.frame["image_id"].astype(str).tolist(), origin["train_sha256"]
        )
        origin["sample_weights_sha256"] = file_digest(sample_weights)
        if (weights == 1).all():
            weights = None
    torch.manual_seed(seed)  # the new head (and a from-scratch model) start from seeded weights
    model = build(train_split.classes)
    pre = spec.preprocess
    log(
        f"training {spec.name} on {train_split.dataset}: {len(train_split.frame)} train / "
        f"{len(val_split.frame)} val images, {len(train_split.classes)} classes, {cfg}, device {device}"
    )
    result = train_classifier(
        model,
        *(
            ImageLabelDataset(split, pre.uint8_transform(train=train), cache=c, normalize=pre.normalize)
            for split, train, c in ((train_split, True, caches[0]), (val_split, False, caches[1]))
        ),
        cfg,
        resume_path=resume,
        identity={**origin, "spec": spec.as_dict(), **(trajectory.identity() if trajectory else {})},
        log=log,
        device=device,
        after_epoch=trajectory,
        sample_weights=weights,
    )
    model.load_state_dict(result.best_state)
    metrics = {
        "model": spec.name,
        "dataset": train_split.dataset,
        "seed": seed,
        "metric_name": cfg.metric,
        "metric_value": result.best_metric,
        "epoch_best": result.best_epoch,
        **origin,
        "hyper": dataclasses.asdict(cfg),
        "device": str(device),
        **workflow_provenance(),
        "runtime": Runtime.resolve(cfg, device).describe(),
        "history": result.curve(),
    }
    save_checkpoint(
        model.cpu(),
        files.model_out,
        spec=spec,
        class_names=train_split.classes,
        extra={k: metrics[k] for k in ("dataset", "seed", "metric_name", "metric_value", "epoch_best", *origin)},
    )
    write_text(files.metrics_out, json.dumps(metrics, indent=2) + "\n")
    if files.curve_out is not None:
        write_csv(files.curve_out, pd.DataFrame(result.curve()))
    if trajectory is not None:
        trajectory.publish()
    if resume is not None:
        remove_resume_state(resume)
    if trajectory is not None:
        trajectory.clean()
    log(f"best epoch {result.best_epoch}: val {cfg.metric} {result.best_metric:.4f}")
    return metrics
