"""Training and finetuning (torch).

The curated public API (docs/api.md); everything else stays in its module. Names load on
first use (biastransfer._lazy).

- Hyper-parameters and results: :class:`TrainConfig`, :class:`TrainResult`
- The resumable loop: :func:`train_classifier`, :func:`evaluate`; the workflow's training job: :func:`run_training`,
  its files :class:`TrainingFiles`
- Data: :func:`make_loader`; the optimiser of SimCLR's recipe: :class:`LARS`
- Metrics: :func:`mean_average_precision`, :func:`validation_metric`
- Embeddings after chosen epochs: :class:`TrajectoryWriter`
"""

from biastransfer._lazy import lazy_namespace as _lazy_namespace

#: Each public name and the module of this package that defines it, in the order docs/api.md lists them.
_EXPORTS = {
    "TrainConfig": "config",
    "TrainResult": "config",
    "train_classifier": "loop",
    "evaluate": "loop",
    "run_training": "run",
    "TrainingFiles": "run",
    "make_loader": "data",
    "LARS": "lars",
    "mean_average_precision": "metrics",
    "validation_metric": "metrics",
    "TrajectoryWriter": "trajectory",
}
__all__ = list(_EXPORTS)
_lazy_namespace(__name__, _EXPORTS)
