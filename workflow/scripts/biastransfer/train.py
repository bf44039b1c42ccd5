"""Multi-label training and finetuning: BCE-with-logits, SGD, validation each epoch, resumable.

The loop is deterministic on CPU for a given seed: each epoch reseeds torch and the shuffling
generator from (seed, epoch), so a run resumed from its last epoch checkpoint reaches exactly the
same weights as an uninterrupted one.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch
from PIL import Image, UnidentifiedImageError
from torch import nn
from torch.utils.data import DataLoader, Dataset

from .metrics import mean_average_precision, micro_f1
from .splits import Split

METRICS = ("mAP", "micro_f1")
OPTIMIZERS = ("sgd", "adamw")
SCHEDULERS = ("none", "cosine", "plateau")


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of one training run (every field goes through the workflow's params)."""

    epochs: int
    lr: float
    batch_size: int = 32
    momentum: float = 0.9
    weight_decay: float = 1e-4
    optimizer: str = "sgd"
    scheduler: str = "none"
    seed: int = 0
    metric: str = "mAP"
    threshold: float = 0.5
    num_workers: int = 0
    log_every: int = 20

    def __post_init__(self) -> None:
        if self.epochs < 1:
            raise ValueError(f"epochs must be >= 1, got {self.epochs}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        for name, value, allowed in (
            ("optimizer", self.optimizer, OPTIMIZERS),
            ("scheduler", self.scheduler, SCHEDULERS),
            ("metric", self.metric, METRICS),
        ):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")


@dataclass(frozen=True)
class EpochRecord:
    """Training curve entry for one epoch."""

    epoch: int
    train_loss: float
    val_loss: float
    metric: float
    lr: float
    seconds: float
    images_per_s: float


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


class ImageLabelDataset(Dataset):
    """Images of a split with their multi-hot targets; decoding happens in DataLoader workers."""

    def __init__(self, split: Split, transform: Callable, classes: Sequence[str] | None = None):
        self.classes = tuple(classes or split.classes)
        index = {c: i for i, c in enumerate(self.classes)}
        self.paths = split.frame["path"].tolist()
        self.targets = np.zeros((len(self.paths), len(self.classes)), dtype=np.float32)
        for row, labels in enumerate(split.frame["labels"]):
            for label in labels:
                if label not in index:
                    raise ValueError(f"split {split.dataset}/{split.name}: label {label!r} is not a model class")
                self.targets[row, index[label]] = 1.0
        self.transform = transform

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int):
        try:
            with Image.open(self.paths[i]) as img:
                x = self.transform(img.convert("RGB"))
        except (FileNotFoundError, UnidentifiedImageError, OSError) as exc:
            raise ValueError(f"cannot read image {self.paths[i]}: {exc}") from exc
        return x, torch.from_numpy(self.targets[i])


def _seed_epoch(seed: int, epoch: int) -> torch.Generator:
    torch.manual_seed(seed * 100_003 + epoch)
    return torch.Generator().manual_seed(seed * 100_003 + epoch)


def _optimizer(model: nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    return torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)


def _scheduler(optimizer: torch.optim.Optimizer, cfg: TrainConfig):
    if cfg.scheduler == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=cfg.epochs)
    if cfg.scheduler == "plateau":
        return torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="max", factor=0.1, patience=2)
    return None


def evaluate(model: nn.Module, loader: DataLoader, cfg: TrainConfig, device: torch.device) -> tuple[float, float]:
    """Validation loss and metric (mAP or micro-F1 at ``cfg.threshold``)."""
    model.eval()
    loss_fn = nn.BCEWithLogitsLoss(reduction="sum")
    total, scores, targets = 0.0, [], []
    with torch.inference_mode():
        for x, y in loader:
            logits = model(x.to(device)).float()
            total += float(loss_fn(logits, y.to(device)))
            scores.append(torch.sigmoid(logits).cpu().numpy())
            targets.append(y.numpy())
    y_true, y_score = np.concatenate(targets), np.concatenate(scores)
    value = mean_average_precision(y_true, y_score) if cfg.metric == "mAP" else micro_f1(y_true, y_score, cfg.threshold)
    return total / y_true.size, value


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
    from the epoch after. A non-finite loss stops the run with FloatingPointError.
    """
    device = torch.device(device)
    if train_set.classes != val_set.classes:
        raise ValueError("train and validation sets have different class lists")
    model.to(device)
    optimizer = _optimizer(model, cfg)
    scheduler = _scheduler(optimizer, cfg)
    result = TrainResult(cfg.metric, best_epoch=0, best_metric=-math.inf)
    start = 1
    state = None
    if resume_path is not None and Path(resume_path).is_file():
        state = torch.load(resume_path, map_location=device, weights_only=True)
        if state.get("config") != asdict(cfg):
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
    pin = device.type == "cuda"
    val_loader = DataLoader(val_set, batch_size=cfg.batch_size, num_workers=cfg.num_workers, pin_memory=pin)
    loss_fn = nn.BCEWithLogitsLoss()
    for epoch in range(start, cfg.epochs + 1):
        generator = _seed_epoch(cfg.seed, epoch)
        loader = DataLoader(
            train_set, batch_size=cfg.batch_size, shuffle=True, generator=generator,
            num_workers=cfg.num_workers, pin_memory=pin, drop_last=len(train_set) > cfg.batch_size,
        )
        model.train()
        tic, seen, running = time.perf_counter(), 0, 0.0
        for batch, (x, y) in enumerate(loader, 1):
            x, y = x.to(device, non_blocking=pin), y.to(device, non_blocking=pin)
            loss = loss_fn(model(x).float(), y)
            if not torch.isfinite(loss):
                raise FloatingPointError(
                    f"non-finite training loss ({float(loss)}) at epoch {epoch}, batch {batch}: "
                    f"lower the learning rate (now {optimizer.param_groups[0]['lr']:g})"
                )
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            seen += len(x)
            running += loss.detach().item() * len(x)
            if batch % cfg.log_every == 0:
                log(f"epoch {epoch}/{cfg.epochs} batch {batch}/{len(loader)} loss {running / seen:.4f}")
        train_seconds = time.perf_counter() - tic
        val_loss, value = evaluate(model, val_loader, cfg, device)
        lr = optimizer.param_groups[0]["lr"]
        if isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
            scheduler.step(value)
        elif scheduler is not None:
            scheduler.step()
        record = EpochRecord(epoch, running / max(seen, 1), val_loss, value, lr, time.perf_counter() - tic, seen / train_seconds)
        result.history.append(record)
        log(
            f"epoch {epoch}/{cfg.epochs}: train loss {record.train_loss:.4f}, val loss {val_loss:.4f}, "
            f"val {cfg.metric} {value:.4f}, {record.images_per_s:.0f} img/s"
        )
        if value > result.best_metric:
            result.best_epoch, result.best_metric = epoch, value
            result.best_state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
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
        "config": asdict(cfg),
    }
    with atomic_path(path) as tmp:
        torch.save(state, tmp)
