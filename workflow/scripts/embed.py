"""Embed every image of an analysis set with one model at one stage (pretrained or finetuned).

Standalone: python workflow/scripts/embed.py --manifest results/analysis_sets/A/manifest.parquet
--weights W --embeddings E.parquet --entry '{"source": "timm", "arch": "resnet18"}'
--inference '{"batch_size": 64, "num_workers": 1, "device": "cpu"}' [--analysis_set A --model resnet18
--stage pretrained] (inference: biastransfer.models.features.Inference, "amp": false to turn autocast off)
"""

import logging

from biastransfer.data.manifest import read_manifest, verify_files
from biastransfer.embeddings import write_embeddings
from biastransfer.hashing import config_hash, file_digest
from biastransfer.models.checkpoints import finetune_origin
from biastransfer.models.extractors import create_backbone
from biastransfer.models.features import Inference, embedding_provenance, run_on_images
from biastransfer.models.resolve import model_spec
from biastransfer.models.weights import weights_file_and_sha256
from biastransfer.scripting import run
from biastransfer.stages import parse_stage

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
    import torch

    torch.set_num_threads(max(1, threads))
    finetuned = parse_stage(stage)[0] is not None
    spec = model_spec(model, entry)
    images = read_manifest(manifest)
    verify_files(images, ".")
    backbone = create_backbone(spec, weights)
    settings = Inference(**inference)
    log.info("embedding %d images of %s with %s (%s) on %s", len(images), manifest, spec.name, stage,
             settings.torch_device)  # fmt: skip
    what = f"embedding {manifest} with {spec.name} ({stage})"
    features, runtime = run_on_images(backbone, images["path"].tolist(), spec, settings, what=what, log=log.warning)
    meta = embedding_provenance(
        spec,
        weights_file_and_sha256(weights)[1],
        stage=stage,
        analysis_set=analysis_set,
        manifest_sha256=file_digest(manifest),
        config_hash=config_hash(entry),
        **runtime,
        **(finetune_origin(weights) if finetuned else {}),
    )
    write_embeddings(embeddings, images["image_id"], images["class"], features, meta)
    log.info("wrote %s: %d x %d", embeddings, *features.shape)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
