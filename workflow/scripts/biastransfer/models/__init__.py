"""Models: specs and the paper's registry, spec resolution from config, weights fetching and
verification, safe loading, feature extractors and classifiers, checkpoints, and embedding extraction.
"""

from biastransfer.models.checkpoints import (  # noqa: F401
    ORIGIN_KEYS,
    finetune_origin,
    load_backbone_from_checkpoint,
    load_classifier_from_checkpoint,
    read_checkpoint_metadata,
    save_checkpoint,
)
from biastransfer.models.device import (  # noqa: F401
    torch_device,
)
from biastransfer.models.extractors import (  # noqa: F401
    Classifier,
    FeatureExtractor,
    create_backbone,
    create_classifier,
)
from biastransfer.models.features import (  # noqa: F401
    ImageFiles,
    embed_batches,
    embedding_provenance,
    extract_features,
    forward_batch,
    library_versions,
    preprocessed_images,
    undersized_images,
)
from biastransfer.models.loading import (  # noqa: F401
    BIT_HEAD_KEYS,
    bit_npz_layout,
    load_bit_npz,
    load_state,
    read_weights_file,
    select_prefix,
)
from biastransfer.models.registry import (  # noqa: F401
    REGISTRY,
)
from biastransfer.models.resolve import (  # noqa: F401
    is_timm_arch,
    model_spec,
    resolve_spec,
)
from biastransfer.models.spec import (  # noqa: F401
    CHECKPOINT_FORMAT,
    CLIP_MEAN,
    CLIP_STD,
    IMAGENET_MEAN,
    IMAGENET_STD,
    INCEPTION_MEAN,
    INCEPTION_STD,
    INTERPOLATIONS,
    METADATA_KEY,
    MOCO_PREFIX,
    PAPER_EXTRACTION,
    POOLS,
    SOURCES,
    ModelSpec,
    Preprocess,
)
from biastransfer.models.toy_weights import (  # noqa: F401
    BIT_CLASSES,
    write_weights,
)
from biastransfer.models.weights import (  # noqa: F401
    WEIGHTS_RECORD_FORMAT,
    read_weights_record,
    resolve_weights,
    verify_checksum,
    weights_cache_path,
    weights_file_and_sha256,
    write_weights_record,
)

__all__ = [
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "CLIP_MEAN",
    "CLIP_STD",
    "INCEPTION_MEAN",
    "INCEPTION_STD",
    "SOURCES",
    "POOLS",
    "INTERPOLATIONS",
    "CHECKPOINT_FORMAT",
    "METADATA_KEY",
    "MOCO_PREFIX",
    "Preprocess",
    "PAPER_EXTRACTION",
    "ModelSpec",
    "REGISTRY",
    "is_timm_arch",
    "resolve_spec",
    "model_spec",
    "verify_checksum",
    "weights_cache_path",
    "resolve_weights",
    "WEIGHTS_RECORD_FORMAT",
    "write_weights_record",
    "read_weights_record",
    "weights_file_and_sha256",
    "read_weights_file",
    "select_prefix",
    "load_state",
    "bit_npz_layout",
    "BIT_HEAD_KEYS",
    "load_bit_npz",
    "FeatureExtractor",
    "create_backbone",
    "Classifier",
    "create_classifier",
    "save_checkpoint",
    "read_checkpoint_metadata",
    "ORIGIN_KEYS",
    "finetune_origin",
    "load_classifier_from_checkpoint",
    "load_backbone_from_checkpoint",
    "ImageFiles",
    "undersized_images",
    "forward_batch",
    "embed_batches",
    "extract_features",
    "preprocessed_images",
    "library_versions",
    "embedding_provenance",
    "torch_device",
    "BIT_CLASSES",
    "write_weights",
]

# Layer profiles: several layers from one forward pass (models/layers.py).
from biastransfer.models.layers import (  # noqa: F401,E402
    LAYER_POOLS,
    LayerExtractor,
    default_layers,
    has_class_token,
    layer_extractor,
    resolve_layers,
)

__all__ += ["LAYER_POOLS", "default_layers", "has_class_token", "LayerExtractor", "layer_extractor", "resolve_layers"]
