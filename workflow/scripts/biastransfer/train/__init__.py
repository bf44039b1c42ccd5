"""Training and finetuning: hyper-parameters, data loading, LARS, the resumable loop, metrics, and the
workflow's training job.
"""

from biastransfer.train.config import (  # noqa: F401
    OPTIMIZERS,
    PLATEAU_MONITORS,
    PRECISIONS,
    RESULT_NEUTRAL,
    SCHEDULERS,
    EpochRecord,
    TrainConfig,
    TrainResult,
)
from biastransfer.train.data import (  # noqa: F401
    DeviceBatches,
    EpochSampler,
    ImageLabelDataset,
    epoch_seed,
    make_loader,
)
from biastransfer.train.lars import (  # noqa: F401
    LARS,
    lars_param_groups,
)
from biastransfer.train.loop import (  # noqa: F401
    Runtime,
    evaluate,
    make_optimizer,
    make_scheduler,
    remove_resume_state,
    resume_key,
    train_classifier,
)
from biastransfer.train.metrics import (  # noqa: F401
    METRICS,
    average_precision,
    mean_average_precision,
    micro_f1,
    validation_metric,
)
from biastransfer.train.run import (  # noqa: F401
    run_training,
)
from biastransfer.train.trajectory import (  # noqa: F401
    TrajectoryWriter,
)

__all__ = [
    "OPTIMIZERS",
    "SCHEDULERS",
    "PLATEAU_MONITORS",
    "PRECISIONS",
    "RESULT_NEUTRAL",
    "TrainConfig",
    "EpochRecord",
    "TrainResult",
    "METRICS",
    "average_precision",
    "mean_average_precision",
    "micro_f1",
    "validation_metric",
    "LARS",
    "lars_param_groups",
    "ImageLabelDataset",
    "DeviceBatches",
    "epoch_seed",
    "EpochSampler",
    "make_loader",
    "make_optimizer",
    "make_scheduler",
    "Runtime",
    "evaluate",
    "resume_key",
    "remove_resume_state",
    "train_classifier",
    "TrajectoryWriter",
    "run_training",
]
