"""What the embed and embed_layers jobs share: an analysis set's images through a network, with the
embeddings' provenance."""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np
import pandas as pd
import torch

from biastransfer.data.manifest import read_manifest, verify_files
from biastransfer.hashing import config_hash, file_digest
from biastransfer.models.checkpoints import finetune_origin
from biastransfer.models.features import Inference, embedding_provenance, run_on_images
from biastransfer.models.resolve import model_spec
from biastransfer.models.spec import ModelSpec
from biastransfer.models.weights import weights_file_and_sha256
from biastransfer.stages import parse_stage


def embed_manifest(
    build: Callable[[ModelSpec], torch.nn.Module],
    manifest: str,
    weights: str,
    entry: dict,
    inference: dict,
    *,
    model: str,
    analysis_set: str,
    stage: str,
    threads: int,
    log: logging.Logger,
) -> tuple[torch.nn.Module, pd.DataFrame, np.ndarray, dict]:
    """``(network, images, outputs, provenance)``: the network ``build`` makes of model ``model``'s spec (its
    config ``entry``) with ``weights`` at ``stage``, and every image of ``manifest`` (checked against its
    digests) through it on ``threads`` CPU threads as ``inference`` (:class:`Inference`'s fields) says; the
    provenance records the model, its weights and their finetuning origin, the analysis set, the manifest's
    digest, the entry's hash and the device."""
    torch.set_num_threads(max(1, threads))
    spec = model_spec(model, entry)
    network = build(spec)
    images = read_manifest(manifest)
    verify_files(images, ".")
    settings = Inference(**inference)
    log.info("embedding %d images of %s with %s (%s) on %s", len(images), manifest, spec.name, stage,
             settings.torch_device)  # fmt: skip
    what = f"embedding {manifest} with {spec.name} ({stage})"
    outputs, runtime = run_on_images(network, images["path"].tolist(), spec, settings, what=what, log=log.warning)
    provenance = embedding_provenance(
        spec,
        weights_file_and_sha256(weights)[1],
        stage=stage,
        analysis_set=analysis_set,
        manifest_sha256=file_digest(manifest),
        config_hash=config_hash(entry),
        **runtime,
        **(finetune_origin(weights) if parse_stage(stage)[0] is not None else {}),
    )
    return network, images, outputs, provenance
