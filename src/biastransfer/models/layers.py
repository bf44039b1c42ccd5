"""Layer profiles: embeddings of several named layers of one network from a single forward pass.

Forward hooks on the named modules capture their outputs; the pass stops once the deepest of them
has run. A module that runs more than once per pass (a shared activation such as the ``relu`` of a
torchvision ResNet block, applied after ``bn1`` and again after the residual sum) is captured at its
first call, whatever else is listed (as :class:`~biastransfer.models.extractors.FeatureExtractor` does). Each output is pooled to one vector per image (``avg`` / ``max`` over positions or tokens,
``cls`` = the class token, ``auto`` = ``cls`` for a transformer with a class token, else ``avg``).
Default layer sets per family (:func:`default_layers`): ResNet stages ``layer1``-``layer4``, timm
``stages.*`` (BiT), and every third transformer block plus the final one (timm ViT ``blocks.*``,
open_clip ``transformer.resblocks.*``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch
from torch import nn

from biastransfer.models.extractors import StopForward, create_backbone, pool_features
from biastransfer.models.spec import ModelSpec

LAYER_POOLS = ("auto", "avg", "max", "cls")


def _every_third(prefix: str, depth: int) -> list[str]:
    """Blocks 3, 6, 9, ... (1-based) and the final block, as ``{prefix}.{index}``."""
    picked = [i for i in range(depth) if (i + 1) % 3 == 0]
    if depth and (not picked or picked[-1] != depth - 1):
        picked.append(depth - 1)
    return [f"{prefix}.{i}" for i in picked]


def default_layers(trunk: nn.Module, model: str = "model") -> list[str]:
    """The family's default layers of ``trunk``; ValueError naming the model when it has none."""
    children = dict(trunk.named_children())
    if all(f"layer{i}" in children for i in range(1, 5)):
        return [f"layer{i}" for i in range(1, 5)]
    stages = children.get("stages")
    if isinstance(stages, nn.Sequential) and len(stages):
        return [f"stages.{name}" for name, _ in stages.named_children()]
    blocks = children.get("blocks")
    if isinstance(blocks, nn.Sequential) and len(blocks):
        return _every_third("blocks", len(blocks))
    resblocks = getattr(children.get("transformer"), "resblocks", None)
    if isinstance(resblocks, nn.ModuleList) and len(resblocks):
        return _every_third("transformer.resblocks", len(resblocks))
    raise ValueError(
        f"model {model!r}: no default layer set for a {type(trunk).__name__} (ResNet layer1-4, timm stages, "
        f"ViT blocks, open_clip resblocks); list its layers in the config: models.{model}.layers"
    )


def has_class_token(trunk: nn.Module) -> bool:
    """Whether a transformer trunk prepends a class token (timm ``cls_token``, open_clip ``class_embedding``)."""
    return getattr(trunk, "cls_token", None) is not None or getattr(trunk, "class_embedding", None) is not None


class LayerExtractor(nn.Module):
    """``forward(images) -> (N, sum of dims)``: the pooled outputs of ``layers`` side by side, in depth order.

    ``layers`` None = :func:`default_layers`. Unknown names raise a ValueError naming ``model``, the
    layers and some names the trunk has. :meth:`split` cuts a feature matrix back into one per layer.
    After construction, ``layers`` is in execution order and ``dims`` / ``pools`` give each one's
    output size and the pooling used.
    """

    def __init__(
        self,
        trunk: nn.Module,
        layers: list[str] | None = None,
        *,
        pool: str = "auto",
        probe_size: int = 224,
        model: str = "model",
    ):
        super().__init__()
        if pool not in LAYER_POOLS:
            raise ValueError(f"model {model!r}: layer pooling must be one of {LAYER_POOLS}, got {pool!r}")
        self.model = trunk
        layers = list(default_layers(trunk, model) if layers is None else layers)
        modules = dict(trunk.named_modules())
        unknown = [name for name in layers if name not in modules or not name]
        if unknown or not layers or len(set(layers)) != len(layers):
            some = [n for n in modules if n and n.count(".") < 2][:30]
            what = (
                f"unknown layer(s) {', '.join(map(repr, unknown))}"
                if unknown
                else f"layer list {layers!r} is empty or repeats a name"
            )
            try:
                default = f"; its default profile: {', '.join(default_layers(trunk, model))}"
            except ValueError:
                default = ""
            raise ValueError(
                f"model {model!r}: {what} of {type(trunk).__name__}; some of its layers: {', '.join(some)}{default}"
            )
        self._captured: dict[str, torch.Tensor] = {}
        self._wanted = set(layers)
        self._modules_at = {name: modules[name] for name in layers}
        self.layers, self.dims, self.pools = layers, [], []
        was_training = trunk.training
        trunk.eval()
        with torch.no_grad():
            outputs = self._run(torch.zeros(1, 3, probe_size, probe_size))
        trunk.train(was_training)
        self.layers = list(outputs)  # execution order
        tokens = "cls" if has_class_token(trunk) else "avg"
        self.pools = [(tokens if out.ndim == 3 else "avg") if pool == "auto" else pool for out in outputs.values()]
        self._pool_of = dict(zip(self.layers, self.pools))
        try:
            self.dims = [int(pool_features(out, p, n).shape[1]) for (n, out), p in zip(outputs.items(), self.pools)]
        except ValueError as exc:
            raise ValueError(f"model {model!r}: {exc}") from exc
        self.embed_dim = sum(self.dims)

    def _hook(self, name: str):
        def capture(module, args, output):
            if name in self._captured:  # a module run twice (a shared activation): its first call counts
                return
            self._captured[name] = output[0] if isinstance(output, (tuple, list)) else output
            if len(self._captured) == len(self._wanted):
                raise StopForward

        return capture

    def _run(self, images: torch.Tensor) -> dict[str, torch.Tensor]:
        """One forward pass with the hooks in place (removed afterwards: the trunk stays a plain network)."""
        self._captured = {}
        handles = [m.register_forward_hook(self._hook(n)) for n, m in self._modules_at.items()]
        try:
            self.model(images)
        except StopForward:
            pass
        finally:
            for handle in handles:
                handle.remove()
        out, self._captured = self._captured, {}
        missing = [n for n in self._wanted if n not in out]
        if missing:
            raise RuntimeError(f"layer(s) {', '.join(missing)} did not run during the forward pass")
        return out

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        outputs = self._run(images)
        return torch.cat([pool_features(outputs[n], self._pool_of[n], n) for n in self.layers], dim=1)

    def split(self, features: np.ndarray) -> dict[str, np.ndarray]:
        """``{layer: (N, dim)}`` from the ``(N, embed_dim)`` output of this extractor."""
        if features.shape[1] != self.embed_dim:
            raise ValueError(f"features have {features.shape[1]} columns, the layers {self.embed_dim}")
        edges = np.cumsum([0, *self.dims])
        return {n: features[:, a:b] for n, a, b in zip(self.layers, edges[:-1], edges[1:])}


def layer_extractor(
    spec: ModelSpec, weights_path: str | Path | None, layers: list[str] | None = None, pool: str = "auto"
) -> LayerExtractor:
    """A :class:`LayerExtractor` over the trunk of ``spec`` (weights as :func:`create_backbone`), in eval mode."""
    trunk = create_backbone(dataclasses.replace(spec, layer="penultimate"), weights_path).model
    return LayerExtractor(trunk, layers, pool=pool, probe_size=spec.preprocess.crop, model=spec.name).eval()


def resolve_layers(spec: ModelSpec, layers: list[str] | None = None, pool: str = "auto") -> list[dict]:
    """The layer profile of ``spec``, resolved on a randomly initialised network (no weights, no network):
    one ``{layer, depth, dim, pool}`` per layer in depth order (depth 1 = shallowest)."""
    ext = layer_extractor(spec, None, layers, pool)
    return [
        {"layer": n, "depth": i + 1, "dim": d, "pool": p}
        for i, (n, d, p) in enumerate(zip(ext.layers, ext.dims, ext.pools))
    ]


def layer_problems(config: Mapping) -> list[str]:
    """With layer profiles on (``analysis.layers.enabled``), one line per model whose profile does not
    resolve: an unknown layer name, a family without a default set, a pooling its layers' outputs do not
    allow. Resolved on the meta device (shapes only: no weights, no memory, no download), or on the CPU
    for a network that does not run there; before any job, so not after pretraining and finetuning."""
    from biastransfer.models.resolve import model_spec

    if not config["analysis"]["layers"]["enabled"]:
        return []
    problems = []
    for name, entry in config["models"].items():
        pool = entry.get("layer_pooling", config["analysis"]["layers"]["pooling"])
        try:
            try:
                with torch.device("meta"):
                    resolve_layers(model_spec(name, entry), entry.get("layers"), pool)
            except (NotImplementedError, RuntimeError):
                resolve_layers(model_spec(name, entry), entry.get("layers"), pool)
        except ValueError as exc:
            problems.append(f"models.{name}.layers: {exc}")
    return problems
