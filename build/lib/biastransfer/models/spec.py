"""Model specs: what to build, where its weights come from, how inputs are preprocessed, which layer embeds."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

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

        steps = self._geometry(train) + [T.ToTensor()]
        if self.mean is not None:
            steps.append(T.Normalize(self.mean, self.std))
        return T.Compose(steps)

    def uint8_transform(self, train: bool = False):
        """The same resize, crop and flip, ending in a uint8 tensor (3, crop, crop): :meth:`normalize` finishes
        a batch of them on its device (a quarter of the bytes through the loader, no per-image float work)."""
        from torchvision import transforms as T

        return T.Compose(self._geometry(train) + [T.PILToTensor()])

    def normalize(self, x):
        """uint8 images (..., 3, H, W) -> the floats :meth:`transform` gives, bit for bit, on ``x``'s device."""
        import torch

        x = x.to(torch.float32).div_(255)
        if self.mean is None:
            return x
        mean = torch.tensor(self.mean, dtype=x.dtype, device=x.device).view(3, 1, 1)
        std = torch.tensor(self.std, dtype=x.dtype, device=x.device).view(3, 1, 1)
        return x.sub_(mean).div_(std)

    def _geometry(self, train: bool) -> list:
        from torchvision import transforms as T

        interp = {"bilinear": T.InterpolationMode.BILINEAR, "bicubic": T.InterpolationMode.BICUBIC}
        steps = [T.Resize(self.resize, interpolation=interp[self.interpolation]), T.CenterCrop(self.crop)]
        if train and self.train_hflip:
            steps.append(T.RandomHorizontalFlip())
        return steps

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
    def from_dict(cls, data: dict) -> ModelSpec:
        data = dict(data)
        unknown = sorted(set(data) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise ValueError(f"unknown ModelSpec field(s): {', '.join(unknown)}")
        data["preprocess"] = Preprocess(**data.get("preprocess", {}))
        return cls(**data)
