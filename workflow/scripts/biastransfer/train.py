"""Multi-label training and finetuning: BCE-with-logits, SGD / AdamW / LARS, validation each epoch, resumable.

The loop is deterministic on CPU for a given seed: each epoch reseeds torch from (seed, epoch), the
sampler's order depends only on (seed, epoch), and every image's augmentation is seeded from
(seed, epoch, index), whichever loader worker decodes it. A run resumed from its last epoch
checkpoint therefore reaches exactly the same weights as an uninterrupted one.

On CUDA the loop runs under bf16 autocast with channels_last tensors, pinned memory and persistent
loader workers, and can compile the model; on CPU each of these degrades to the plain fp32 path.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np
import torch
from PIL import Image, UnidentifiedImageError
from torch import nn
from torch.utils.data import DataLoader, Dataset, Sampler, get_worker_info

from .metrics import METRICS, validation_metric
from .splits import Split

OPTIMIZERS = ("sgd", "adamw", "lars")
SCHEDULERS = ("none", "cosine", "plateau")
PLATEAU_MONITORS = ("train_loss", "val_loss", "metric")
PRECISIONS = ("auto", "fp32", "bf16")
# Fields that do not change what a run computes: a resume file written with other values is still valid.
_RESULT_NEUTRAL = ("num_workers", "prefetch_factor", "log_every")


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of one training run (every field goes through the workflow's params).

    ``precision``: ``auto`` is bf16 autocast on a CUDA device that supports it and fp32 elsewhere;
    ``bf16`` forces autocast on any device (CPU included). ``channels_last`` and ``compile`` apply on
    CUDA only. ``grad_clip`` is a maximum gradient norm (None: no clipping). The plateau scheduler
    multiplies the learning rate by ``plateau_factor`` after ``plateau_patience`` epochs without
    improvement of ``plateau_monitor`` (losses must fall, the metric must rise).
    """

    epochs: int
    lr: float
    batch_size: int = 32
    momentum: float = 0.9
    weight_decay: float = 1e-4
    optimizer: str = "sgd"
    lars_eta: float = 0.001
    scheduler: str = "none"
    plateau_monitor: str = "train_loss"
    plateau_factor: float = 0.1
    plateau_patience: int = 10
    grad_clip: float | None = None
    precision: str = "auto"
    channels_last: bool = True
    compile: bool = False
    seed: int = 0
    metric: str = "mAP"
    threshold: float = 0.5
    num_workers: int = 0
    prefetch_factor: int = 2
    log_every: int = 20

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "prefetch_factor", "log_every"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        for name in ("num_workers", "plateau_patience"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if not (self.momentum >= 0 and self.weight_decay >= 0 and self.lars_eta > 0):
            raise ValueError("momentum and weight_decay must be >= 0 and lars_eta > 0, got "
                             f"{self.momentum}, {self.weight_decay}, {self.lars_eta}")
        if not 0 < self.plateau_factor < 1:
            raise ValueError(f"plateau_factor must be in (0, 1), got {self.plateau_factor}")
        if self.grad_clip is not None and not self.grad_clip > 0:
            raise ValueError(f"grad_clip must be > 0 or None, got {self.grad_clip}")
        if not 0 < self.threshold < 1:
            raise ValueError(f"threshold must be in (0, 1), got {self.threshold}")
        for name, value, allowed in (
            ("optimizer", self.optimizer, OPTIMIZERS),
            ("scheduler", self.scheduler, SCHEDULERS),
            ("plateau_monitor", self.plateau_monitor, PLATEAU_MONITORS),
            ("precision", self.precision, PRECISIONS),
            ("metric", self.metric, METRICS),
        ):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")


@dataclass(frozen=True)
class EpochRecord:
    """Training curve entry for one epoch (``data_seconds``: time the loop waited for batches)."""

    epoch: int
    train_loss: float
    val_loss: float
    metric: float
    lr: float
    seconds: float
    images_per_s: float
    data_seconds: float = 0.0


@dataclass
class TrainResult:
    """Outcome of a run: the best epoch by the validation metric and the whole curve."""

    metric: str
    best_epoch: int
    best_metric: float
    history: list[EpochRecord] = field(default_factory=list)
    best_state: dict | None = None

    def curve(self) -> list[dict]:
        """The training curve as a list of plain dicts (for JSON / CSV)."""
        return [asdict(r) for r in self.history]


# --------------------------------------------------------------------------------------------
# LARS
# --------------------------------------------------------------------------------------------


class LARS(torch.optim.Optimizer):
    """SGD with momentum and layer-wise adaptive rate scaling (You, Gitman & Ginsburg 2017).

    For a parameter ``w`` with gradient ``g`` in an adapted group: ``d = g + wd * w``,
    ``trust = eta * ||w|| / ||d||`` (1 when either norm is 0), ``v = momentum * v + trust * d``,
    ``w -= lr * v``. Groups with ``lars=False`` (biases and normalisation weights, as in SimCLR)
    skip both the trust ratio and weight decay, i.e. they take plain SGD-momentum steps. Build the
    usual split with :func:`lars_param_groups`.
    """

    def __init__(self, params, lr: float, momentum: float = 0.9, weight_decay: float = 0.0, eta: float = 0.001):
        if not lr > 0 or momentum < 0 or weight_decay < 0 or not eta > 0:
            raise ValueError(f"LARS needs lr > 0, momentum >= 0, weight_decay >= 0, eta > 0; got {lr}, {momentum}, {weight_decay}, {eta}")
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay, eta=eta, lars=True))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                d = p.grad
                if group["lars"]:
                    if group["weight_decay"]:
                        d = d.add(p, alpha=group["weight_decay"])
                    w_norm, d_norm = torch.linalg.vector_norm(p), torch.linalg.vector_norm(d)
                    trust = torch.where((w_norm > 0) & (d_norm > 0), group["eta"] * w_norm / d_norm, 1.0)
                    d = d * trust
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = d.detach().clone()
                else:
                    state["momentum_buffer"].mul_(group["momentum"]).add_(d)
                p.add_(state["momentum_buffer"], alpha=-group["lr"])
        return loss


def lars_param_groups(model: nn.Module) -> list[dict]:
    """Weights of layers (>= 2-D) are LARS-adapted; biases and norm parameters (1-D) are not."""
    params = [p for p in model.parameters() if p.requires_grad]
    return [{"params": [p for p in params if p.ndim > 1], "lars": True},
            {"params": [p for p in params if p.ndim <= 1], "lars": False, "weight_decay": 0.0}]


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


class ImageLabelDataset(Dataset):
    """Images of a split with their multi-hot targets; decoding happens in DataLoader workers.

    An item key is an index, or ``(index, seed)`` from :class:`EpochSampler`: the transform's random
    draws (e.g. flips) are then seeded by ``seed``, so they do not depend on which worker runs it.
    """

    def __init__(self, split: Split, transform: Callable, classes: Sequence[str] | None = None):
        self.classes = tuple(classes or split.classes)
        index = {c: i for i, c in enumerate(self.classes)}
        # Compact storage that loader workers share without copying: paths as one bytes array and the
        # labels as CSR indices (a dense multi-hot matrix of 1.7M Open Images x 601 classes is 4 GB).
        self.paths = np.array([str(p).encode() for p in split.frame["path"]], dtype=np.bytes_)
        counts, flat = [], []
        for labels in split.frame["labels"]:
            for label in labels:
                if label not in index:
                    raise ValueError(f"split {split.dataset}/{split.name}: label {label!r} is not a model class")
                flat.append(index[label])
            counts.append(len(labels))
        self.label_index = np.asarray(flat, dtype=np.int32)
        self.label_start = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
        self.transform = transform

    def target(self, i: int) -> torch.Tensor:
        """The multi-hot target vector of item ``i``."""
        y = torch.zeros(len(self.classes))
        y[torch.from_numpy(self.label_index[self.label_start[i]:self.label_start[i + 1]]).long()] = 1.0
        return y

    def __len__(self) -> int:
        return len(self.paths)

    def _load(self, i: int) -> torch.Tensor:
        path = self.paths[i].decode()
        try:
            with Image.open(path) as img:
                return self.transform(img.convert("RGB"))
        except (FileNotFoundError, UnidentifiedImageError, OSError) as exc:
            raise ValueError(f"cannot read image {path}: {exc}") from exc

    def __getitem__(self, key):
        if isinstance(key, tuple):
            i, seed = key
            if get_worker_info() is None:  # main process: leave the training RNG stream alone
                with torch.random.fork_rng(devices=[]):
                    torch.manual_seed(seed)
                    x = self._load(i)
            else:
                torch.manual_seed(seed)
                x = self._load(i)
        else:
            i, x = key, self._load(key)
        return x, self.target(i)


def _epoch_seed(seed: int, epoch: int) -> int:
    return (seed * 100_003 + epoch) % 2**62


class EpochSampler(Sampler):
    """A shuffled order per epoch that depends only on (seed, epoch); yields ``(index, item_seed)``.

    The workflow keeps one loader (and its persistent workers) for the whole run and calls
    :meth:`set_epoch` before each epoch, as with ``DistributedSampler``.
    """

    def __init__(self, n: int, seed: int):
        self.n, self.seed, self.epoch = n, seed, 1

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[tuple[int, int]]:
        base = _epoch_seed(self.seed, self.epoch)
        order = torch.randperm(self.n, generator=torch.Generator().manual_seed(base)).tolist()
        return iter([(i, (base * 1_000_003 + i) % 2**62) for i in order])


def make_loader(dataset: Dataset, cfg: TrainConfig, device: torch.device, *, sampler: Sampler | None = None,
                drop_last: bool = False) -> DataLoader:
    """A DataLoader that decodes in ``cfg.num_workers`` persistent workers; pinned memory on CUDA."""
    workers = cfg.num_workers
    return DataLoader(
        dataset, batch_size=cfg.batch_size, sampler=sampler, drop_last=drop_last, num_workers=workers,
        pin_memory=device.type == "cuda", persistent_workers=workers > 0,
        prefetch_factor=cfg.prefetch_factor if workers > 0 else None,
    )


# --------------------------------------------------------------------------------------------
# Optimisation
# --------------------------------------------------------------------------------------------


def make_optimizer(model: nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    """SGD (momentum, weight decay), AdamW, or LARS over biases-excluded groups."""
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    if cfg.optimizer == "lars":
        return LARS(lars_param_groups(model), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay, eta=cfg.lars_eta)
    return torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)


def make_scheduler(optimizer: torch.optim.Optimizer, cfg: TrainConfig):
    """Per-epoch learning-rate schedule (None for a constant rate)."""
    if cfg.scheduler == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=cfg.epochs)
    if cfg.scheduler == "plateau":
        mode = "max" if cfg.plateau_monitor == "metric" else "min"
        return torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode=mode, factor=cfg.plateau_factor,
                                                          patience=cfg.plateau_patience)
    return None


@dataclass(frozen=True)
class Runtime:
    """How a config runs on a device: autocast dtype, memory format, compilation."""

    device: torch.device
    autocast: torch.dtype | None
    channels_last: bool
    compile: bool

    @classmethod
    def resolve(cls, cfg: TrainConfig, device: torch.device) -> "Runtime":
        cuda = device.type == "cuda"
        if cfg.precision == "bf16":
            dtype = torch.bfloat16
        elif cfg.precision == "auto" and cuda and torch.cuda.is_bf16_supported():
            dtype = torch.bfloat16
        else:
            dtype = None
        return cls(device, dtype, cfg.channels_last and cuda, cfg.compile and cuda)

    def autocast_context(self):
        return torch.autocast(self.device.type, dtype=self.autocast, enabled=self.autocast is not None)

    def inputs(self, x: torch.Tensor) -> torch.Tensor:
        x = x.to(self.device, non_blocking=True)
        return x.contiguous(memory_format=torch.channels_last) if self.channels_last and x.ndim == 4 else x


def evaluate(model: nn.Module, loader: DataLoader, cfg: TrainConfig, device: torch.device | Runtime) -> tuple[float, float]:
    """Validation loss (mean BCE per label) and metric (mAP, or micro-F1 at ``cfg.threshold``)."""
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
    return float(torch.stack(losses).sum()) / y_true.size, validation_metric(cfg.metric, y_true, y_score, cfg.threshold)


# --------------------------------------------------------------------------------------------
# The loop
# --------------------------------------------------------------------------------------------


def _state_on_cpu(model: nn.Module) -> dict:
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


def _comparable(cfg: TrainConfig) -> dict:
    return {k: v for k, v in asdict(cfg).items() if k not in _RESULT_NEUTRAL}


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
    log: Callable[[str], None] = print,
    device: str | torch.device = "cpu",
) -> TrainResult:
    """Train ``model`` (logits for ``train_set.classes``) and keep the best epoch by validation metric.

    With ``resume_path``, the state after each epoch is saved there and a run finding it continues
    from the epoch after (a file written with other hyper-parameters is ignored; one with another
    class list is an error). A non-finite loss stops the run with FloatingPointError.
    """
    device = torch.device(device)
    rt = Runtime.resolve(cfg, device)
    if train_set.classes != val_set.classes:
        raise ValueError("train and validation sets have different class lists")
    n_out = getattr(model, "num_classes", None)
    if n_out is not None and n_out != len(train_set.classes):
        raise ValueError(f"the model has {n_out} outputs but the dataset has {len(train_set.classes)} classes")
    model.to(device)
    if rt.channels_last:
        model.to(memory_format=torch.channels_last)
    optimizer = make_optimizer(model, cfg)
    scheduler = make_scheduler(optimizer, cfg)
    result = TrainResult(cfg.metric, best_epoch=0, best_metric=-math.inf)
    start = 1
    state = None
    if resume_path is not None and Path(resume_path).is_file():
        state = torch.load(resume_path, map_location=device, weights_only=True)
        if state.get("config") != _comparable(cfg):
            log(f"{resume_path} was written with other hyper-parameters; starting over")
            state = None
    if state is not None:
        if tuple(state["classes"]) != train_set.classes:
            raise ValueError(
                f"{resume_path}: resume checkpoint has {len(state['classes'])} classes, the dataset has "
                f"{len(train_set.classes)}; delete it to start over"
            )
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        if scheduler is not None:
            scheduler.load_state_dict(state["scheduler"])
        result.history = [EpochRecord(**r) for r in state["history"]]
        result.best_epoch, result.best_metric = state["best_epoch"], state["best_metric"]
        result.best_state = state["best_state"]
        start = state["epoch"] + 1
        log(f"resumed from {resume_path} after epoch {state['epoch']}")
    step_model = torch.compile(model) if rt.compile else model
    if cfg.compile and not rt.compile:
        log("compile is only used on CUDA; running eagerly")
    sampler = EpochSampler(len(train_set), cfg.seed)
    loader = make_loader(train_set, cfg, device, sampler=sampler, drop_last=len(train_set) > cfg.batch_size)
    val_loader = make_loader(val_set, cfg, device)
    loss_fn = nn.BCEWithLogitsLoss()
    params = [p for p in model.parameters() if p.requires_grad]
    for epoch in range(start, cfg.epochs + 1):
        torch.manual_seed(_epoch_seed(cfg.seed, epoch))
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
            with rt.autocast_context():
                logits = step_model(x)
            loss = loss_fn(logits.float(), y)
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
                log(f"epoch {epoch}/{cfg.epochs} batch {batch}/{len(loader)} loss {float(loss_sum) / seen:.4f}")
        _check_finite(loss_sum, epoch, first, batch, lr)
        train_loss = float(loss_sum) / max(seen, 1)
        train_seconds = time.perf_counter() - tic
        val_loss, value = evaluate(step_model, val_loader, cfg, rt)
        if isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
            scheduler.step({"train_loss": train_loss, "val_loss": val_loss, "metric": value}[cfg.plateau_monitor])
        elif scheduler is not None:
            scheduler.step()
        record = EpochRecord(epoch, train_loss, val_loss, value, lr, time.perf_counter() - tic,
                             seen / train_seconds, waited)
        result.history.append(record)
        log(
            f"epoch {epoch}/{cfg.epochs}: train loss {record.train_loss:.4f}, val loss {val_loss:.4f}, "
            f"val {cfg.metric} {value:.4f}, {record.images_per_s:.0f} img/s, waited {waited:.1f}s for data"
        )
        if value > result.best_metric:
            result.best_epoch, result.best_metric = epoch, value
            result.best_state = _state_on_cpu(model)
        if resume_path is not None:
            _save_resume(resume_path, model, optimizer, scheduler, epoch, result, train_set.classes, cfg)
    return result


def _save_resume(path, model, optimizer, scheduler, epoch: int, result: TrainResult, classes, cfg) -> None:
    from .atomic import atomic_path

    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict() if scheduler is not None else {},
        "epoch": epoch,
        "history": result.curve(),
        "best_epoch": result.best_epoch,
        "best_metric": result.best_metric,
        "best_state": result.best_state,
        "classes": list(classes),
        "config": _comparable(cfg),
    }
    with atomic_path(path) as tmp:
        torch.save(state, tmp)
