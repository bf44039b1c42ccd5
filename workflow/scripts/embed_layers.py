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

from biastransfer.embeddings import write_embeddings
from biastransfer.models.embedding_job import embed_manifest
from biastransfer.models.layers import layer_extractor
from biastransfer.scripting import run

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
    def build(spec):  # one forward pass through the trunk gives every profile layer
        return layer_extractor(spec, weights, list(layers) if layers else None, pooling)

    extractor, images, features, provenance = embed_manifest(build, manifest, weights, entry, inference, model=model,
                                                             analysis_set=analysis_set, stage=stage, threads=threads,
                                                             log=log)  # fmt: skip
    common = {**provenance, "layers": extractor.layers}
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    for depth, (layer, matrix) in enumerate(extractor.split(features).items(), start=1):
        meta = {**common, "layer": layer, "depth": depth, "pool": extractor.pools[depth - 1]}
        write_embeddings(out / f"{layer}.parquet", images["image_id"], images["class"], matrix, meta)
        log.info("wrote %s: %d x %d", out / f"{layer}.parquet", *matrix.shape)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
