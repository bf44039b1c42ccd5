"""Embed an analysis set at several layers of one model and stage, in one forward pass per batch.

Writes ``{directory}/{layer}.parquet`` per layer (the embeddings format, docs/formats.md), with the
layer, its depth and the pooling in the provenance.

Standalone: python workflow/scripts/embed_layers.py --manifest results/analysis_sets/A/manifest.parquet
--weights W --directory results/layers/A/M/embeddings/pretrained --entry '{"source": "timm", "arch": "resnet18"}'
--pooling auto --inference '{"batch_size": 64, "num_workers": 1, "device": "cpu"}'
[--layers layer1 layer4 --analysis_set A --model M --stage pretrained] (inference: as embed.py's)
"""

import logging
from pathlib import Path

from biastransfer.data.manifest import read_manifest, verify_files
from biastransfer.embeddings import write_embeddings
from biastransfer.hashing import config_hash, file_digest
from biastransfer.models.checkpoints import finetune_origin
from biastransfer.models.features import Inference, embedding_provenance, run_on_images
from biastransfer.models.layers import layer_extractor
from biastransfer.models.resolve import model_spec
from biastransfer.models.weights import weights_file_and_sha256
from biastransfer.scripting import run
from biastransfer.stages import parse_stage

log = logging.getLogger(__name__)


def main(
    manifest: str,
    weights: str,
    directory: str,
    entry: dict,
    pooling: str,
    inference: dict,
    layers: list | None = None,
    analysis_set: str = "",
    model: str = "model",
    stage: str = "pretrained",
    threads: int = 1,
) -> None:
    import torch

    torch.set_num_threads(max(1, threads))
    spec = model_spec(model, entry)
    extractor = layer_extractor(spec, weights, list(layers) if layers else None, pooling)
    images = read_manifest(manifest)
    verify_files(images, ".")
    settings = Inference(**inference)
    log.info("embedding %d images with %s (%s) at %s on %s", len(images), spec.name, stage,
             ", ".join(extractor.layers), settings.torch_device)  # fmt: skip
    what = f"embedding {manifest} with {spec.name} ({stage}) at {len(extractor.layers)} layers"
    features, runtime = run_on_images(extractor, images["path"].tolist(), spec, settings, what=what, log=log.warning)
    common = embedding_provenance(
        spec,
        weights_file_and_sha256(weights)[1],
        stage=stage,
        analysis_set=analysis_set,
        manifest_sha256=file_digest(manifest),
        config_hash=config_hash(entry),
        **runtime,
        layers=extractor.layers,
        **(finetune_origin(weights) if parse_stage(stage)[0] is not None else {}),
    )
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    for depth, (layer, matrix) in enumerate(extractor.split(features).items(), start=1):
        meta = {**common, "layer": layer, "depth": depth, "pool": extractor.pools[depth - 1]}
        write_embeddings(out / f"{layer}.parquet", images["image_id"], images["class"], matrix, meta)
        log.info("wrote %s: %d x %d", out / f"{layer}.parquet", *matrix.shape)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
