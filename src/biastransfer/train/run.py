"""One training job of the workflow: read splits, train, write the best checkpoint and its metrics."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import torch

from biastransfer.atomic import write_csv, write_text
from biastransfer.data.attributes import read_attributes
from biastransfer.data.cache import ImageCache
from biastransfer.data.rebalance import read_weights
from biastransfer.data.splits import read_split
from biastransfer.hashing import file_digest
from biastransfer.models.checkpoints import load_classifier_from_checkpoint, save_checkpoint
from biastransfer.models.spec import ModelSpec
from biastransfer.provenance import workflow_provenance
from biastransfer.train.config import EpochRecord, TrainConfig, TrainResult
from biastransfer.train.data import ImageLabelDataset, make_loader
from biastransfer.train.loop import Runtime, evaluate_groups, remove_resume_state, train_classifier, validation_scores
from biastransfer.train.methods import (
    Groups,
    MethodConfig,
    balanced_subset,
    check_selection_groups,
    fit_eraser,
    fit_head,
    training_method,
)
from biastransfer.train.metrics import validation_metric
from biastransfer.train.trajectory import TrajectoryWriter
from biastransfer.vocabulary import HEAD_ONLY_METHODS

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
    :mod:`biastransfer.data.cache`), its outputs (the curve optional), and the splits' attribute files
    (a method's groups, and the worst-group validation mAP; optional). ``*_cache_split``: the split files the
    caches were built from when they are another dataset's with the same rows (a mitigation arm reads its
    ``from``'s caches; the rows and their image files are checked as always)."""

    train: str
    val: str
    model_out: str
    metrics_out: str
    curve_out: str | None = None
    train_cache: str | None = None
    val_cache: str | None = None
    train_attributes: str | None = None
    val_attributes: str | None = None
    train_cache_split: str | None = None
    val_cache_split: str | None = None

    def __post_init__(self):
        if bool(self.train_cache) != bool(self.val_cache):
            raise ValueError("give both --train_cache and --val_cache, or neither")
        if bool(self.train_cache_split) != bool(self.val_cache_split) or (self.train_cache_split and not self.cache):
            raise ValueError("give both --train_cache_split and --val_cache_split with the caches, or neither")

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


def split_groups(attributes: str, split_path: str, split, digest: str) -> Groups:
    """The groups of a split's images from its attribute file, which must describe this split (``digest``)."""
    attrs = read_attributes(attributes)
    if attrs.split_sha256 != digest:
        raise ValueError(f"{attributes}: describes another version of the split than {split_path}")
    return Groups.of(attrs, split.frame["image_id"].astype(str).tolist(), split.classes, where=attributes)


def _targets(split) -> np.ndarray:
    index = {c: i for i, c in enumerate(split.classes)}
    y = np.zeros((len(split.frame), len(split.classes)), dtype=np.float32)
    for row, labels in enumerate(split.frame["labels"]):
        y[row, [index[label] for label in labels]] = 1.0
    return y


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
    method: MethodConfig | None = None,
    start: str | None = None,
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
    ``method`` (:class:`~biastransfer.train.methods.MethodConfig`; None: plain, selected by the validation
    metric) trains through the loop's method hook, or, for a head-only method (DFR, LEACE), refits the last
    layer of the finetuned network ``start`` (then ``build`` is not called). A method needs
    ``files.train_attributes``; selection worst_group and the recorded ``metric_worst_group`` need
    ``files.val_attributes`` (without it ``metric_worst_group`` is None). An empty validation group under
    selection worst_group fails before any training, naming the group and the file.
    """
    torch.set_num_threads(max(1, threads))
    method = method or MethodConfig()
    train_split, val_split = read_split(files.train), read_split(files.val)
    if train_split.classes != val_split.classes:
        raise ValueError(f"{files.train} and {files.val} have different class lists")
    if method.method != "plain" and not files.train_attributes:
        raise ValueError(f"method {method.method} needs the training split's attribute file (train_attributes)")
    if method.selection == "worst_group" and not files.val_attributes:
        raise ValueError("selection worst_group needs the validation split's attribute file (val_attributes)")
    if method.method in HEAD_ONLY_METHODS and not start:
        raise ValueError(f"method {method.method} needs the finetuned network it starts from (start)")
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
        built_from = (
            {"train": file_digest(files.train_cache_split), "val": file_digest(files.val_cache_split)}
            if files.train_cache_split
            else {"train": origin["train_sha256"], "val": origin["val_sha256"]}
        )
        caches = [
            ImageCache(
                path,
                split_sha256=built_from[name],
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
    train_groups = val_groups = None
    if files.train_attributes and method.method != "plain":
        train_groups = split_groups(files.train_attributes, files.train, train_split, origin["train_sha256"])
        origin["train_attributes_sha256"] = file_digest(files.train_attributes)
    if files.val_attributes:
        val_groups = split_groups(files.val_attributes, files.val, val_split, origin["val_sha256"])
        origin["val_attributes_sha256"] = file_digest(files.val_attributes)
        if method.selection == "worst_group":
            check_selection_groups(val_groups, _targets(val_split), val_split.classes, where=files.val_attributes)
    if method.method in HEAD_ONLY_METHODS:
        origin["start_sha256"] = file_digest(start)
    pre = spec.preprocess
    train_set, val_set = (
        ImageLabelDataset(
            split,
            pre.uint8_transform(train=train),
            cache=c,
            normalize=pre.normalize,
            codes=None if groups is None else groups.codes,
        )
        for split, train, c, groups in (
            (train_split, True, caches[0], train_groups),
            (val_split, False, caches[1], None),
        )
    )
    log(
        f"training {spec.name} on {train_split.dataset} ({method.method}, selection {method.selection}): "
        f"{len(train_split.frame)} train / {len(val_split.frame)} val images, {len(train_split.classes)} classes, "
        f"{cfg}, device {device}"
    )
    if method.method in HEAD_ONLY_METHODS:
        model, result = refit_last_layer(
            start,
            ImageLabelDataset(train_split, pre.uint8_transform(train=False), cache=caches[0], normalize=pre.normalize),
            val_set,
            train_groups,
            val_groups,
            method,
            cfg,
            device,
            log,
        )
    else:
        torch.manual_seed(seed)  # the new head (and a from-scratch model) start from seeded weights
        model = build(train_split.classes)
        result = train_classifier(
            model,
            train_set,
            val_set,
            cfg,
            resume_path=resume,
            identity={
                **origin,
                "spec": spec.as_dict(),
                **({} if method == MethodConfig() else {"method": dataclasses.asdict(method)}),
                **(trajectory.identity() if trajectory else {}),
            },
            log=log,
            device=device,
            after_epoch=trajectory,
            sample_weights=weights,
            method=training_method(method, len(train_groups.values) if train_groups else 0),
            val_groups=val_groups,
            selection=method.selection,
        )
        model.load_state_dict(result.best_state)
    metrics = {
        "model": spec.name,
        "dataset": train_split.dataset,
        "seed": seed,
        "metric_name": cfg.metric,
        "metric_value": result.best_metric,
        "metric_worst_group": result.best_worst_group,
        "method": method.method,
        "selection": method.selection,
        "method_options": dataclasses.asdict(method),
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


def penultimate_features(
    model: torch.nn.Module, dataset: ImageLabelDataset, cfg: TrainConfig, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """(features at the classifier's input, targets) of every image of ``dataset``, in its order, on the CPU."""
    features, targets = [], []
    model.eval()
    with torch.inference_mode():
        for x, y in make_loader(dataset, cfg, device, persistent=False):
            features.append(model.backbone(x.to(device)).float().cpu())
            targets.append(y)
    return torch.cat(features), torch.cat(targets)


def refit_last_layer(
    start: str,
    train_set: ImageLabelDataset,
    val_set: ImageLabelDataset,
    train_groups: Groups,
    val_groups: Groups | None,
    method: MethodConfig,
    cfg: TrainConfig,
    device: torch.device,
    log: Callable[[str], None] = print,
) -> tuple[torch.nn.Module, TrainResult]:
    """DFR or LEACE on the finetuned network ``start``: its backbone's tensors kept, the last layer refitted on
    the penultimate features of ``train_set`` (unaugmented): on a group-balanced subset drawn by ``cfg.seed``
    (DFR), or on all of them erased of the attribute (LEACE, the eraser appended to the backbone). Returns the
    network and a one-record result (epoch 1: the refit) with its validation figures."""
    tic = time.perf_counter()
    model, meta = load_classifier_from_checkpoint(start)
    if tuple(meta["class_names"]) != tuple(train_set.classes):
        raise ValueError(
            f"{start}: the network predicts {', '.join(meta['class_names'])}, not the split's classes "
            f"{', '.join(train_set.classes)}"
        )
    model.to(device)
    features, y = penultimate_features(model, train_set, cfg, device)
    if method.method == "dfr":
        rows = torch.from_numpy(balanced_subset(train_groups, y.numpy(), cfg.seed))
        log(f"DFR: the last layer refitted on a group-balanced subset of {len(rows)} of {len(y)} training images")
        features, y = features[rows], y[rows]
    else:
        weight, bias = fit_eraser(features, train_groups.codes, len(train_groups.values))
        model.backbone.set_eraser(weight, bias)
        features = features @ weight.T + bias
        log(f"LEACE: the attribute erased from {features.shape[1]} features; the last layer refitted on them")
    model.head = fit_head(features, y, l2=method.head_l2, steps=method.head_steps)
    with torch.no_grad():
        train_loss = float(torch.nn.functional.binary_cross_entropy_with_logits(model.head(features), y))
    model.to(device)
    val_loader = make_loader(val_set, cfg, device, persistent=False)
    if val_groups is None:
        val_loss, y_val, s_val = validation_scores(model, val_loader, device)
        value, worst = validation_metric(cfg.metric, y_val, s_val, cfg.threshold), None
    else:
        val_loss, value, worst = evaluate_groups(model, val_loader, cfg, device, val_groups)
    seconds = time.perf_counter() - tic
    record = EpochRecord(1, train_loss, val_loss, value, 0.0, seconds, len(train_set) / seconds, 0.0, worst)
    return model, TrainResult(cfg.metric, best_epoch=1, best_metric=value, history=[record])
