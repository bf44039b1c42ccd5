"""Embed every image of an analysis set with one model at one stage (pretrained or finetuned).

Standalone: python workflow/scripts/embed.py --manifest results/analysis_sets/A/manifest.parquet
--weights W --embeddings E.parquet --entry '{"source": "timm", "arch": "resnet18"}'
--inference '{"batch_size": 64, "num_workers": 1, "device": "cpu"}' [--analysis_set A --model resnet18
--stage pretrained] (inference: biastransfer.models.features.Inference, "amp": false to turn autocast off)
"""

import logging

from biastransfer.embeddings import write_embeddings
from biastransfer.models.embedding_job import embed_manifest
from biastransfer.models.extractors import create_backbone
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(
    manifest: str,
    weights: str,
    embeddings: str,
    entry: dict,
    inference: dict,
    analysis_set: str = "",
    model: str = "model",
    stage: str = "pretrained",
    threads: int = 1,
) -> None:
    def build(spec):  # the model's embedding network: its backbone at its embedding layer
        return create_backbone(spec, weights)

    _, images, features, meta = embed_manifest(build, manifest, weights, entry, inference, model=model,
                                               analysis_set=analysis_set, stage=stage, threads=threads,
                                               log=log)  # fmt: skip
    write_embeddings(embeddings, images["image_id"], images["class"], features, meta)
    log.info("wrote %s: %d x %d", embeddings, *features.shape)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
