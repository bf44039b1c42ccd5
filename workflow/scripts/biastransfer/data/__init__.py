"""Datasets: downloads, the dataset-kind adapters, COCO, Open Images and the synthetic scenes (as modules:
``coco``, ``openimages``, ``synthetic``), analysis-set curation and manifests, finetuning splits, their decoded-once
training caches and the leakage check. Never torch.
"""

from biastransfer.data import (
    coco,  # noqa: F401
    openimages,  # noqa: F401
    synthetic,  # noqa: F401
)
from biastransfer.data.cache import (  # noqa: F401
    CACHE_FORMAT,
    CacheError,
    CacheSetting,
    ImageCache,
    build_cache,
    decode_rgb,
    encode_for_cache,
    resized_size,
    shards_folder,
)
from biastransfer.data.curation import (  # noqa: F401
    SELECTION_COLUMNS,
    check_class_names,
    class_rng,
    draw,
    manifest_from_selection,
)
from biastransfer.data.download import (  # noqa: F401
    CHUNK,
    ChecksumError,
    Download,
    DownloadError,
    apply_mirror,
    fetch,
    fetch_many,
    is_remote,
    partial_path,
    sidecar_path,
)
from biastransfer.data.kinds import (  # noqa: F401
    KINDS,
    Coco,
    GenderWords,
    OpenImages,
    curation_sizes,
    kind_of,
    pinned,
    unzip,
)
from biastransfer.data.leakage import (  # noqa: F401
    check_no_leakage,
)
from biastransfer.data.manifest import (  # noqa: F401
    read_manifest,
    resolve_paths,
    validate_manifest,
    verify_files,
    write_manifest,
)
from biastransfer.data.splits import (  # noqa: F401
    METADATA_KEY,
    Split,
    check_split,
    read_split,
    write_split,
)
from biastransfer.data.toy_mirror import (  # noqa: F401
    COCO_CATEGORIES,
    build_coco,
    build_openimages,
    label_image,
    sha256_of,
)
from biastransfer.data.user import (  # noqa: F401
    IMAGE_SUFFIXES,
    REASON,
    Table,
    UserDataError,
    analysis_set_manifest,
    config_problems,
    read_table,
    table_splits,
    val_draw,
)

__all__ = [
    "CACHE_FORMAT",
    "CacheError",
    "CacheSetting",
    "ImageCache",
    "build_cache",
    "decode_rgb",
    "encode_for_cache",
    "resized_size",
    "shards_folder",
    "CHUNK",
    "DownloadError",
    "ChecksumError",
    "Download",
    "is_remote",
    "apply_mirror",
    "sidecar_path",
    "partial_path",
    "fetch",
    "fetch_many",
    "SELECTION_COLUMNS",
    "class_rng",
    "draw",
    "check_class_names",
    "manifest_from_selection",
    "validate_manifest",
    "read_manifest",
    "write_manifest",
    "resolve_paths",
    "verify_files",
    "METADATA_KEY",
    "Split",
    "write_split",
    "read_split",
    "check_split",
    "check_no_leakage",
    "GenderWords",
    "unzip",
    "curation_sizes",
    "pinned",
    "Coco",
    "OpenImages",
    "KINDS",
    "kind_of",
    "COCO_CATEGORIES",
    "label_image",
    "sha256_of",
    "build_coco",
    "build_openimages",
    "IMAGE_SUFFIXES",
    "REASON",
    "UserDataError",
    "read_table",
    "config_problems",
    "analysis_set_manifest",
    "table_splits",
    "val_draw",
    "Table",
    "coco",
    "openimages",
    "synthetic",
]
