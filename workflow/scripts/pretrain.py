"""Pretrain a model from scratch (source workflow) on a dataset: synthetic, or a table of your own images.

Standalone: python workflow/scripts/pretrain.py --train T.parquet --val V.parquet --trained M.safetensors
--metrics M.json --entry '{"source": "workflow", "arch": "resnet18", "preprocess": {"resize": 64, "crop": 64}}'
--hyper '{"epochs": 2, "lr": 0.05, "batch_size": 64}' --model demo --device auto --num_workers 1
[--train_cache T.json --val_cache V.json] (read the splits' decoded-once caches instead of the image files)
"""

from biastransfer.models.device import torch_device
from biastransfer.models.extractors import create_classifier
from biastransfer.models.resolve import model_spec
from biastransfer.progress import LOGGER as progress_log
from biastransfer.scripting import run
from biastransfer.train.run import TrainingFiles, run_training, train_config


def main(
    train: str,
    val: str,
    trained: str,
    metrics: str,
    entry: dict,
    hyper: dict,
    model: str,
    device: str,
    num_workers: int,
    threads: int = 1,
    train_cache: str | None = None,
    val_cache: str | None = None,
) -> None:
    files = TrainingFiles(train, val, trained, metrics, train_cache=train_cache, val_cache=val_cache)
    spec = model_spec(model, entry)
    recipe = train_config({k: v for k, v in hyper.items() if k != "seed"}, hyper["seed"], num_workers)

    def build(classes):  # a fresh network (no pretrained weights) with one output per class
        return create_classifier(spec, len(classes), None)

    run_training(build, spec, files, recipe, device=torch_device(device), threads=threads, log=progress_log.info)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
