"""Hyper-parameters of a training run, and what a run returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from biastransfer.train.metrics import METRICS

OPTIMIZERS = ("sgd", "adamw", "lars")
SCHEDULERS = ("none", "cosine", "plateau")
PLATEAU_MONITORS = ("train_loss", "val_loss", "metric")
PRECISIONS = ("auto", "fp32", "bf16")
# Fields that do not change what a run computes: a resume file written with other values is still valid.
RESULT_NEUTRAL = ("num_workers", "prefetch_factor", "log_every")


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
            raise ValueError(
                "momentum and weight_decay must be >= 0 and lars_eta > 0, got "
                f"{self.momentum}, {self.weight_decay}, {self.lars_eta}"
            )
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
    """Training curve entry for one epoch (``data_seconds``: time the loop waited for batches; ``worst_group``:
    the worst-group validation mAP, biastransfer.train.methods, where the validation split has groups)."""

    epoch: int
    train_loss: float
    val_loss: float
    metric: float
    lr: float
    seconds: float
    images_per_s: float
    data_seconds: float = 0.0
    worst_group: float | None = None


@dataclass
class TrainResult:
    """Outcome of a run: the best epoch by its ``selection`` (``map``: the validation metric; ``worst_group``:
    the worst-group validation mAP), its validation metric, and the whole curve."""

    metric: str
    best_epoch: int
    best_metric: float
    history: list[EpochRecord] = field(default_factory=list)
    best_state: dict | None = None
    selection: str = "map"

    @property
    def best_worst_group(self) -> float | None:
        """The worst-group validation mAP of the chosen epoch (None without groups)."""
        return next((r.worst_group for r in self.history if r.epoch == self.best_epoch), None)

    def curve(self) -> list[dict]:
        """The training curve as a list of plain dicts (for JSON / CSV)."""
        return [asdict(r) for r in self.history]
