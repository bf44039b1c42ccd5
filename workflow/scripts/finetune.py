"""Finetune a pretrained model on a dataset's training split (multi-label BCE), keeping the best epoch.

Resumable: the state after each epoch goes to --resume; a rerun continues from there if the initial
weights, splits, model spec and hyper-parameters are unchanged (otherwise it starts over and logs why).
Standalone: python workflow/scripts/finetune.py --weights W --train T.parquet --val V.parquet
--trained M.safetensors --metrics M.json --curve C.csv --entry '{"source": "timm", "arch": "resnet18"}'
--hyper '{"epochs": 2, "lr": 0.01}' --model resnet18 --seed 0 --resume R.pt --device auto --num_workers 1
[--dataset D --manifests A.parquet --trajectory_settings S.json --trajectory traj/A] (embeds each analysis
set of the settings file, written by trajectory_settings.py, after its epochs into its trajectory folder, in
batches of the training batch size: the memory training needed is enough, and analysis.embed.batch_size
reruns no training; the settings' amp false: without bf16 autocast)
[--train_cache T.json --val_cache V.json] (read the splits' decoded-once caches instead of the image files)
[--sample_weights W.parquet] (an intervention's sample weights of the train split: drawn with replacement)
[--method '{"method": "group_dro", "selection": "map", ...}' --train_attributes TA.parquet
--val_attributes VA.parquet --start PLAIN.safetensors] (a mitigation arm: biastransfer.train.methods; the
attribute files give the groups, val_attributes alone the recorded worst-group validation mAP of a plain
finetuning; start: the plain network that dfr and leace refit) [--train_cache_split T0.parquet
--val_cache_split V0.parquet] (the splits the caches were built from, when they are the arm's from's)
"""

import json
from pathlib import Path

from biastransfer.hashing import config_hash, file_digest
from biastransfer.models.device import torch_device
from biastransfer.models.extractors import create_classifier
from biastransfer.models.resolve import model_spec
from biastransfer.models.weights import weights_file_and_sha256
from biastransfer.progress import LOGGER as progress_log
from biastransfer.scripting import run
from biastransfer.stages import finetuned_stage
from biastransfer.train.loop import Runtime
from biastransfer.train.methods import MethodConfig
from biastransfer.train.run import TrainingFiles, loader_workers, run_training, train_config
from biastransfer.train.trajectory import TrajectoryWriter, remove_staging, staging_folder


def main(
    weights: str,
    train: str,
    val: str,
    trained: str,
    metrics: str,
    curve: str,
    entry: dict,
    hyper: dict,
    model: str,
    seed: int,
    device: str,
    num_workers: int,
    resume: str | None = None,
    threads: int = 1,
    dataset: str = "",
    manifests: list | None = None,
    trajectory_settings: str | None = None,
    trajectory: list | None = None,
    train_cache: str | None = None,
    val_cache: str | None = None,
    sample_weights: str | None = None,
    method: dict | None = None,
    train_attributes: str | None = None,
    val_attributes: str | None = None,
    start: str | None = None,
    train_cache_split: str | None = None,
    val_cache_split: str | None = None,
) -> None:
    files = TrainingFiles(
        train,
        val,
        trained,
        metrics,
        curve,
        train_cache,
        val_cache,
        train_attributes,
        val_attributes,
        train_cache_split,
        val_cache_split,
    )
    recipe = train_config(hyper, seed, num_workers)  # bad hyper-parameters fail before anything is read
    chosen = MethodConfig(**(method or {}))
    spec = model_spec(model, entry)
    init_sha256 = weights_file_and_sha256(weights)[1]
    dev = torch_device(device)
    writer = None
    staging = staging_folder(resume or trained)
    if not trajectory:
        remove_staging(staging)  # left by a killed run with the trajectory on
    else:
        if not trajectory_settings:
            raise ValueError("give --trajectory_settings with --trajectory (the epochs and analysis sets to embed)")
        settings = json.loads(Path(trajectory_settings).read_text())
        analysis_sets = settings["analysis_sets"]
        if not (len(manifests or []) == len(analysis_sets) == len(trajectory)):
            raise ValueError(
                f"{len(manifests or [])} manifests, {len(analysis_sets)} analysis sets in {trajectory_settings} "
                f"and {len(trajectory)} trajectory folders: give one of each per analysis set"
            )
        writer = TrajectoryWriter(
            spec,
            dict(zip(analysis_sets, manifests)),
            dict(zip(analysis_sets, trajectory)),
            settings["epochs"],
            staging,
            batch_size=recipe.batch_size,
            num_workers=loader_workers(num_workers),
            device=dev,
            channels_last=Runtime.resolve(recipe, dev).channels_last,
            amp=settings["amp"],
            log=progress_log.info,
            provenance={
                "stage": finetuned_stage(dataset, seed),
                "config_hash": config_hash(entry),
                "init_weights_sha256": init_sha256,
                "train_sha256": file_digest(train),
                "val_sha256": file_digest(val),
            },
        )
    run_training(
        lambda classes: create_classifier(spec, len(classes), weights),
        spec,
        files,
        recipe,
        device=dev,
        threads=threads,
        log=progress_log.info,
        resume=resume,
        init_weights_sha256=init_sha256,
        trajectory=writer,
        sample_weights=sample_weights,
        method=chosen,
        start=start,
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
