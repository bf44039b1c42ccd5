"""Models (torch, timm, open_clip).

The curated public API (docs/api.md); everything else stays in its module. Names load on
first use (biastransfer._lazy).

- The paper's models and their pretrained configs: :data:`REGISTRY` of :class:`ModelSpec` (with its
  :class:`Preprocess`); any timm / open_clip model or checkpoint from a config entry: :func:`model_spec`,
  :func:`resolve_spec`
- Networks: :func:`create_backbone`, :func:`create_classifier`, :class:`FeatureExtractor`; layers:
  :func:`default_layers`, :func:`resolve_layers`, :func:`layer_extractor`
- Weights: :func:`resolve_weights` (fetched and verified), :func:`save_checkpoint`,
  :func:`load_backbone_from_checkpoint`
- Embeddings: :func:`extract_features`, :func:`embed_batches`, on :func:`torch_device`
"""

from biastransfer._lazy import lazy_namespace as _lazy_namespace

#: Each public name and the module of this package that defines it, in the order docs/api.md lists them.
_EXPORTS = {
    "REGISTRY": "registry",
    "ModelSpec": "spec",
    "Preprocess": "spec",
    "model_spec": "resolve",
    "resolve_spec": "resolve",
    "create_backbone": "extractors",
    "create_classifier": "extractors",
    "FeatureExtractor": "extractors",
    "default_layers": "layers",
    "resolve_layers": "layers",
    "layer_extractor": "layers",
    "resolve_weights": "weights",
    "save_checkpoint": "checkpoints",
    "load_backbone_from_checkpoint": "checkpoints",
    "extract_features": "features",
    "embed_batches": "features",
    "torch_device": "device",
}
__all__ = list(_EXPORTS)
_lazy_namespace(__name__, _EXPORTS)
