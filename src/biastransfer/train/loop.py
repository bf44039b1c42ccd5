"""Multi-label training and finetuning: BCE-with-logits, SGD / AdamW / LARS, validation each epoch, resumable.

The loop is deterministic on CPU for a given seed: each epoch reseeds torch from (seed, epoch), the
sampler's order depends only on (seed, epoch), and every image's augmentation is seeded from
(seed, epoch, index), whichever loader worker decodes it. A run resumed from its last epoch
checkpoint therefore reaches exactly the same weights as an uninterrupted one.

On CUDA the loop runs under bf16 autocast (on GPUs with native bf16) with channels_last tensors, pinned
memory and persistent training-loader workers, and can compile the model; on CPU each of these degrades
to the plain fp32 path.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader

from biastransfer.atomic import atomic_writer, remove_stale_temporaries
from biastransfer.models.device import bf16_autocast
from biastransfer.progress import EVERY_S as PROGRESS_EVERY_S
from biastransfer.train.config import RESULT_NEUTRAL, EpochRecord, TrainConfig, TrainResult
from biastransfer.train.data import EpochSampler, ImageLabelDataset, epoch_seed, make_loader
from biastransfer.train.lars import LARS, lars_param_groups
from biastransfer.train.methods import Groups, MethodConfig, TrainingMethod
from biastransfer.train.metrics import validation_metric
from biastransfer.vocabulary import SELECTIONS


def make_optimizer(model: nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    """SGD (momentum, weight decay), AdamW, or LARS over biases-excluded groups."""
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    if cfg.optimizer == "lars":
        return LARS(
            lars_param_groups(model), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay, eta=cfg.lars_eta
        )
    return torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)


def make_scheduler(optimizer: torch.optim.Optimizer, cfg: TrainConfig):
    """Per-epoch learning-rate schedule (None for a constant rate)."""
    if cfg.scheduler == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=cfg.epochs)
    if cfg.scheduler == "plateau":
        mode = "max" if cfg.plateau_monitor == "metric" else "min"
        return torch.optim.lr_scheduler.ReduceLROnPlateau(
            optimizer, mode=mode, factor=cfg.plateau_factor, patience=cfg.plateau_patience
        )
    return None


@dataclass(frozen=True)
class Runtime:
    """How a config runs on a device: autocast dtype, memory format, compilation."""

    device: torch.device
    autocast: torch.dtype | None
    channels_last: bool
    compile: bool

    @classmethod
    def resolve(cls, cfg: TrainConfig, device: torch.device) -> Runtime:
        cuda = device.type == "cuda"
        if cfg.precision == "bf16":
            dtype = torch.bfloat16
        elif cfg.precision == "auto" and bf16_autocast(device):
            dtype = torch.bfloat16
        else:
            dtype = None
        return cls(device, dtype, cfg.channels_last and cuda, cfg.compile and cuda)

    def describe(self) -> dict:
        """What the run actually uses, as plain JSON values (the resume key and the metrics record it)."""
        return {
            "device": self.device.type,
            "autocast": str(self.autocast).removeprefix("torch.") if self.autocast is not None else None,
            "channels_last": self.channels_last,
            "compile": self.compile,
        }

    def autocast_context(self):
        return torch.autocast(self.device.type, dtype=self.autocast, enabled=self.autocast is not None)

    def inputs(self, x: torch.Tensor) -> torch.Tensor:
        x = x.to(self.device, non_blocking=True)
        return x.contiguous(memory_format=torch.channels_last) if self.channels_last and x.ndim == 4 else x


def validation_scores(
    model: nn.Module, loader: DataLoader, device: torch.device | Runtime
) -> tuple[float, np.ndarray, np.ndarray]:
    """Validation loss (mean BCE per label), targets and sigmoid scores, in the loader's order."""
    rt = device if isinstance(device, Runtime) else Runtime(torch.device(device), None, False, False)
    model.eval()
    loss_fn = nn.BCEWithLogitsLoss(reduction="sum")
    losses, scores, targets = [], [], []
    with torch.inference_mode(), rt.autocast_context():
        for x, y in loader:
            y = y.to(rt.device, non_blocking=True)
            logits = model(rt.inputs(x)).float()
            losses.append(loss_fn(logits, y))
            scores.append(torch.sigmoid(logits))
            targets.append(y)
    y_true, y_score = torch.cat(targets).cpu().numpy(), torch.cat(scores).cpu().numpy()
    return float(torch.stack(losses).sum()) / y_true.size, y_true, y_score


def evaluate(
    model: nn.Module, loader: DataLoader, cfg: TrainConfig, device: torch.device | Runtime
) -> tuple[float, float]:
    """Validation loss (mean BCE per label) and metric (mAP, or micro-F1 at ``cfg.threshold``)."""
    loss, y_true, y_score = validation_scores(model, loader, device)
    return loss, validation_metric(cfg.metric, y_true, y_score, cfg.threshold)


def evaluate_groups(
    model: nn.Module, loader: DataLoader, cfg: TrainConfig, device: torch.device | Runtime, groups: Groups
) -> tuple[float, float, float]:
    """:func:`evaluate`'s loss and metric, and the worst-group mAP over ``groups`` (of the loader's images)."""
    loss, y_true, y_score = validation_scores(model, loader, device)
    return (
        loss,
        validation_metric(cfg.metric, y_true, y_score, cfg.threshold),
        groups.worst_group(y_true, y_score),
    )


# --------------------------------------------------------------------------------------------
# The loop
# --------------------------------------------------------------------------------------------


def _state_on_cpu(model: nn.Module) -> dict:
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


def _comparable(cfg: TrainConfig) -> dict:
    return {k: v for k, v in asdict(cfg).items() if k not in RESULT_NEUTRAL}


def resume_key(cfg: TrainConfig, classes, identity: dict | None = None, runtime: Runtime | None = None) -> dict:
    """What a resume state must match to be continued: the hyper-parameters, the classes,
    ``identity`` (initial weights' and splits' digests, model spec, preprocessing) and the ``runtime``
    actually used (device type, autocast dtype, channels_last, compile; ``precision: auto`` is bf16 on
    one device and fp32 on another), as plain JSON values."""
    key = {"hyper": _comparable(cfg), "classes": list(classes), **(identity or {})}
    if runtime is not None:
        key["runtime"] = runtime.describe()
    return json.loads(json.dumps(key))


_KEY_WORDS = {
    "hyper": "hyper-parameters",
    "classes": "class list",
    "init_weights_sha256": "initial weights (sha256)",
    "train_sha256": "training split (sha256)",
    "val_sha256": "validation split (sha256)",
    "spec": "model spec or preprocessing",
    "trajectory": "trajectory epochs or analysis-set manifests",
    "runtime": "device or precision in use",
}


def _stale(saved: dict | None, key: dict) -> list[str]:
    """The entries of ``key`` that a saved resume key lacks or holds with another value."""
    saved = saved or {}
    return [k for k in key if saved.get(k) != key[k]] + sorted(set(saved) - set(key))


def remove_resume_state(path: str | Path) -> None:
    """Delete a resume file and any temporary file a killed save left beside it."""
    Path(path).unlink(missing_ok=True)
    remove_stale_temporaries(path)


def _check_finite(loss_sum: torch.Tensor, epoch: int, first: int, last: int, lr: float) -> None:
    if not torch.isfinite(loss_sum):
        raise FloatingPointError(
            f"non-finite training loss ({float(loss_sum)}) at epoch {epoch}, in batches {first}-{last}: "
            f"lower the learning rate (now {lr:g}) or set grad_clip"
        )


def train_classifier(
    model: nn.Module,
    train_set: ImageLabelDataset,
    val_set: ImageLabelDataset,
    cfg: TrainConfig,
    *,
    resume_path: str | Path | None = None,
    identity: dict | None = None,
    log: Callable[[str], None] = print,
    device: str | torch.device = "cpu",
    after_epoch: Callable[[int, nn.Module], None] | None = None,
    sample_weights: np.ndarray | None = None,
    method: TrainingMethod | None = None,
    val_groups: Groups | None = None,
    selection: str = "map",
) -> TrainResult:
    """Train ``model`` (logits for ``train_set.classes``) and keep the best epoch by validation metric.

    With ``resume_path``, the state after each epoch is saved there and a run finding it continues
    from the epoch after. The state is keyed by :func:`resume_key` (hyper-parameters, classes and
    ``identity``: whatever else determines the result, such as the initial weights' digest); a state
    with another key is discarded, and the log names what differs. A non-finite loss stops the run
    with FloatingPointError. ``after_epoch(epoch, model)`` runs after each epoch's validation, before
    its resume state is saved (so an epoch whose state was saved has had its call), with the model in
    eval mode; what it does with the torch random state does not reach training (each epoch reseeds).
    ``sample_weights``: one per training image, drawn by :class:`EpochSampler` with replacement (an
    intervention by reweighting); their digest belongs in ``identity``.
    ``method``: the training loss's hook (biastransfer.train.methods; None: plain BCE); its modules join the
    model for the run and are folded or dropped from the best epoch's weights (``best_state``) at the end.
    A method other than plain needs ``train_set`` with attribute codes. ``val_groups``: the validation images'
    groups, whose worst-group mAP each epoch records; ``selection`` ``worst_group`` keeps the epoch with the
    highest (it needs ``val_groups``), ``map`` the one with the highest validation metric.
    """
    device = torch.device(device)
    rt = Runtime.resolve(cfg, device)
    method = method or TrainingMethod(MethodConfig())
    if selection not in SELECTIONS:
        raise ValueError(f"selection must be one of {', '.join(SELECTIONS)}, got {selection!r}")
    if selection == "worst_group" and val_groups is None:
        raise ValueError("selection worst_group needs the validation split's groups (val_groups)")
    if method.uses_attribute and getattr(train_set, "codes", None) is None:
        raise ValueError(f"method {method.cfg.method} needs each training image's attribute code (train_set codes)")
    if train_set.classes != val_set.classes:
        raise ValueError("train and validation sets have different class lists")
    n_out = getattr(model, "num_classes", None)
    if n_out is not None and n_out != len(train_set.classes):
        raise ValueError(f"the model has {n_out} outputs but the dataset has {len(train_set.classes)} classes")
    method.prepare(model)
    model.to(device)
    if rt.channels_last:
        model.to(memory_format=torch.channels_last)
    optimizer = make_optimizer(model, cfg)
    scheduler = make_scheduler(optimizer, cfg)
    result = TrainResult(cfg.metric, best_epoch=0, best_metric=-math.inf, selection=selection)
    best_score = -math.inf
    start = 1
    state = None
    key = resume_key(cfg, train_set.classes, identity, rt)
    if resume_path is not None:
        state = _load_resume(resume_path, key, log)
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        if scheduler is not None:
            scheduler.load_state_dict(state["scheduler"])
        result.history = [EpochRecord(**r) for r in state["history"]]
        result.best_epoch, result.best_metric = state["best_epoch"], state["best_metric"]
        result.best_state = state["best_state"]
        best_score = max((_selection_score(r, selection) for r in result.history), default=-math.inf)
        start = state["epoch"] + 1
        log(f"resumed from {resume_path} after epoch {state['epoch']}")
    step_model = torch.compile(model) if rt.compile else model
    if cfg.compile and not rt.compile:
        log("compile is only used on CUDA; running eagerly")
    sampler = EpochSampler(len(train_set), cfg.seed, sample_weights)
    loader = make_loader(train_set, cfg, device, sampler=sampler, drop_last=len(train_set) > cfg.batch_size)
    # Validation workers live only while validation runs (the training workers then wait for the next
    # epoch), so that no more than num_workers decode at any time.
    val_loader = make_loader(val_set, cfg, device, persistent=False)
    params = [p for p in model.parameters() if p.requires_grad]
    logged = time.perf_counter()
    for epoch in range(start, cfg.epochs + 1):
        torch.manual_seed(epoch_seed(cfg.seed, epoch))
        sampler.set_epoch(epoch)
        model.train()
        lr = optimizer.param_groups[0]["lr"]
        tic, seen, waited, first = time.perf_counter(), 0, 0.0, 1
        loss_sum = torch.zeros((), device=device)
        batches = iter(loader)
        batch = 0
        while True:
            t0 = time.perf_counter()
            item = next(batches, None)
            waited += time.perf_counter() - t0
            if item is None:
                break
            batch += 1
            x, y = rt.inputs(item[0]), item[1].to(device, non_blocking=True)
            codes = item[2].to(device, non_blocking=True) if len(item) > 2 else None
            with rt.autocast_context():
                loss = method.loss(model if method.uses_attribute else step_model, x, y, codes)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if cfg.grad_clip is not None:
                nn.utils.clip_grad_norm_(params, cfg.grad_clip)
            optimizer.step()
            seen += len(y)
            loss_sum += loss.detach() * len(y)
            if batch % cfg.log_every == 0:  # the only host sync inside an epoch
                _check_finite(loss_sum, epoch, first, batch, lr)
                first = batch + 1
                if time.perf_counter() - logged >= PROGRESS_EVERY_S:
                    logged = time.perf_counter()
                    log(
                        f"epoch {epoch}/{cfg.epochs} batch {batch}/{len(loader)} loss {float(loss_sum) / seen:.4f}, "
                        f"{seen / (logged - tic):.0f} img/s"
                    )
        _check_finite(loss_sum, epoch, first, batch, lr)
        train_loss = float(loss_sum) / max(seen, 1)
        train_seconds = time.perf_counter() - tic
        if val_groups is None:
            val_loss, value = evaluate(step_model, val_loader, cfg, rt)
            worst = None
        else:
            val_loss, value, worst = evaluate_groups(step_model, val_loader, cfg, rt, val_groups)
        if isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
            scheduler.step({"train_loss": train_loss, "val_loss": val_loss, "metric": value}[cfg.plateau_monitor])
        elif scheduler is not None:
            scheduler.step()
        record = EpochRecord(
            epoch, train_loss, val_loss, value, lr, time.perf_counter() - tic, seen / train_seconds, waited, worst
        )
        result.history.append(record)
        log(
            f"epoch {epoch}/{cfg.epochs}: train loss {record.train_loss:.4f}, val loss {val_loss:.4f}, "
            f"val {cfg.metric} {value:.4f}"
            + ("" if worst is None else f", worst group {worst:.4f}")
            + f", {record.images_per_s:.0f} img/s, waited {waited:.1f}s for data"
        )
        score = _selection_score(record, selection)
        if score > best_score:
            best_score = score
            result.best_epoch, result.best_metric = epoch, value
            result.best_state = _state_on_cpu(model)
        if after_epoch is not None:
            model.eval()
            after_epoch(epoch, model)
        if resume_path is not None:
            _save_resume(resume_path, model, optimizer, scheduler, epoch, result, key)
    if result.best_state is None:
        raise ValueError(f"no epoch has a defined worst-group validation mAP to select by (selection {selection})")
    model.load_state_dict(result.best_state)
    method.finish(model)
    result.best_state = _state_on_cpu(model)
    return result


def _selection_score(record: EpochRecord, selection: str) -> float:
    """What ``selection`` ranks an epoch by (an undefined worst-group value ranks last)."""
    if selection == "map":
        return record.metric
    return -math.inf if record.worst_group is None or math.isnan(record.worst_group) else record.worst_group


def _load_resume(path: str | Path, key: dict, log: Callable[[str], None]) -> dict | None:
    """The saved state at ``path``, on the CPU (loading copies it to the model's device; the best epoch's
    weights stay on the CPU), if its key is ``key``; otherwise None, after deleting it and logging why."""
    remove_stale_temporaries(path)
    if not Path(path).is_file():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # a truncated or foreign file: nothing to continue from
        log(f"{path} is not a readable resume state ({type(exc).__name__}: {exc}); starting over")
        Path(path).unlink(missing_ok=True)
        return None
    stale = _stale(state.get("key") if isinstance(state, dict) else None, key)
    if stale:
        log(
            f"{path} was written with another {', '.join(_KEY_WORDS.get(k, k) for k in stale)}; "
            "discarding it and starting over"
        )
        Path(path).unlink(missing_ok=True)
        return None
    return state


def _save_resume(path, model, optimizer, scheduler, epoch: int, result: TrainResult, key: dict) -> None:
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict() if scheduler is not None else {},
        "epoch": epoch,
        "history": result.curve(),
        "best_epoch": result.best_epoch,
        "best_metric": result.best_metric,
        "best_state": result.best_state,
        "key": key,
    }
    with atomic_writer(path) as fh:  # a full disk: OSError ENOSPC naming the file, not the zip writer's message
        torch.save(state, fh)
