"""Models: specs and the paper's registry, spec resolution from config, weights fetching and
verification, safe loading, feature extractors and classifiers, checkpoints, and embedding extraction.
"""

from biastransfer.models.spec import (  # noqa: F401
    IMAGENET_MEAN,
    IMAGENET_STD,
    CLIP_MEAN,
    CLIP_STD,
    INCEPTION_MEAN,
    INCEPTION_STD,
    SOURCES,
    POOLS,
    INTERPOLATIONS,
    CHECKPOINT_FORMAT,
    METADATA_KEY,
    MOCO_PREFIX,
    Preprocess,
    PAPER_EXTRACTION,
    ModelSpec,
)
from biastransfer.models.registry import (  # noqa: F401
    REGISTRY,
)
from biastransfer.models.resolve import (  # noqa: F401
    is_timm_arch,
    resolve_spec,
    model_spec,
)
from biastransfer.models.weights import (  # noqa: F401
    verify_checksum,
    weights_cache_path,
    resolve_weights,
    WEIGHTS_RECORD_FORMAT,
    write_weights_record,
    read_weights_record,
    weights_file_and_sha256,
)
from biastransfer.models.loading import (  # noqa: F401
    read_weights_file,
    select_prefix,
    load_state,
    bit_npz_layout,
    BIT_HEAD_KEYS,
    load_bit_npz,
)
from biastransfer.models.extractors import (  # noqa: F401
    FeatureExtractor,
    create_backbone,
    Classifier,
    create_classifier,
)
from biastransfer.models.checkpoints import (  # noqa: F401
    save_checkpoint,
    read_checkpoint_metadata,
    ORIGIN_KEYS,
    finetune_origin,
    load_classifier_from_checkpoint,
    load_backbone_from_checkpoint,
)
from biastransfer.models.features import (  # noqa: F401
    ImageFiles,
    undersized_images,
    forward_batch,
    embed_batches,
    extract_features,
    preprocessed_images,
    library_versions,
    embedding_provenance,
)
from biastransfer.models.device import (  # noqa: F401
    torch_device,
)
from biastransfer.models.toy_weights import (  # noqa: F401
    BIT_CLASSES,
    write_weights,
)

__all__ = [
    "IMAGENET_MEAN", "IMAGENET_STD", "CLIP_MEAN", "CLIP_STD", "INCEPTION_MEAN", "INCEPTION_STD",
    "SOURCES", "POOLS", "INTERPOLATIONS", "CHECKPOINT_FORMAT", "METADATA_KEY", "MOCO_PREFIX",
    "Preprocess", "PAPER_EXTRACTION", "ModelSpec", "REGISTRY", "is_timm_arch", "resolve_spec",
    "model_spec", "verify_checksum", "weights_cache_path", "resolve_weights",
    "WEIGHTS_RECORD_FORMAT", "write_weights_record", "read_weights_record",
    "weights_file_and_sha256", "read_weights_file", "select_prefix", "load_state", "bit_npz_layout",
    "BIT_HEAD_KEYS", "load_bit_npz", "FeatureExtractor", "create_backbone", "Classifier",
    "create_classifier", "save_checkpoint", "read_checkpoint_metadata", "ORIGIN_KEYS",
    "finetune_origin", "load_classifier_from_checkpoint", "load_backbone_from_checkpoint",
    "ImageFiles", "undersized_images", "forward_batch", "embed_batches", "extract_features",
    "preprocessed_images", "library_versions",
    "embedding_provenance", "torch_device", "BIT_CLASSES", "write_weights"
]

# Layer profiles: several layers from one forward pass (models/layers.py).
from biastransfer.models.layers import (  # noqa: F401,E402
    LAYER_POOLS,
    default_layers,
    has_class_token,
    LayerExtractor,
    layer_extractor,
    resolve_layers,
)

__all__ += ["LAYER_POOLS", "default_layers", "has_class_token", "LayerExtractor", "layer_extractor", "resolve_layers"]
