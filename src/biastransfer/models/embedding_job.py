"""What the embed and embed_layers jobs share: an analysis set's images through every network of one model
(its stages side by side on each batch, so that each image is read and decoded once for all of them), with
each network's provenance."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from biastransfer.data.manifest import read_manifest, verify_files
from biastransfer.hashing import config_hash, file_digest
from biastransfer.models.checkpoints import finetune_origin
from biastransfer.models.extractors import SideBySide
from biastransfer.models.features import Inference, embedding_provenance, run_on_images
from biastransfer.models.resolve import model_spec
from biastransfer.models.spec import ModelSpec
from biastransfer.models.weights import weights_file_and_sha256
from biastransfer.stages import parse_stage


@dataclass(frozen=True)
class Embedded:
    """One network's pass over the images: its stage, the network ``build`` made, its outputs (one row per
    image) and the provenance its files carry."""

    stage: str
    network: torch.nn.Module
    outputs: np.ndarray
    provenance: dict


def built(build: Callable[[ModelSpec, str], torch.nn.Module], spec: ModelSpec, stage: str, weights: str):
    """``build(spec, weights)``; a failure names the model, the stage and the weights."""
    name = f"{spec.name} {stage} ({weights})"
    try:
        return build(spec, weights)
    except (ValueError, OSError) as exc:
        raise ValueError(f"{name}: {exc}") from exc
    except Exception as exc:
        exc.add_note(f"while building the network {name}")
        raise


def embed_manifest(
    build: Callable[[ModelSpec, str], torch.nn.Module],
    manifest: str,
    stages: list[str],
    weights: list[str],
    entry: dict,
    inference: Inference,
    *,
    model: str,
    analysis_set: str,
    threads: int,
    log: logging.Logger,
) -> tuple[pd.DataFrame, list[Embedded]]:
    """``(images, networks)``: the images of ``manifest`` (checked against their digests) and, per stage, the
    network ``build`` makes of model ``model``'s spec (its config ``entry``) with that stage's ``weights``,
    run over every image on ``threads`` CPU threads as ``inference`` says, all networks side by side on each
    batch. Each provenance records the model, its weights and their finetuning origin, the stage, the analysis
    set, the manifest's digest, the entry's hash and the device. Every checkpoint is loaded and its digest
    taken before any image is read."""
    if len(stages) != len(weights) or not stages:
        raise ValueError(f"{len(stages)} stages for {len(weights)} checkpoints: one checkpoint per stage, at least one")
    torch.set_num_threads(max(1, threads))
    spec = model_spec(model, entry)
    networks = [built(build, spec, stage, w) for stage, w in zip(stages, weights)]
    digests = [weights_file_and_sha256(w)[1] for w in weights]
    origins = [finetune_origin(w) if parse_stage(s)[0] is not None else {} for s, w in zip(stages, weights)]
    images = read_manifest(manifest)
    verify_files(images, ".")
    names = ", ".join(stages)
    log.info(
        "embedding %d images of %s with %s (%s) on %s", len(images), manifest, spec.name, names, inference.torch_device
    )
    together = SideBySide(networks, [f"{spec.name} {stage} ({w})" for stage, w in zip(stages, weights)])
    what = f"embedding {manifest} with {spec.name} ({names})"
    outputs, runtime = run_on_images(together, images["path"].tolist(), spec, inference, what=what, log=log.warning)
    common = {"analysis_set": analysis_set, "manifest_sha256": file_digest(manifest), "config_hash": config_hash(entry)}
    return images, [
        Embedded(
            stage, network, features, embedding_provenance(spec, sha256, stage=stage, **common, **runtime, **origin)
        )
        for stage, network, features, sha256, origin in zip(stages, networks, together.split(outputs), digests, origins)
    ]
