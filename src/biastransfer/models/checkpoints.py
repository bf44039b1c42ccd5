"""Finetuned classifier checkpoints: safetensors with the spec and class names in their metadata."""

from __future__ import annotations

import json
from pathlib import Path

from biastransfer.atomic import atomic_path
from biastransfer.models.extractors import Classifier, FeatureExtractor, checkpoint_eraser, create_backbone
from biastransfer.models.loading import load_state, read_weights_file
from biastransfer.models.spec import CHECKPOINT_FORMAT, METADATA_KEY, ModelSpec


def save_checkpoint(
    model: Classifier, path: str | Path, *, spec: ModelSpec, class_names, extra: dict | None = None
) -> None:
    """Write the classifier's state dict as safetensors with JSON metadata, atomically. Serialised in memory
    and written by Python: a full disk is then an OSError naming ``path`` (:func:`atomic_path`), where
    safetensors' own writer names no file."""
    from safetensors.torch import save

    class_names = [str(c) for c in class_names]
    if len(class_names) != model.num_classes:
        raise ValueError(f"{path}: {len(class_names)} class names for a classifier with {model.num_classes} outputs")
    meta = {
        "format": CHECKPOINT_FORMAT,
        "spec": spec.as_dict(),
        "class_names": class_names,
        "num_classes": model.num_classes,
        "extra": extra or {},
    }
    tensors = {k: v.detach().to("cpu").contiguous().clone() for k, v in model.state_dict().items()}
    data = save(tensors, metadata={METADATA_KEY: json.dumps(meta, sort_keys=True)})
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def read_checkpoint_metadata(path: str | Path) -> dict:
    """The metadata of a classifier checkpoint; ValueError if ``path`` is not one."""
    from safetensors import safe_open

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint {path} does not exist")
    try:
        with safe_open(str(path), framework="pt") as f:
            raw = (f.metadata() or {}).get(METADATA_KEY)
    except Exception as exc:
        raise ValueError(f"{path}: not a readable safetensors checkpoint ({exc})") from exc
    meta = json.loads(raw) if raw else {}
    if meta.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path}: not a biastransfer classifier checkpoint (no {CHECKPOINT_FORMAT!r} metadata)")
    return meta


ORIGIN_KEYS = ("init_weights_sha256", "train_sha256", "val_sha256")


def finetune_origin(path: str | Path) -> dict:
    """What a finetuned checkpoint started from: the sha256 of its initial weights and of its training
    and validation splits (None for a checkpoint written before these were recorded)."""
    extra = read_checkpoint_metadata(path).get("extra", {})
    return {key: extra.get(key) for key in ORIGIN_KEYS}


def load_classifier_from_checkpoint(path: str | Path, num_classes: int | None = None) -> tuple[Classifier, dict]:
    """(classifier in eval mode, metadata); ValueError if ``num_classes`` differs from the checkpoint's. A
    checkpoint whose backbone ends in an eraser (LEACE) gives a backbone that applies it."""
    meta = read_checkpoint_metadata(path)
    n = int(meta["num_classes"])
    if num_classes is not None and num_classes != n:
        raise ValueError(f"{path}: checkpoint has {n} classes, {num_classes} were requested")
    spec = ModelSpec.from_dict(meta["spec"])
    model = Classifier(create_backbone(spec, None), n)
    eraser = checkpoint_eraser(path)
    if eraser is not None:  # a LEACE network: its features pass the eraser before the head
        model.backbone.set_eraser(*eraser)
    state, _ = read_weights_file(path)
    load_state(model, state, what=f"classifier {spec.name!r} ({n} classes)", path=path)
    return model.eval(), meta


def load_backbone_from_checkpoint(path: str | Path, spec: ModelSpec | None = None) -> FeatureExtractor:
    """The finetuned backbone of a classifier checkpoint (at ``spec``'s layer when given)."""
    meta = read_checkpoint_metadata(path)
    return create_backbone(spec or ModelSpec.from_dict(meta["spec"]), path)
