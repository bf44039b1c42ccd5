"""Score every image of the evaluation splits with one model's trained classifiers (finetuned and scratch).

For each stage (``settings.stages[i]``, whose checkpoint is ``weights[i]``) the network scores the test split
of the dataset it was trained on (``splits[j]`` of ``settings.datasets[j]``): per-image sigmoid scores of
every class, in the predictions format (biastransfer.predictions) with the provenance of the embeddings plus
the split's digest, and from the same forward pass the network's embedding of each image (its classifier's
input: the features embed writes at the model's layer), in the embeddings format with the same metadata. The
pretrained network (``pretrained``: its weights; rule predict always gives them) has no classifier head for the
split's classes: it gives only its embedding of each split at the same layer (``pretrained_embeddings[j]``, stage
``pretrained``), the baseline of the finetuned networks' embedding leakage. The networks of one dataset run side by side on each batch, so
each image is read and decoded once for all of them. A network that lacks a class of the split is an error
naming the class and the checkpoint, raised before any image is scored.

Standalone: python workflow/scripts/predict.py --splits results/splits/D/test.parquet
--weights results/finetune/D/M/seed0/model.safetensors results/scratch/D/M/seed0/model.safetensors
--predictions P0.parquet P1.parquet --embeddings E0.parquet E1.parquet
[--pretrained results/weights/M/weights.done --pretrained_embeddings results/predictions/M/pretrained-D.embedding.parquet]
--settings '{"datasets": ["D"],
"stages": ["ft-D-seed0", "scratch-D-seed0"], "entry": {"source": "workflow", "arch": "resnet18", "preprocess":
{"resize": 64, "crop": 64}}, "inference": {"batch_size": 64, "num_workers": 1, "device": "cpu", "amp": true}}'
[--model M] (inference: as embed.py's)
"""

import logging
from typing import NamedTuple

import numpy as np

from biastransfer.data.splits import read_split
from biastransfer.embeddings import write_embeddings
from biastransfer.hashing import config_hash, file_digest
from biastransfer.models.checkpoints import finetune_origin, load_classifier_from_checkpoint
from biastransfer.models.embedding_job import built
from biastransfer.models.extractors import EmbeddingAndLogits, create_backbone
from biastransfer.models.features import Inference, embedding_provenance, run_on_images
from biastransfer.models.resolve import model_spec
from biastransfer.models.weights import weights_file_and_sha256
from biastransfer.predictions import write_predictions
from biastransfer.scripting import run
from biastransfer.stages import PRETRAINED, parse_stage
from biastransfer.workflow.rules.inference import PredictSettings

log = logging.getLogger(__name__)


class Network(NamedTuple):
    """One network rule predict scores: its stage, checkpoint, loaded classifier, classes and output files."""

    stage: str
    weights: str
    classifier: object
    classes: list
    predictions: str
    embeddings: str


def check_classes(split_classes, network_classes, weights: str) -> None:
    """ValueError naming the checkpoint and the first class of the split the network does not predict."""
    lacking = [c for c in split_classes if c not in network_classes]
    if lacking:
        raise ValueError(
            f"{weights}: the network has no output for class {lacking[0]!r} of the split "
            f"(its classes: {', '.join(network_classes)})"
        )


def main(
    splits: list,
    weights: list,
    predictions: list,
    embeddings: list,
    settings: PredictSettings,
    model: str = "model",
    threads: int = 1,
    pretrained: str = "",
    pretrained_embeddings: list | str | None = None,
) -> None:
    import torch

    torch.set_num_threads(max(1, threads))
    datasets, stages, entry = settings.datasets, settings.stages, settings.entry
    baselines = [pretrained_embeddings] if isinstance(pretrained_embeddings, str) else list(pretrained_embeddings or [])
    if bool(pretrained) != bool(baselines) or (baselines and len(baselines) != len(datasets)):
        raise ValueError(
            f"pretrained weights {pretrained or 'none'} and {len(baselines)} pretrained embedding files for "
            f"{len(datasets)} datasets: with the pretrained weights, one pretrained embedding file per dataset"
        )
    if len(datasets) != len(splits) or not len(stages) == len(weights) == len(predictions) == len(embeddings):
        raise ValueError(
            f"{len(splits)} splits for {len(datasets)} datasets, and {len(stages)} stages for "
            f"{len(weights)} checkpoints, {len(predictions)} prediction and {len(embeddings)} "
            "embedding files: one split per dataset, one of each file per stage"
        )
    split_of = dict(zip(datasets, splits))
    spec = model_spec(model, entry)
    inference = Inference(**settings.inference.as_dict())
    by_split: dict[str, list[Network]] = {}
    for stage, weights_file, scores_out, embedding_out in zip(stages, weights, predictions, embeddings):
        dataset = parse_stage(stage)[0]
        if dataset not in split_of:
            raise ValueError(f"stage {stage!r}: its dataset {dataset!r} is none of {datasets} (the test splits given)")
        classifier, meta = load_classifier_from_checkpoint(weights_file)
        classes = [str(c) for c in meta["class_names"]]
        by_split.setdefault(split_of[dataset], []).append(
            Network(stage, weights_file, classifier, classes, scores_out, embedding_out)
        )
    read = {split: read_split(split) for split in splits}
    for split, networks in by_split.items():  # every network against its split before any image is scored
        for n in networks:
            check_classes(read[split].classes, n.classes, n.weights)
    # the pretrained network (when given) at the layer the classifiers' heads read
    backbone = built(create_backbone, spec, PRETRAINED, pretrained) if pretrained else None
    entry_hash = config_hash(entry)
    for split, baseline in zip(splits, baselines or [None] * len(splits)):
        images, networks = read[split], by_split.get(split, [])
        if not networks and baseline is None:
            continue
        paths = images.frame["path"].tolist()
        names = ", ".join([*([PRETRAINED] if baseline else []), *(n.stage for n in networks)])
        log.info(
            "scoring %d images of %s with %s (%s) on %s", len(paths), split, spec.name, names, inference.torch_device
        )
        both = EmbeddingAndLogits(*([backbone] if baseline else []), *(n.classifier for n in networks))
        what = f"predicting {split} with {spec.name} ({names})"
        outputs, runtime = run_on_images(both, paths, spec, inference, what=what, log=log.warning)
        split_digest = file_digest(split)
        parts = both.split(outputs)
        if baseline:
            (base, _), *parts = parts
            provenance = embedding_provenance(
                spec,
                weights_file_and_sha256(pretrained)[1],
                stage=PRETRAINED,
                dataset=images.dataset,
                split=images.name,
                split_sha256=split_digest,
                config_hash=entry_hash,
                **runtime,
            )
            write_embeddings(baseline, images.frame["image_id"], [images.name] * len(paths), base, provenance)
            log.info("wrote %s (%s): %d dimensions", baseline, PRETRAINED, base.shape[1])
        for n, (features, logits) in zip(networks, parts):
            scores = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
            provenance = embedding_provenance(
                spec,
                file_digest(n.weights),
                stage=n.stage,
                dataset=images.dataset,
                split=images.name,
                split_sha256=split_digest,
                config_hash=entry_hash,
                **runtime,
                **finetune_origin(n.weights),
            )
            write_predictions(n.predictions, images.frame["image_id"], n.classes, scores, provenance)
            write_embeddings(n.embeddings, images.frame["image_id"], [images.name] * len(paths), features, provenance)
            log.info(
                "wrote %s: %d images x %d classes, and %s: %d dimensions",
                n.predictions,
                *scores.shape,
                n.embeddings,
                features.shape[1],
            )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
