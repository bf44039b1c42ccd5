"""Model registry, weight loading and feature extractors (in the spirit of timm's pretrained configs).

A :class:`ModelSpec` names an architecture, where its weights come from, how its inputs are
preprocessed and which layer gives the embedding. ``REGISTRY`` holds the paper's models; any timm
model, any open_clip (name, pretrained) pair or any checkpoint file can be added from a config dict
with :func:`resolve_spec`. Loading never unpickles code: ``torch.load(weights_only=True)``,
safetensors, or ``.npz`` with ``allow_pickle=False``. Weights that do not fit the architecture raise a
ValueError naming the keys; the only keys allowed to be absent are the classifier's.
Facts (URLs, checksums, key layouts): ``research/data-models.md`` §4-§6.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import torch
from torch import nn

from .atomic import atomic_path
from .hashing import file_digest

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
INCEPTION_MEAN = INCEPTION_STD = (0.5, 0.5, 0.5)

SOURCES = ("torchvision", "timm", "open_clip", "moco", "simclr", "checkpoint")
POOLS = ("avg", "max", "cls", "none-flatten")
INTERPOLATIONS = ("bilinear", "bicubic")
CHECKPOINT_FORMAT = "biastransfer-classifier/1"
METADATA_KEY = "biastransfer"
MOCO_PREFIX = "module.encoder_q."


# --------------------------------------------------------------------------------------------
# Preprocessing and specs
# --------------------------------------------------------------------------------------------


def _triple(value, what: str) -> tuple[float, float, float] | None:
    if value is None:
        return None
    try:
        out = tuple(float(v) for v in value)
    except TypeError as exc:
        raise ValueError(f"preprocess {what} must be three numbers, got {value!r}") from exc
    if len(out) != 3:
        raise ValueError(f"preprocess {what} must be three numbers (RGB), got {value!r}")
    return out


@dataclass(frozen=True)
class Preprocess:
    """Resize the shorter side to ``resize``, centre-crop ``crop``, scale to [0,1], normalise.

    ``mean``/``std`` None means no normalisation (inputs stay in [0,1], as SimCLR v1 expects).
    ``train_hflip`` adds a random horizontal flip to the training transform only; by default the
    training transform equals the evaluation one, so pretrained and finetuned embeddings share it.
    """

    resize: int = 256
    crop: int = 224
    interpolation: str = "bilinear"
    mean: tuple[float, float, float] | None = IMAGENET_MEAN
    std: tuple[float, float, float] | None = IMAGENET_STD
    train_hflip: bool = False

    def __post_init__(self):
        for name in ("resize", "crop"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"preprocess {name} must be a positive integer, got {value!r}")
        if self.crop > self.resize:
            raise ValueError(f"preprocess crop ({self.crop}) must not exceed resize ({self.resize})")
        if self.interpolation not in INTERPOLATIONS:
            raise ValueError(f"preprocess interpolation must be one of {INTERPOLATIONS}, got {self.interpolation!r}")
        mean, std = _triple(self.mean, "mean"), _triple(self.std, "std")
        if (mean is None) != (std is None):
            raise ValueError("preprocess mean and std must both be given or both be None")
        if std is not None and min(std) <= 0:
            raise ValueError(f"preprocess std must be positive, got {std}")
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "std", std)

    def transform(self, train: bool = False):
        """A torchvision transform: PIL RGB image -> float tensor (3, crop, crop)."""
        from torchvision import transforms as T

        interp = {"bilinear": T.InterpolationMode.BILINEAR, "bicubic": T.InterpolationMode.BICUBIC}
        steps = [T.Resize(self.resize, interpolation=interp[self.interpolation]), T.CenterCrop(self.crop)]
        if train and self.train_hflip:
            steps.append(T.RandomHorizontalFlip())
        steps.append(T.ToTensor())
        if self.mean is not None:
            steps.append(T.Normalize(self.mean, self.std))
        return T.Compose(steps)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


PAPER_EXTRACTION = Preprocess(256, 224, "bilinear", IMAGENET_MEAN, IMAGENET_STD)


@dataclass(frozen=True)
class ModelSpec:
    """Everything needed to build a model and reproduce its embeddings.

    ``source`` picks the builder: ``torchvision`` / ``timm`` / ``open_clip`` (their architecture
    names), ``moco`` (a torchvision ResNet from a MoCo ``.pth.tar``: keys ``module.encoder_q.*``),
    ``simclr`` (a torchvision ResNet from a converted SimCLR ``{'state_dict': ...}``), ``checkpoint``
    (a timm or torchvision ``arch`` from any state-dict file). ``weights`` is a URL or local path,
    ``sha256``/``md5`` a full digest or a prefix of at least 8 hex digits. ``layer`` is
    ``penultimate`` (the pre-logits features) or the dotted name of any module of the trunk, whose
    output is reduced by ``pool``. ``key_prefix`` selects and strips a prefix of checkpoint keys.
    """

    name: str
    source: str
    arch: str
    weights: str | None = None
    sha256: str | None = None
    preprocess: Preprocess = field(default_factory=Preprocess)
    layer: str = "penultimate"
    pool: str = "avg"
    pretrained_tag: str | None = None
    md5: str | None = None
    key_prefix: str | None = None
    notes: str | None = None

    def __post_init__(self):
        for name in ("name", "arch"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ValueError(f"model {name} must be a non-empty string, got {getattr(self, name)!r}")
        if self.source not in SOURCES:
            raise ValueError(f"model {self.name!r}: source must be one of {SOURCES}, got {self.source!r}")
        if self.pool not in POOLS:
            raise ValueError(f"model {self.name!r}: pool must be one of {POOLS}, got {self.pool!r}")
        if isinstance(self.preprocess, dict):
            object.__setattr__(self, "preprocess", Preprocess(**self.preprocess))
        if not isinstance(self.preprocess, Preprocess):
            raise ValueError(f"model {self.name!r}: preprocess must be a Preprocess, got {self.preprocess!r}")
        for name, length in (("sha256", 64), ("md5", 32)):
            value = getattr(self, name)
            if value is None:
                continue
            value = str(value).lower()
            if not (8 <= len(value) <= length) or any(c not in "0123456789abcdef" for c in value):
                raise ValueError(f"model {self.name!r}: {name} must be 8 to {length} hex digits, got {value!r}")
            object.__setattr__(self, name, value)

    def as_dict(self) -> dict:
        """Plain JSON-able dict (provenance, checkpoint metadata); inverse of :meth:`from_dict`."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "ModelSpec":
        data = dict(data)
        unknown = sorted(set(data) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise ValueError(f"unknown ModelSpec field(s): {', '.join(unknown)}")
        data["preprocess"] = Preprocess(**data.get("preprocess", {}))
        return cls(**data)


_TV_URL = "https://download.pytorch.org/models/"
_MOCO_URL = "https://dl.fbaipublicfiles.com/moco/moco_checkpoints/"
_SIMCLR_NOTES = (
    "No PyTorch weights are published: download the TF checkpoint "
    "https://storage.cloud.google.com/simclr-gcs/checkpoints/ResNet50_1x.zip, convert it with "
    "tonylins/simclr-converter (python convert.py ResNet50_1x/model.ckpt-225206 resnet50-1x.pth; needs "
    "TensorFlow) and set 'weights: /path/to/resnet50-1x.pth' for this model in the config. "
    "Inputs are not normalised (the TF model was trained on [0,1] pixels)."
)

REGISTRY: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec("resnet18", "torchvision", "resnet18", _TV_URL + "resnet18-f37072fd.pth", "f37072fd",
                  notes="torchvision ResNet18_Weights.IMAGENET1K_V1"),
        ModelSpec("resnet50", "torchvision", "resnet50", _TV_URL + "resnet50-0676ba61.pth", "0676ba61",
                  notes="torchvision ResNet50_Weights.IMAGENET1K_V1 (not DEFAULT, which is V2)"),
        ModelSpec("bit_m_r50x1", "timm", "resnetv2_50x1_bit",
                  "https://storage.googleapis.com/bit_models/BiT-M-R50x1.npz", None,
                  Preprocess(256, 224, "bilinear", INCEPTION_MEAN, INCEPTION_STD), pretrained_tag="goog_in21k",
                  notes="Google BiT-M R50x1 ImageNet-21k .npz = timm resnetv2_50x1_bit.goog_in21k; no checksum published"),
        ModelSpec("clip_vit_b32", "open_clip", "ViT-B-32-quickgelu",
                  "https://huggingface.co/timm/vit_base_patch32_clip_224.openai/resolve/main/open_clip_model.safetensors",
                  None, Preprocess(224, 224, "bicubic", CLIP_MEAN, CLIP_STD), pretrained_tag="openai",
                  notes="OpenAI CLIP ViT-B/32 (QuickGELU); features = encode_image (after the projection)"),
        ModelSpec("moco_r50_v1", "moco", "resnet50", _MOCO_URL + "moco_v1_200ep/moco_v1_200ep_pretrain.pth.tar",
                  md5="b251726a", key_prefix=MOCO_PREFIX, notes="MoCo v1, 200 epochs (the authors' choice)"),
        ModelSpec("moco_r50_v2", "moco", "resnet50", _MOCO_URL + "moco_v2_800ep/moco_v2_800ep_pretrain.pth.tar",
                  md5="a04e12f8", key_prefix=MOCO_PREFIX, notes="MoCo v2, 800 epochs"),
        ModelSpec("simclr_r50_v1", "simclr", "resnet50", None, None,
                  Preprocess(256, 224, "bilinear", None, None), notes=_SIMCLR_NOTES),
    )
}


# --------------------------------------------------------------------------------------------
# Spec resolution from config
# --------------------------------------------------------------------------------------------


def _timm_pretrained_cfg(arch: str, tag: str | None):
    import timm

    name = f"{arch}.{tag}" if tag else arch
    if not timm.is_model(arch.split(".")[0]):
        raise ValueError(f"timm has no model architecture {arch!r}")
    cfg = timm.models.get_pretrained_cfg(name, allow_unregistered=False)
    return cfg


def _timm_preprocess(arch: str, tag: str | None) -> Preprocess:
    """Preprocessing from timm's pretrained cfg (no network): resize = crop / crop_pct."""
    from timm.data import resolve_data_config

    cfg = _timm_pretrained_cfg(arch, tag)
    data = resolve_data_config({}, pretrained_cfg=cfg.to_dict() if cfg is not None else {})
    crop = int(data["input_size"][-1])
    interp = data["interpolation"] if data["interpolation"] in INTERPOLATIONS else "bicubic"
    return Preprocess(int(math.floor(crop / data["crop_pct"])), crop, interp, data["mean"], data["std"])


def _timm_default_weights(arch: str, tag: str | None) -> str | None:
    cfg = _timm_pretrained_cfg(arch, tag)
    if cfg is None:
        return None
    if cfg.hf_hub_id:
        return f"https://huggingface.co/{cfg.hf_hub_id}/resolve/main/model.safetensors"
    return cfg.url or None


def _open_clip_preprocess(arch: str, tag: str | None) -> Preprocess:
    import open_clip

    model_cfg = open_clip.get_model_config(arch)
    if model_cfg is None:
        raise ValueError(f"open_clip has no model {arch!r}")
    size = model_cfg["vision_cfg"].get("image_size", 224)
    size = int(size if isinstance(size, int) else size[0])
    cfg = (open_clip.get_pretrained_cfg(arch, tag) if tag else {}) or {}
    interp = cfg.get("interpolation", "bicubic")
    return Preprocess(size, size, interp if interp in INTERPOLATIONS else "bicubic",
                      cfg.get("mean", CLIP_MEAN), cfg.get("std", CLIP_STD))


def _open_clip_default_weights(arch: str, tag: str | None) -> str | None:
    import open_clip

    if not tag:
        return None
    cfg = open_clip.get_pretrained_cfg(arch, tag) or {}
    if not cfg:
        raise ValueError(f"open_clip has no pretrained tag {tag!r} for model {arch!r}")
    hub = cfg.get("hf_hub", "").strip("/")
    if hub:
        return f"https://huggingface.co/{hub}/resolve/main/open_clip_model.safetensors"
    return cfg.get("url") or None


def _default_preprocess(source: str, arch: str, tag: str | None) -> Preprocess:
    if source == "timm" or (source == "checkpoint" and _is_timm_arch(arch)):
        return _timm_preprocess(arch, tag)
    if source == "open_clip":
        return _open_clip_preprocess(arch, tag)
    if source == "simclr":
        return Preprocess(256, 224, "bilinear", None, None)
    return PAPER_EXTRACTION


def _is_timm_arch(arch: str) -> bool:
    import timm

    return timm.is_model(arch.split(".")[0])


_SPEC_KEYS = {f.name for f in dataclasses.fields(ModelSpec)} - {"name"}


def resolve_spec(name: str, entry: dict | None = None, *, paper_compat: bool = False) -> ModelSpec:
    """The spec of model ``name``: a registry entry, overridden or newly defined by ``entry``.

    ``entry`` may set any ModelSpec field (``preprocess`` as a partial dict) and ``paper_compat``.
    A new model needs ``source`` and ``arch``; its preprocessing and weights URL default to the
    library's own (timm pretrained cfg, open_clip pretrained cfg), read without network. Changing
    the source/arch/tag of a registry model recomputes those defaults unless given.
    ``paper_compat`` reproduces the authors' extraction preprocessing: Resize(256), CenterCrop(224),
    bilinear, ImageNet mean/std for every non-CLIP model.
    """
    entry = dict(entry or {})
    unknown = sorted(set(entry) - _SPEC_KEYS - {"paper_compat"})
    if unknown:
        raise ValueError(f"model {name!r}: unknown key(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(sorted(_SPEC_KEYS | {'paper_compat'}))}")
    paper_compat = bool(entry.pop("paper_compat", paper_compat))
    pre_override = entry.pop("preprocess", None)
    if pre_override is not None and not isinstance(pre_override, (dict, Preprocess)):
        raise ValueError(f"model {name!r}: preprocess must be a mapping, got {pre_override!r}")
    base = REGISTRY.get(name)
    if base is None:
        missing = [k for k in ("source", "arch") if k not in entry]
        if missing:
            raise ValueError(
                f"model {name!r} is not in the registry ({', '.join(REGISTRY)}); a new model needs "
                f"{' and '.join(missing)}"
            )
    identity = ("source", "arch", "pretrained_tag")
    redefined = base is None or any(k in entry and entry[k] != getattr(base, k) for k in identity)
    fields = {k: getattr(base, k) for k in _SPEC_KEYS} if base is not None else {}
    if redefined and base is not None:
        fields.update(weights=None, sha256=None, md5=None, key_prefix=None, notes=None)
    fields.update(entry)
    fields["name"] = name
    source, arch, tag = fields["source"], fields["arch"], fields.get("pretrained_tag")
    if source not in SOURCES:
        raise ValueError(f"model {name!r}: source must be one of {SOURCES}, got {source!r}")
    if redefined:
        pre = _default_preprocess(source, arch, tag)
        if source == "timm" and not tag:
            cfg = _timm_pretrained_cfg(arch, None)
            fields["pretrained_tag"] = cfg.tag if cfg is not None and cfg.tag else None
        if "weights" not in entry:
            if source == "timm":
                fields["weights"] = _timm_default_weights(arch, tag)
            elif source == "open_clip":
                fields["weights"] = _open_clip_default_weights(arch, tag)
        if source == "moco" and "key_prefix" not in entry:
            fields["key_prefix"] = MOCO_PREFIX
    else:
        pre = base.preprocess
    if isinstance(pre_override, Preprocess):
        pre = pre_override
    elif pre_override:
        unknown_pre = sorted(set(pre_override) - {f.name for f in dataclasses.fields(Preprocess)})
        if unknown_pre:
            raise ValueError(f"model {name!r}: unknown preprocess key(s) {', '.join(map(repr, unknown_pre))}")
        pre = dataclasses.replace(pre, **pre_override)
    if paper_compat and source != "open_clip":
        pre = PAPER_EXTRACTION
    fields["preprocess"] = pre
    return ModelSpec(**fields)


# --------------------------------------------------------------------------------------------
# Weights: checksums, cache, fetching
# --------------------------------------------------------------------------------------------


def verify_checksum(path: str | Path, *, sha256: str | None = None, md5: str | None = None) -> str:
    """Check ``path`` against a full or prefix digest; return its full sha256. ValueError on mismatch."""
    actual = file_digest(path, "sha256")
    if sha256 and not actual.startswith(sha256.lower()):
        raise ValueError(f"{path}: sha256 {actual} does not match the expected {sha256}; refusing these weights")
    if md5:
        actual_md5 = file_digest(path, "md5")
        if not actual_md5.startswith(md5.lower()):
            raise ValueError(f"{path}: md5 {actual_md5} does not match the expected {md5}; refusing these weights")
    return actual


def _is_url(location: str) -> bool:
    return urlparse(location).scheme in ("http", "https", "ftp", "s3", "gs")


def weights_cache_path(spec: ModelSpec, cache_dir: str | Path) -> Path:
    """Where a remote weights file of ``spec`` is cached: ``cache_dir/<model name>/<file name>``."""
    if not spec.weights or not _is_url(spec.weights):
        raise ValueError(f"model {spec.name!r}: weights {spec.weights!r} are not a URL, nothing to cache")
    return Path(cache_dir) / spec.name / Path(urlparse(spec.weights).path).name


def resolve_weights(spec: ModelSpec, cache_dir: str | Path, mirror: str | Path | None = None) -> Path:
    """A verified local weights file for ``spec``: the local path itself, or the cached download.

    A remote file is fetched with ``biastransfer.download.fetch`` (resume, retry, atomic) into
    ``cache_dir/<name>/<file>``; ``mirror`` (a URL prefix or folder in ``wget --force-directories``
    layout, see ``biastransfer.download``) replaces the network. Any checksum mismatch, of a local
    file, a cached file or a download, raises ValueError; prefix digests are checked here.
    """
    if not spec.weights:
        raise ValueError(f"model {spec.name!r} has no weights configured. {spec.notes or ''}".strip())
    if not _is_url(spec.weights):
        local = Path(spec.weights.removeprefix("file://")).expanduser()
        if not local.is_file():
            raise FileNotFoundError(f"model {spec.name!r}: weights file {local} does not exist")
        verify_checksum(local, sha256=spec.sha256, md5=spec.md5)
        return local
    dest = weights_cache_path(spec, cache_dir)
    if not dest.is_file():
        from .download import fetch

        full = {k: v for k, v, n in (("sha256", spec.sha256, 64), ("md5", spec.md5, 32)) if v and len(v) == n}
        fetch(spec.weights, dest, mirror=mirror, **full)
    verify_checksum(dest, sha256=spec.sha256, md5=spec.md5)
    return dest


WEIGHTS_RECORD_FORMAT = "biastransfer-weights/1"


def write_weights_record(path: str | Path, spec: ModelSpec, weights_file: str | Path) -> dict:
    """Write a small JSON record pointing at a verified weights file (the fetch rule's output)."""
    weights_file = Path(weights_file).resolve()
    record = {"format": WEIGHTS_RECORD_FORMAT, "model": spec.name, "path": str(weights_file),
              "sha256": file_digest(weights_file), "url": spec.weights, "spec": spec.as_dict()}
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    return record


def read_weights_record(path: str | Path) -> dict | None:
    """The record written by :func:`write_weights_record`, or None if ``path`` is not one."""
    path = Path(path)
    if not path.is_file() or path.stat().st_size > 1 << 20:
        return None
    with open(path, "rb") as f:
        if f.read(1) != b"{":
            return None
    try:
        record = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return record if isinstance(record, dict) and record.get("format") == WEIGHTS_RECORD_FORMAT else None


def weights_file_and_sha256(path: str | Path) -> tuple[Path, str]:
    """(weights file, its sha256) for a weights file or a weights record; the record's digest is checked."""
    record = read_weights_record(path)
    if record is None:
        return Path(path), file_digest(path)
    target = Path(record["path"])
    if not target.is_file():
        raise FileNotFoundError(f"{path}: weights file {target} named by this record does not exist")
    return target, verify_checksum(target, sha256=record["sha256"])


# --------------------------------------------------------------------------------------------
# Reading weight files without unpickling code
# --------------------------------------------------------------------------------------------


def _is_safetensors(path: Path) -> bool:
    if path.suffix == ".safetensors":
        return True
    with open(path, "rb") as f:
        head = f.read(9)
    return len(head) == 9 and head[8:9] == b"{"


def read_weights_file(path: str | Path) -> tuple[dict[str, torch.Tensor], dict]:
    """(tensors, biastransfer metadata) of a safetensors or ``torch.save`` file; never runs pickled code.

    ``torch.save`` files may wrap the tensors as ``{'state_dict': ...}``, ``{'model': ...}`` or
    ``{'model_state_dict': ...}``.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"weights file {path} does not exist")
    if _is_safetensors(path):
        from safetensors import safe_open

        try:
            with safe_open(str(path), framework="pt") as f:
                meta = f.metadata() or {}
                tensors = {k: f.get_tensor(k) for k in f.keys()}
        except Exception as exc:  # safetensors raises its own error types for corrupt headers/data
            raise ValueError(f"{path}: not a readable safetensors file ({exc})") from exc
        return tensors, json.loads(meta[METADATA_KEY]) if METADATA_KEY in meta else {}
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # UnpicklingError, RuntimeError (bad zip), EOFError, ...
        raise ValueError(
            f"{path}: not a readable weights file (safetensors or torch.save state dict loadable with "
            f"weights_only=True): {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        ) from exc
    if isinstance(obj, dict):
        for key in ("state_dict", "model_state_dict", "model"):
            if isinstance(obj.get(key), dict):
                obj = obj[key]
                break
    if not isinstance(obj, dict) or not obj or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise ValueError(f"{path}: expected a state dict (a mapping of names to tensors)")
    return dict(obj), {}


def _select_prefix(state: dict[str, torch.Tensor], prefix: str, path) -> dict[str, torch.Tensor]:
    out = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
    if not out:
        sample = ", ".join(list(state)[:5])
        raise ValueError(f"{path}: no key starts with {prefix!r} (keys begin: {sample})")
    return out


def _load_state(module: nn.Module, state: dict[str, torch.Tensor], *, what: str, path,
                ignore_prefixes: tuple[str, ...] = ()) -> None:
    """Load ``state`` into ``module``; ValueError naming missing/unexpected/mis-shaped keys."""
    state = {k: v for k, v in state.items() if not k.startswith(ignore_prefixes)}
    own = module.state_dict()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    shapes = sorted(k for k in set(own) & set(state) if tuple(own[k].shape) != tuple(state[k].shape))
    if missing or unexpected or shapes:
        def show(keys):
            return ", ".join(keys[:8]) + (f" ... ({len(keys)} in all)" if len(keys) > 8 else "")

        parts = []
        if missing:
            parts.append(f"missing keys: {show(missing)}")
        if unexpected:
            parts.append(f"unexpected keys: {show(unexpected)}")
        if shapes:
            parts.append("shape mismatch: " + show([f"{k} {tuple(state[k].shape)} vs {tuple(own[k].shape)}" for k in shapes]))
        raise ValueError(f"{path}: weights do not fit {what}; " + "; ".join(parts))
    module.load_state_dict(state, strict=True)


# --------------------------------------------------------------------------------------------
# Feature extractors
# --------------------------------------------------------------------------------------------


class _Stop(Exception):
    """Raised by a forward hook to end the forward pass once the wanted layer has run."""


def _pool(x: torch.Tensor, pool: str, layer: str) -> torch.Tensor:
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
    forward pass is skipped) and reduced by ``pool``.
    """

    def __init__(self, trunk: nn.Module, *, layer: str = "penultimate", pool: str = "avg",
                 penultimate_dim: int, probe_size: int = 224):
        super().__init__()
        self.model = trunk
        self.layer = layer
        self.pool = pool
        self._captured: torch.Tensor | None = None
        if layer == "penultimate":
            self.embed_dim = int(penultimate_dim)
            return
        try:
            target = trunk.get_submodule(layer)
        except AttributeError as exc:
            names = [n for n, _ in trunk.named_modules() if n and n.count(".") < 2]
            raise ValueError(f"layer {layer!r} is not a module of {type(trunk).__name__}; some names: {', '.join(names[:25])}") from exc
        target.register_forward_hook(self._capture)
        was_training = trunk.training
        trunk.eval()
        with torch.no_grad():
            self.embed_dim = int(self(torch.zeros(1, 3, probe_size, probe_size)).shape[1])
        trunk.train(was_training)

    def _capture(self, module, args, output):
        self._captured = output[0] if isinstance(output, (tuple, list)) else output
        raise _Stop

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if self.layer == "penultimate":
            return self.model(images)
        try:
            self.model(images)
        except _Stop:
            pass
        out, self._captured = self._captured, None
        if out is None:
            raise RuntimeError(f"layer {self.layer!r} did not run during the forward pass")
        return _pool(out, self.pool, self.layer)


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


def _open_clip_model(arch: str, tag: str | None):
    import open_clip

    if open_clip.get_model_config(arch) is None:
        raise ValueError(f"open_clip has no model {arch!r}")
    quick = bool(tag and (open_clip.get_pretrained_cfg(arch, tag) or {}).get("quick_gelu"))
    return open_clip.create_model(arch, pretrained=None, load_weights=False, force_quick_gelu=quick)


def _bit_npz_layout(model: nn.Module, prefix: str = "resnet/") -> dict[str, str]:
    """Google BiT ``.npz`` key -> timm ResNetV2 parameter name (the head conv is the classifier)."""
    layout = {
        f"{prefix}root_block/standardized_conv2d/kernel": "stem.conv.weight",
        f"{prefix}group_norm/gamma": "norm.weight",
        f"{prefix}group_norm/beta": "norm.bias",
    }
    for i, (sname, stage) in enumerate(model.stages.named_children()):
        for j, (bname, block) in enumerate(stage.blocks.named_children()):
            unit = f"{prefix}block{i + 1}/unit{j + 1:02d}/"
            base = f"stages.{sname}.blocks.{bname}."
            for letter, idx in (("a", 1), ("b", 2), ("c", 3)):
                layout[f"{unit}{letter}/standardized_conv2d/kernel"] = f"{base}conv{idx}.weight"
                layout[f"{unit}{letter}/group_norm/gamma"] = f"{base}norm{idx}.weight"
                layout[f"{unit}{letter}/group_norm/beta"] = f"{base}norm{idx}.bias"
            if block.downsample is not None:
                layout[f"{unit}a/proj/standardized_conv2d/kernel"] = f"{base}downsample.conv.weight"
    return layout


BIT_HEAD_KEYS = ("resnet/head/conv2d/kernel", "resnet/head/conv2d/bias")


def _load_bit_npz(model: nn.Module, path: Path) -> None:
    """Check an npz against the BiT layout (naming missing/unexpected keys), then load it with timm."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            keys = set(npz.files)
    except (OSError, ValueError, EOFError) as exc:
        raise ValueError(f"{path}: not a readable .npz file ({exc})") from exc
    expected = set(_bit_npz_layout(model))
    missing = sorted(expected - keys)
    unexpected = sorted(keys - expected - set(BIT_HEAD_KEYS))
    if missing or unexpected:
        raise ValueError(
            f"{path}: weights do not fit timm {type(model).__name__} (BiT npz layout); "
            f"missing keys: {', '.join(missing[:8]) or 'none'}; unexpected keys: {', '.join(unexpected[:8]) or 'none'}"
        )
    try:
        with torch.no_grad():
            model.load_pretrained(str(path))
    except RuntimeError as exc:
        raise ValueError(f"{path}: BiT npz arrays do not fit {type(model).__name__}: {exc}") from exc


def _apply_weights(spec: ModelSpec, module: nn.Module, what: str, path: Path,
                   classifier: tuple[str, ...] = ()) -> None:
    state, meta = read_weights_file(path)
    if meta.get("format") == CHECKPOINT_FORMAT:
        state = _select_prefix(state, "backbone.model.", path)
    elif spec.key_prefix:
        state = _select_prefix(state, spec.key_prefix, path)
    elif all(k.startswith("module.") for k in state):
        state = {k[len("module."):]: v for k, v in state.items()}
    _load_state(module, state, what=what, path=path, ignore_prefixes=tuple(c + "." for c in classifier))


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
        source = "timm" if _is_timm_arch(spec.arch) else "torchvision"
    if source in ("torchvision", "moco", "simclr"):
        trunk, cls_name, dim = _torchvision_trunk(spec.arch)
        if path is not None:
            _apply_weights(spec, trunk, f"torchvision {spec.arch}", path, (cls_name,))
    elif source == "timm":
        trunk, cls_names, dim = _timm_trunk(spec.arch)
        if path is not None:
            if path.suffix == ".npz":
                if not hasattr(trunk, "load_pretrained"):
                    raise ValueError(f"{path}: .npz weights are only supported for timm models with their own npz loader (BiT)")
                _load_bit_npz(trunk, path)
            else:
                _apply_weights(spec, trunk, f"timm {spec.arch}", path, cls_names)
    elif source == "open_clip":
        clip = _open_clip_model(spec.arch, spec.pretrained_tag)
        trunk, dim = clip.visual, int(clip.visual.output_dim)
        if path is not None:
            state, meta = read_weights_file(path)
            if meta.get("format") == CHECKPOINT_FORMAT:
                state = _select_prefix(state, "backbone.model.", path)
            else:
                state = _select_prefix(state, "visual.", path)
            _load_state(trunk, state, what=f"open_clip {spec.arch} image encoder", path=path)
    else:
        raise ValueError(f"model {spec.name!r}: unknown source {spec.source!r}")
    extractor = FeatureExtractor(trunk, layer=spec.layer, pool=spec.pool, penultimate_dim=dim,
                                 probe_size=spec.preprocess.crop)
    return extractor.eval()


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


def create_classifier(spec: ModelSpec, num_classes: int, weights_path: str | Path | None) -> Classifier:
    """A classifier for finetuning: the pretrained backbone and a fresh ``Linear(embed_dim, num_classes)``."""
    return Classifier(create_backbone(spec, weights_path), num_classes).eval()


# --------------------------------------------------------------------------------------------
# Finetuned checkpoints
# --------------------------------------------------------------------------------------------


def save_checkpoint(model: Classifier, path: str | Path, *, spec: ModelSpec, class_names, extra: dict | None = None) -> None:
    """Write the classifier's state dict as safetensors with JSON metadata, atomically."""
    from safetensors.torch import save_file

    class_names = [str(c) for c in class_names]
    if len(class_names) != model.num_classes:
        raise ValueError(f"{path}: {len(class_names)} class names for a classifier with {model.num_classes} outputs")
    meta = {"format": CHECKPOINT_FORMAT, "spec": spec.as_dict(), "class_names": class_names,
            "num_classes": model.num_classes, "extra": extra or {}}
    tensors = {k: v.detach().to("cpu").contiguous().clone() for k, v in model.state_dict().items()}
    with atomic_path(path) as tmp:
        save_file(tensors, str(tmp), metadata={METADATA_KEY: json.dumps(meta, sort_keys=True)})


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


def load_classifier_from_checkpoint(path: str | Path, num_classes: int | None = None) -> tuple[Classifier, dict]:
    """(classifier in eval mode, metadata); ValueError if ``num_classes`` differs from the checkpoint's."""
    meta = read_checkpoint_metadata(path)
    n = int(meta["num_classes"])
    if num_classes is not None and num_classes != n:
        raise ValueError(f"{path}: checkpoint has {n} classes, {num_classes} were requested")
    spec = ModelSpec.from_dict(meta["spec"])
    model = Classifier(create_backbone(spec, None), n)
    state, _ = read_weights_file(path)
    _load_state(model, state, what=f"classifier {spec.name!r} ({n} classes)", path=path)
    return model.eval(), meta


def load_backbone_from_checkpoint(path: str | Path, spec: ModelSpec | None = None) -> FeatureExtractor:
    """The finetuned backbone of a classifier checkpoint (at ``spec``'s layer when given)."""
    meta = read_checkpoint_metadata(path)
    return create_backbone(spec or ModelSpec.from_dict(meta["spec"]), path)
