"""The paper's models (in the spirit of timm's pretrained configs): architecture, weights URL, checksum.

Facts (URLs, checksums, key layouts) and their primary sources: docs/models.md.
"""

from __future__ import annotations

from biastransfer.models.spec import (
    CLIP_MEAN,
    CLIP_STD,
    INCEPTION_MEAN,
    INCEPTION_STD,
    MOCO_PREFIX,
    ModelSpec,
    Preprocess,
)

_TV_URL = "https://download.pytorch.org/models/"
_MOCO_URL = "https://dl.fbaipublicfiles.com/moco/moco_checkpoints/"
_SIMCLR_NOTES = (
    "No PyTorch weights are published: download the TF checkpoint "
    "https://storage.cloud.google.com/simclr-gcs/checkpoints/ResNet50_1x.zip, convert it with "
    "tonylins/simclr-converter (python convert.py ResNet50_1x/model.ckpt-225206 resnet50-1x.pth; needs "
    "TensorFlow) and set 'weights: /path/to/resnet50-1x.pth' for this model in the config. "
    "Inputs are not normalised (the TF model was trained on [0,1] pixels)."
)

# One row per model: name, source, architecture, weights URL, sha256 prefix (then preprocessing, tags, notes).
# fmt: off
REGISTRY: dict[str, ModelSpec] = {spec.name: spec for spec in (
    ModelSpec("resnet18", "torchvision", "resnet18", _TV_URL + "resnet18-f37072fd.pth", "f37072fd",
              notes="torchvision ResNet18_Weights.IMAGENET1K_V1"),
    ModelSpec("resnet50", "torchvision", "resnet50", _TV_URL + "resnet50-0676ba61.pth", "0676ba61",
              notes="torchvision ResNet50_Weights.IMAGENET1K_V1 (not DEFAULT, which is V2)"),
    ModelSpec("bit_m_r50x1", "timm", "resnetv2_50x1_bit", "https://storage.googleapis.com/bit_models/BiT-M-R50x1.npz",
              None, Preprocess(256, 224, "bilinear", INCEPTION_MEAN, INCEPTION_STD), pretrained_tag="goog_in21k",
              notes="Google BiT-M R50x1 ImageNet-21k .npz = timm resnetv2_50x1_bit.goog_in21k; no checksum published"),
    ModelSpec("clip_vit_b32", "open_clip", "ViT-B-32-quickgelu",
              "https://huggingface.co/timm/vit_base_patch32_clip_224.openai/resolve/main/open_clip_model.safetensors",
              None, Preprocess(224, 224, "bicubic", CLIP_MEAN, CLIP_STD), pretrained_tag="openai",
              notes="OpenAI CLIP ViT-B/32 (QuickGELU); features = encode_image (after the projection)"),
    ModelSpec("moco_r50_v1", "moco", "resnet50", _MOCO_URL + "moco_v1_200ep/moco_v1_200ep_pretrain.pth.tar",
              md5="b251726a", key_prefix=MOCO_PREFIX, notes="MoCo v1, 200 epochs (the authors' choice)"),
    ModelSpec("moco_r50_v2", "moco", "resnet50", _MOCO_URL + "moco_v2_800ep/moco_v2_800ep_pretrain.pth.tar",
              md5="a04e12f8", key_prefix=MOCO_PREFIX, notes="MoCo v2, 800 epochs"),
    ModelSpec("simclr_r50_v1", "simclr", "resnet50", None, None, Preprocess(256, 224, "bilinear", None, None),
              notes=_SIMCLR_NOTES),
)}
# fmt: on
