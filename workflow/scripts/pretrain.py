"""Pretrain a demo model from scratch on a synthetic dataset (demo only; real models download weights).

Standalone: python workflow/scripts/pretrain.py --train T.parquet --val V.parquet --model M.safetensors
--metrics M.json --entry '{"source": "workflow", "arch": "resnet18", "preprocess": {"resize": 64, "crop": 64}}'
--hyper '{"epochs": 2, "lr": 0.05, "batch_size": 64}'
"""

import logging

from biastransfer.models.device import torch_device
from biastransfer.models.resolve import model_spec
from biastransfer.models.extractors import create_classifier
from biastransfer.scripting import run
from biastransfer.train.run import run_training

log = logging.getLogger(__name__)


def main(
    train: str, val: str, model: str, metrics: str, entry: dict, hyper: dict, threads: int = 1,
    device: str = "auto", num_workers: int = 1, wildcards: dict | None = None,
) -> None:
    name = (wildcards or {}).get("model", "model")
    spec = model_spec(name, entry)
    hyper = dict(hyper)
    seed = hyper.pop("seed", 0)
    run_training(
        lambda classes: create_classifier(spec, len(classes), None),
        spec, train=train, val=val, model_out=model, metrics_out=metrics, curve_out=None,
        hyper=hyper, seed=seed, resume=None, device=torch_device(device),
        threads=threads, num_workers=num_workers, log=log.info,
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
