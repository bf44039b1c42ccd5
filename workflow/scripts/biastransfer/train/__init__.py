"""Training and finetuning (torch).

The curated public API (docs/api.md); everything else stays in its module.

- Hyper-parameters and results: :class:`TrainConfig`, :class:`TrainResult`
- The resumable loop: :func:`train_classifier`, :func:`evaluate`; the workflow's training job: :func:`run_training`
- Data: :func:`make_loader`; the optimiser of SimCLR's recipe: :class:`LARS`
- Metrics: :func:`mean_average_precision`, :func:`validation_metric`
- Embeddings after chosen epochs: :class:`TrajectoryWriter`
"""

from biastransfer.train.config import TrainConfig, TrainResult
from biastransfer.train.data import make_loader
from biastransfer.train.lars import LARS
from biastransfer.train.loop import evaluate, train_classifier
from biastransfer.train.metrics import mean_average_precision, validation_metric
from biastransfer.train.run import run_training
from biastransfer.train.trajectory import TrajectoryWriter

__all__ = [
    "TrainConfig",
    "TrainResult",
    "train_classifier",
    "evaluate",
    "run_training",
    "make_loader",
    "LARS",
    "mean_average_precision",
    "validation_metric",
    "TrajectoryWriter",
]
