"""Embed every image of an analysis set with every network of one model: pretrained, each finetuned seed and
each scratch reference network (``settings.stages[i]``, whose weights are ``weights[i]``, written to
``embeddings[i]``), side by side on each batch, so that each image is read and decoded once for all of them.

Standalone: python workflow/scripts/embed.py --manifest results/analysis_sets/A/manifest.parquet
--weights W0 W1 --embeddings E0.parquet E1.parquet --settings '{"stages": ["pretrained", "ft-D-seed0"],
"entry": {"source": "timm", "arch": "resnet18"}, "inference": {"batch_size": 64, "num_workers": 1,
"device": "cpu", "amp": true}}' [--analysis_set A --model resnet18] (inference:
biastransfer.models.features.Inference, "amp": false to turn autocast off)
"""

import logging

from biastransfer.embeddings import write_embeddings
from biastransfer.models.embedding_job import embed_manifest
from biastransfer.models.extractors import create_backbone
from biastransfer.models.features import Inference
from biastransfer.scripting import run
from biastransfer.workflow.rules.inference import EmbedSettings

log = logging.getLogger(__name__)


def main(
    manifest: str,
    weights: list,
    embeddings: list,
    settings: EmbedSettings,
    analysis_set: str = "",
    model: str = "model",
    threads: int = 1,
) -> None:
    if len(embeddings) != len(settings.stages):
        raise ValueError(f"{len(embeddings)} embedding files for {len(settings.stages)} stages: one file per stage")
    inference = Inference(**settings.inference.as_dict())
    images, networks = embed_manifest(
        create_backbone,  # each network's backbone at the model's embedding layer
        manifest,
        settings.stages,
        weights,
        settings.entry,
        inference,
        model=model,
        analysis_set=analysis_set,
        threads=threads,
        log=log,
    )
    for network, out in zip(networks, embeddings):
        write_embeddings(out, images["image_id"], images["class"], network.outputs, network.provenance)
        log.info("wrote %s (%s): %d x %d", out, network.stage, *network.outputs.shape)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
