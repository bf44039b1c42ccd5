"""Models (torch, timm, open_clip).

The curated public API (docs/api.md); everything else stays in its module.

- The paper's models and their pretrained configs: :data:`REGISTRY` of :class:`ModelSpec` (with its
  :class:`Preprocess`); any timm / open_clip model or checkpoint from a config entry: :func:`model_spec`,
  :func:`resolve_spec`
- Networks: :func:`create_backbone`, :func:`create_classifier`, :class:`FeatureExtractor`; layers:
  :func:`default_layers`, :func:`resolve_layers`, :func:`layer_extractor`
- Weights: :func:`resolve_weights` (fetched and verified), :func:`save_checkpoint`,
  :func:`load_backbone_from_checkpoint`
- Embeddings: :func:`extract_features`, :func:`embed_batches`, on :func:`torch_device`
"""

from biastransfer.models.checkpoints import load_backbone_from_checkpoint, save_checkpoint
from biastransfer.models.device import torch_device
from biastransfer.models.extractors import FeatureExtractor, create_backbone, create_classifier
from biastransfer.models.features import embed_batches, extract_features
from biastransfer.models.layers import default_layers, layer_extractor, resolve_layers
from biastransfer.models.registry import REGISTRY
from biastransfer.models.resolve import model_spec, resolve_spec
from biastransfer.models.spec import ModelSpec, Preprocess
from biastransfer.models.weights import resolve_weights

__all__ = [
    "REGISTRY",
    "ModelSpec",
    "Preprocess",
    "model_spec",
    "resolve_spec",
    "create_backbone",
    "create_classifier",
    "FeatureExtractor",
    "default_layers",
    "resolve_layers",
    "layer_extractor",
    "resolve_weights",
    "save_checkpoint",
    "load_backbone_from_checkpoint",
    "extract_features",
    "embed_batches",
    "torch_device",
]
