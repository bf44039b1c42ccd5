"""Embed an analysis set at several layers of every network of one model (pretrained and each finetuned seed:
``settings.stages[i]``, whose weights are ``weights[i]``), in one forward pass per batch for all of them.

Writes ``{directories[i]}/{layer}.parquet`` per stage and layer (the embeddings format, docs/formats.md),
with the layer, its depth and the pooling in the provenance.

Standalone: python workflow/scripts/embed_layers.py --manifest results/analysis_sets/A/manifest.parquet
--weights W0 W1 --directories results/layers/A/M/embeddings/pretrained results/layers/A/M/embeddings/ft-D-seed0
--settings '{"stages": ["pretrained", "ft-D-seed0"], "entry": {"source": "timm", "arch": "resnet18"},
"inference": {"batch_size": 64, "num_workers": 1, "device": "cpu", "amp": true}, "layers": ["layer1", "layer4"],
"pooling": "auto"}' [--analysis_set A --model M] (layers: [] for the model's default profile; inference: as
embed.py's)
"""

import logging
from pathlib import Path

from biastransfer.embeddings import write_embeddings
from biastransfer.models.embedding_job import embed_manifest
from biastransfer.models.features import Inference
from biastransfer.models.layers import layer_extractor
from biastransfer.scripting import run
from biastransfer.workflow.rules.inference import EmbedLayersSettings

log = logging.getLogger(__name__)


def main(
    manifest: str,
    weights: list,
    directories: list,
    settings: EmbedLayersSettings,
    analysis_set: str = "",
    model: str = "model",
    threads: int = 1,
) -> None:
    if len(directories) != len(settings.stages):
        raise ValueError(f"{len(directories)} folders for {len(settings.stages)} stages: one folder per stage")
    layers = list(settings.layers) or None

    def build(spec, weights_file):  # one forward pass through the trunk gives every profile layer
        return layer_extractor(spec, weights_file, layers, settings.pooling)

    images, networks = embed_manifest(
        build,
        manifest,
        settings.stages,
        weights,
        settings.entry,
        Inference(**settings.inference.as_dict()),
        model=model,
        analysis_set=analysis_set,
        threads=threads,
        log=log,
    )
    for network, directory in zip(networks, directories):
        extractor = network.network
        common = {**network.provenance, "layers": extractor.layers}
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        for depth, (layer, matrix) in enumerate(extractor.split(network.outputs).items(), start=1):
            meta = {**common, "layer": layer, "depth": depth, "pool": extractor.pools[depth - 1]}
            write_embeddings(out / f"{layer}.parquet", images["image_id"], images["class"], matrix, meta)
            log.info("wrote %s: %d x %d", out / f"{layer}.parquet", *matrix.shape)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
