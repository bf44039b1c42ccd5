"""Finetune a pretrained model on a dataset's training split (multi-label BCE), keeping the best epoch.

Resumable: the state after each epoch goes to --resume; a rerun continues from there if the initial
weights, splits, model spec and hyper-parameters are unchanged (otherwise it starts over and logs why).
Standalone: python workflow/scripts/finetune.py --weights W --train T.parquet --val V.parquet
--trained M.safetensors --metrics M.json --curve C.csv --entry '{"source": "timm", "arch": "resnet18"}'
--hyper '{"epochs": 2, "lr": 0.01}' --model resnet18 --seed 0 --resume R.pt --device auto --num_workers 1
"""

from biastransfer.models.device import torch_device
from biastransfer.models.resolve import model_spec
from biastransfer.models.extractors import create_classifier
from biastransfer.models.weights import weights_file_and_sha256
from biastransfer.progress import LOGGER as progress_log
from biastransfer.scripting import run
from biastransfer.train.run import run_training


def main(
    weights: str, train: str, val: str, trained: str, metrics: str, curve: str, entry: dict, hyper: dict,
    model: str, seed: int, device: str, num_workers: int, resume: str | None = None, threads: int = 1,
) -> None:
    spec = model_spec(model, entry)
    run_training(
        lambda classes: create_classifier(spec, len(classes), weights),
        spec, train=train, val=val, model_out=trained, metrics_out=metrics, curve_out=curve,
        hyper=hyper, seed=seed, resume=resume, device=torch_device(device),
        threads=threads, num_workers=num_workers, log=progress_log.info,
        init_weights_sha256=weights_file_and_sha256(weights)[1],
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
