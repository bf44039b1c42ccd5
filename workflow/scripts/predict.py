"""Score every image of an evaluation split with one trained classifier (finetuned or scratch reference).

Per-image sigmoid scores of every class of the network, in the predictions format (biastransfer.predictions)
with the provenance of the embeddings plus the split's digest, and from the same forward pass the network's
embedding of each image (its classifier's input: the features embed writes at the model's layer), in the
embeddings format with the same metadata. A network that lacks a class of the split is an error naming the
class and the checkpoint.

Standalone: python workflow/scripts/predict.py --split results/splits/D/test.parquet
--weights results/finetune/D/M/seed0/model.safetensors --predictions P.parquet --embeddings E.parquet
--entry '{"source": "workflow", "arch": "resnet18", "preprocess": {"resize": 64, "crop": 64}}'
--batch_size 64 --num_workers 1 --device cpu [--amp false --model M --stage ft-D-seed0]
"""

import logging

import numpy as np

from biastransfer.data.splits import read_split
from biastransfer.embeddings import write_embeddings
from biastransfer.hashing import config_hash, file_digest
from biastransfer.models.checkpoints import finetune_origin, load_classifier_from_checkpoint
from biastransfer.models.device import torch_device
from biastransfer.models.extractors import EmbeddingAndLogits
from biastransfer.models.features import embedding_provenance, run_on_images
from biastransfer.models.resolve import model_spec
from biastransfer.predictions import write_predictions
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def check_classes(split_classes, network_classes, weights: str) -> None:
    """ValueError naming the checkpoint and the first class of the split the network does not predict."""
    lacking = [c for c in split_classes if c not in network_classes]
    if lacking:
        raise ValueError(
            f"{weights}: the network has no output for class {lacking[0]!r} of the split "
            f"(its classes: {', '.join(network_classes)})"
        )


def main(
    split: str,
    weights: str,
    predictions: str,
    embeddings: str,
    entry: dict,
    batch_size: int,
    num_workers: int,
    device: str,
    model: str = "model",
    stage: str = "",
    amp: bool = True,
    threads: int = 1,
) -> None:
    import torch

    torch.set_num_threads(max(1, threads))
    images = read_split(split)
    network, meta = load_classifier_from_checkpoint(weights)
    classes = [str(c) for c in meta["class_names"]]
    check_classes(images.classes, classes, weights)
    spec = model_spec(model, entry)
    dev = torch_device(device)
    paths = images.frame["path"].tolist()
    log.info("scoring %d images of %s with %s (%s) on %s", len(paths), split, spec.name, stage, dev)
    both = EmbeddingAndLogits(network)
    outputs, runtime = run_on_images(
        both,
        paths,
        spec,
        what=f"predicting {split} with {spec.name} ({stage})",
        batch_size=batch_size,
        num_workers=num_workers,
        device=dev,
        amp=amp,
        log=log.warning,
    )
    features, logits = both.split(outputs)
    scores = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
    provenance = embedding_provenance(
        spec,
        file_digest(weights),
        stage=stage,
        dataset=images.dataset,
        split=images.name,
        split_sha256=file_digest(split),
        config_hash=config_hash(entry),
        device=str(dev),
        **runtime,
        **finetune_origin(weights),
    )
    write_predictions(predictions, images.frame["image_id"], classes, scores, provenance)
    write_embeddings(embeddings, images.frame["image_id"], [images.name] * len(paths), features, provenance)
    log.info("wrote %s: %d images x %d classes, and %s: %d dimensions", predictions, *scores.shape, embeddings,
             features.shape[1])  # fmt: skip


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
