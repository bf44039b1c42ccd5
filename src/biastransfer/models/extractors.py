"""Feature extractors and classifiers for every model source, with weights applied and checked.

The only weights keys allowed to be absent are the classifier's.
"""

from __future__ import annotations

import itertools
import logging
from pathlib import Path

import torch
from torch import nn

from biastransfer.models.loading import load_bit_npz, load_state, read_weights_file, select_prefix
from biastransfer.models.resolve import is_timm_arch
from biastransfer.models.spec import CHECKPOINT_FORMAT, ModelSpec
from biastransfer.models.weights import read_weights_record, weights_file_and_sha256

log = logging.getLogger(__name__)


class StopForward(Exception):
    """Raised by a forward hook to end the forward pass once the wanted layer has run."""


def pool_features(x: torch.Tensor, pool: str, layer: str) -> torch.Tensor:
    """A layer's output ``x`` as one row per image, pooled by ``pool`` (ValueError naming ``layer`` when it cannot)."""
    if pool == "none-flatten" or x.ndim == 2:
        return x.flatten(1)
    if x.ndim == 4:  # (N, C, H, W)
        if pool == "cls":
            raise ValueError(f"layer {layer!r} gives a feature map (N, C, H, W); pool 'cls' needs tokens (N, L, C)")
        return x.mean(dim=(2, 3)) if pool == "avg" else x.amax(dim=(2, 3))
    if x.ndim == 3:  # (N, L, C) tokens
        if pool == "cls":
            return x[:, 0]
        return x.mean(dim=1) if pool == "avg" else x.amax(dim=1)
    raise ValueError(f"layer {layer!r} gives a {x.ndim}-D output; cannot pool it with {pool!r}")


class FeatureExtractor(nn.Module):
    """``forward(images) -> (N, embed_dim)`` features of ``trunk`` at ``layer``.

    ``layer='penultimate'`` is the trunk's own pre-logits output (its classifier removed); any other
    value names a module of the trunk, whose output is captured by a forward hook (the rest of the
    forward pass is skipped) and reduced by ``pool``. A penultimate extractor may end in an ``eraser``
    (:meth:`set_eraser`: an affine map of the features, LEACE's; biastransfer.train.methods).
    """

    def __init__(
        self,
        trunk: nn.Module,
        *,
        layer: str = "penultimate",
        pool: str = "avg",
        penultimate_dim: int,
        probe_size: int = 224,
    ):
        super().__init__()
        self.model = trunk
        self.layer = layer
        self.pool = pool
        self._captured: torch.Tensor | None = None
        self.eraser: nn.Linear | None = None
        if layer == "penultimate":
            self.embed_dim = int(penultimate_dim)
            return
        try:
            target = trunk.get_submodule(layer)
        except AttributeError as exc:
            names = [n for n, _ in trunk.named_modules() if n and n.count(".") < 2]
            raise ValueError(
                f"layer {layer!r} is not a module of {type(trunk).__name__}; some names: {', '.join(names[:25])}"
            ) from exc
        target.register_forward_hook(self._capture)
        was_training = trunk.training
        trunk.eval()
        with torch.no_grad():
            self.embed_dim = int(self(torch.zeros(1, 3, probe_size, probe_size)).shape[1])
        trunk.train(was_training)

    def _capture(self, module, args, output):
        self._captured = output[0] if isinstance(output, (tuple, list)) else output
        raise StopForward

    def set_eraser(self, weight: torch.Tensor, bias: torch.Tensor) -> None:
        """End the extractor in the affine map ``x -> x @ weight.T + bias`` of its penultimate features."""
        if self.layer != "penultimate":
            raise ValueError(f"an eraser acts on the penultimate features, not on layer {self.layer!r}")
        if tuple(weight.shape) != (self.embed_dim, self.embed_dim) or tuple(bias.shape) != (self.embed_dim,):
            raise ValueError(
                f"an eraser of {self.embed_dim} features needs a {self.embed_dim} x {self.embed_dim} weight and "
                f"{self.embed_dim} biases, got {tuple(weight.shape)} and {tuple(bias.shape)}"
            )
        self.eraser = nn.Linear(self.embed_dim, self.embed_dim)
        with torch.no_grad():
            self.eraser.weight.copy_(weight)
            self.eraser.bias.copy_(bias)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if self.layer == "penultimate":
            features = self.model(images)
            return features if self.eraser is None else self.eraser(features)
        try:
            self.model(images)
        except StopForward:
            pass
        out, self._captured = self._captured, None
        if out is None:
            raise RuntimeError(f"layer {self.layer!r} did not run during the forward pass")
        return pool_features(out, self.pool, self.layer)


def _torchvision_trunk(arch: str) -> tuple[nn.Module, str, int]:
    """(model with its classifier replaced by Identity, classifier name, its in_features)."""
    import torchvision

    try:
        model = torchvision.models.get_model(arch, weights=None)
    except ValueError as exc:
        raise ValueError(f"torchvision has no model architecture {arch!r}") from exc
    linears = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.Linear)]
    if not linears:
        raise ValueError(f"torchvision {arch!r}: no Linear classifier found")
    name, linear = linears[-1]
    parent = model.get_submodule(name.rpartition(".")[0]) if "." in name else model
    setattr(parent, name.rpartition(".")[2], nn.Identity())
    return model, name, linear.in_features


def _timm_trunk(arch: str) -> tuple[nn.Module, tuple[str, ...], int]:
    import timm

    if not timm.is_model(arch.split(".")[0]):
        raise ValueError(f"timm has no model architecture {arch!r}")
    model = timm.create_model(arch.split(".")[0], pretrained=False, num_classes=0)
    classifier = model.pretrained_cfg.get("classifier") or "fc"
    names = (classifier,) if isinstance(classifier, str) else tuple(classifier)
    dim = getattr(model, "head_hidden_size", None) or model.num_features
    return model, names, int(dim)


def _open_clip_model(arch: str, tag: str | None, image_size: int):
    """open_clip's ``arch`` at ``image_size`` (the preprocess crop): a ViT at another size than its own has a
    grid of position embeddings of that size, and :func:`_open_clip_state` interpolates a checkpoint's."""
    import open_clip

    model_cfg = open_clip.get_model_config(arch)
    if model_cfg is None:
        raise ValueError(f"open_clip has no model {arch!r}")
    quick = bool(tag and (open_clip.get_pretrained_cfg(arch, tag) or {}).get("quick_gelu"))
    native = model_cfg.get("vision_cfg", {}).get("image_size")
    size = None if image_size == native else image_size
    return open_clip.create_model(  # on the default device: the meta device of a config check builds no tensors
        arch,
        pretrained=None,
        load_weights=False,
        force_quick_gelu=quick,
        force_image_size=size,
        device=torch.get_default_device(),
    )


def _open_clip_state(clip, state: dict, path: Path) -> dict:
    """The image encoder's tensors of an open_clip state dict, its position embeddings interpolated (bicubic,
    open_clip's ``resize_pos_embed``) where the checkpoint's grid differs from the model's."""
    from open_clip.model import resize_pos_embed

    before = state.get("visual.positional_embedding")
    resize_pos_embed(state, clip)  # in place, and only where the grids differ
    after = state.get("visual.positional_embedding")
    if before is not None and after is not None and after.shape != before.shape:
        log.info("%s: position embeddings %s interpolated to %s", path, tuple(before.shape), tuple(after.shape))
    return select_prefix(state, "visual.", path)


def _apply_weights(spec: ModelSpec, module: nn.Module, what: str, path: Path, classifier: tuple[str, ...] = ()) -> None:
    state, meta = read_weights_file(path)
    if meta.get("format") == CHECKPOINT_FORMAT:
        state = select_prefix(state, "backbone.model.", path)
    elif spec.key_prefix:
        state = select_prefix(state, spec.key_prefix, path)
    elif all(k.startswith("module.") for k in state):
        state = {k[len("module.") :]: v for k, v in state.items()}
    load_state(module, state, what=what, path=path, ignore_prefixes=tuple(c + "." for c in classifier))


def create_backbone(spec: ModelSpec, weights_path: str | Path | None) -> FeatureExtractor:
    """The feature extractor of ``spec`` in eval mode; ``weights_path`` None = random init.

    Weights: torchvision/MoCo/SimCLR/checkpoint state dicts (``torch.save`` or safetensors, and the
    classifier checkpoints written by :func:`save_checkpoint`), BiT ``.npz`` through timm's loader,
    open_clip state dicts (only the ``visual.`` keys are used). ``weights_path`` may also be a
    weights record written by the fetch rule (:func:`write_weights_record`), which is followed.
    """
    path = None
    if weights_path is not None:
        path = Path(weights_path)
        if read_weights_record(path) is not None:
            path = weights_file_and_sha256(path)[0]
    source = spec.source
    if source == "checkpoint":
        source = "timm" if is_timm_arch(spec.arch) else "torchvision"
    if source in ("torchvision", "moco", "simclr"):
        trunk, cls_name, dim = _torchvision_trunk(spec.arch)
        if path is not None:
            _apply_weights(spec, trunk, f"torchvision {spec.arch}", path, (cls_name,))
    elif source == "timm":
        trunk, cls_names, dim = _timm_trunk(spec.arch)
        if path is not None:
            if path.suffix == ".npz":
                if not hasattr(trunk, "load_pretrained"):
                    raise ValueError(
                        f"{path}: .npz weights are only supported for timm models with their own npz loader (BiT)"
                    )
                load_bit_npz(trunk, path)
            else:
                _apply_weights(spec, trunk, f"timm {spec.arch}", path, cls_names)
    elif source == "open_clip":
        clip = _open_clip_model(spec.arch, spec.pretrained_tag, spec.preprocess.crop)
        trunk, dim = clip.visual, int(clip.visual.output_dim)
        if path is not None:
            state, meta = read_weights_file(path)
            if meta.get("format") == CHECKPOINT_FORMAT:
                state = select_prefix(state, "backbone.model.", path)
            else:
                state = _open_clip_state(clip, dict(state), path)
            load_state(trunk, state, what=f"open_clip {spec.arch} image encoder", path=path)
    else:
        raise ValueError(f"model {spec.name!r}: unknown source {spec.source!r}")
    extractor = FeatureExtractor(
        trunk, layer=spec.layer, pool=spec.pool, penultimate_dim=dim, probe_size=spec.preprocess.crop
    )
    if path is not None and spec.layer == "penultimate":
        eraser = checkpoint_eraser(path)
        if eraser is not None:
            extractor.set_eraser(*eraser)
    return extractor.eval()


ERASER_KEYS = ("backbone.eraser.weight", "backbone.eraser.bias")


def checkpoint_eraser(path: str | Path) -> tuple[torch.Tensor, torch.Tensor] | None:
    """The (weight, bias) of the eraser a classifier checkpoint's backbone ends in (a LEACE network), else None."""
    if path is None or Path(path).suffix != ".safetensors":
        return None
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        if ERASER_KEYS[0] not in f.keys():
            return None
        return f.get_tensor(ERASER_KEYS[0]), f.get_tensor(ERASER_KEYS[1])


class Classifier(nn.Module):
    """``head(backbone(x))``: a feature extractor and a linear multi-label head."""

    def __init__(self, backbone: FeatureExtractor, num_classes: int):
        super().__init__()
        if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
            raise ValueError(f"num_classes must be a positive integer, got {num_classes!r}")
        self.backbone = backbone
        self.head = nn.Linear(backbone.embed_dim, num_classes)
        nn.init.normal_(self.head.weight, mean=0.0, std=0.01)
        nn.init.zeros_(self.head.bias)

    @property
    def num_classes(self) -> int:
        return self.head.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(x))


class EmbeddingAndLogits(nn.Module):
    """``forward(images) -> (N, sum of embed_dim + num_classes)``: each classifier's embedding (its backbone's
    output, the features ``embed`` writes at the same layer) and its logits, side by side from one forward
    pass over one batch for all of them; :meth:`split` cuts them apart. A :class:`FeatureExtractor` among them
    (a network without a classifier head, such as the pretrained one) gives its embedding and no logits."""

    def __init__(self, *networks: Classifier | FeatureExtractor):
        super().__init__()
        if not networks:
            raise ValueError("EmbeddingAndLogits needs at least one classifier")
        self.classifiers = nn.ModuleList(networks)
        self.widths = [
            (c.backbone.embed_dim, c.num_classes) if isinstance(c, Classifier) else (c.embed_dim, 0) for c in networks
        ]
        self.embed_dim = sum(f + n for f, n in self.widths)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        outputs = []
        for network in self.classifiers:
            if isinstance(network, Classifier):
                features = network.backbone(images)
                outputs += [features, network.head(features)]
            else:
                outputs.append(network(images))
        return torch.cat(outputs, dim=1)

    def split(self, outputs) -> list[tuple]:
        """``[(embedding, logits)]``, one per classifier, of an ``(N, embed_dim)`` output of this module."""
        if outputs.shape[1] != self.embed_dim:
            raise ValueError(
                f"outputs have {outputs.shape[1]} columns, not the embeddings' and logits' {self.embed_dim}"
            )
        parts, start = [], 0
        for features, classes in self.widths:
            parts.append(
                (outputs[:, start : start + features], outputs[:, start + features : start + features + classes])
            )
            start += features + classes
        return parts


class SideBySide(nn.Module):
    """``forward(images) -> (N, sum of embed_dim)``: several networks (each with an ``embed_dim``: feature or
    layer extractors) on one batch, their outputs side by side, so that each image is decoded once for all of
    them; :meth:`split` cuts them apart. ``names`` (one per network) name the network whose forward pass fails."""

    def __init__(self, networks: list[nn.Module], names: list[str]):
        super().__init__()
        if not networks or len(names) != len(networks):
            raise ValueError(f"SideBySide needs one name per network, got {len(names)} for {len(networks)}")
        self.networks = nn.ModuleList(networks)
        self.names = list(names)
        self.widths = [int(n.embed_dim) for n in networks]
        self.embed_dim = sum(self.widths)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        outputs = []
        for name, network in zip(self.names, self.networks):
            try:
                outputs.append(network(images))
            except Exception as exc:
                exc.add_note(f"in the forward pass of {name}")
                raise
        return torch.cat(outputs, dim=1)

    def split(self, outputs) -> list:
        """One ``(N, embed_dim)`` block per network, in order, of an ``(N, embed_dim)`` output of this module."""
        if outputs.shape[1] != self.embed_dim:
            raise ValueError(f"outputs have {outputs.shape[1]} columns, not the networks' {self.embed_dim}")
        edges = [0, *itertools.accumulate(self.widths)]
        return [outputs[:, a:b] for a, b in zip(edges[:-1], edges[1:])]


def create_classifier(spec: ModelSpec, num_classes: int, weights_path: str | Path | None) -> Classifier:
    """A classifier for finetuning: the pretrained backbone and a fresh ``Linear(embed_dim, num_classes)``."""
    return Classifier(create_backbone(spec, weights_path), num_classes).eval()
