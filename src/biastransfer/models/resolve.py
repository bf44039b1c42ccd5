"""Model specs from config entries: registry overrides, and timm / open_clip defaults read without network."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

from biastransfer.check_cache import passed_check, remembered
from biastransfer.models.registry import REGISTRY
from biastransfer.models.spec import (
    CLIP_MEAN,
    CLIP_STD,
    INTERPOLATIONS,
    MOCO_PREFIX,
    PAPER_EXTRACTION,
    SOURCES,
    ModelSpec,
    Preprocess,
)


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
    return Preprocess(
        size,
        size,
        interp if interp in INTERPOLATIONS else "bicubic",
        cfg.get("mean", CLIP_MEAN),
        cfg.get("std", CLIP_STD),
    )


def _open_clip_default_weights(arch: str, tag: str | None) -> str | None:
    import open_clip

    if not tag:
        return None
    cfg = open_clip.get_pretrained_cfg(arch, tag) or {}
    if not cfg:
        raise ValueError(f"open_clip has no pretrained tag {tag!r} for model {arch!r}")
    hub = cfg.get("hf_hub", "").strip("/")
    if hub:  # "org/repo" (open_clip's safetensors file) or "org/repo/file" (that file)
        org, repo, *file = hub.split("/")
        return f"https://huggingface.co/{org}/{repo}/resolve/main/{'/'.join(file) or 'open_clip_model.safetensors'}"
    return cfg.get("url") or None


def _default_preprocess(source: str, arch: str, tag: str | None) -> Preprocess:
    if source == "timm" or (source == "checkpoint" and is_timm_arch(arch)):
        return _timm_preprocess(arch, tag)
    if source == "open_clip":
        return _open_clip_preprocess(arch, tag)
    if source == "simclr":
        return Preprocess(256, 224, "bilinear", None, None)
    return PAPER_EXTRACTION


def is_timm_arch(arch: str) -> bool:
    import timm

    return timm.is_model(arch.split(".")[0])


def architecture_problem(spec: ModelSpec) -> str | None:
    """Why no network of ``spec``'s architecture can be built (its source has no such architecture), or
    None; looked up in the libraries' lists of models, without building one."""
    if spec.source == "open_clip":
        import open_clip

        return None if open_clip.get_model_config(spec.arch) is not None else f"open_clip has no model {spec.arch!r}"
    if spec.source == "timm" or (spec.source == "checkpoint" and is_timm_arch(spec.arch)):
        return None if is_timm_arch(spec.arch) else f"timm has no model architecture {spec.arch!r}"
    import torchvision

    if spec.arch in torchvision.models.list_models():
        return None
    if spec.source == "checkpoint":
        return f"neither timm nor torchvision has a model architecture {spec.arch!r}"
    return f"torchvision has no model architecture {spec.arch!r}"


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
        raise ValueError(
            f"model {name!r}: unknown key(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(sorted(_SPEC_KEYS | {'paper_compat'}))}"
        )
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


def model_spec(name: str, entry: Mapping) -> ModelSpec:
    """The :class:`ModelSpec` of a configured model.

    A ``source: workflow`` model (the demo's) is a timm architecture trained from scratch here: its
    weights are the workflow's own pretraining checkpoint, never a download. The layer profile's
    keys (``layers``, ``layer_pooling``) and the zoo's ``about`` are not part of the spec.
    """
    entry = {
        k: v
        for k, v in entry.items()
        if k not in ("pretrain", "device", "layers", "layer_pooling", "about", "covariates")
    }
    if entry.get("source") == "workflow":
        entry.update(source="timm", weights=None, sha256=None)
    return resolve_spec(name, entry)


def preprocess_resizes(config: Mapping) -> dict[str, list]:
    """``{model: [resize, interpolation]}`` of each configured model's preprocessing (:func:`model_spec`):
    where its finetuning's image cache starts, read at DAG time; remembered for these entries
    (``biastransfer.check_cache.remembered``), so that timm and open_clip are imported once, not by every
    Snakemake call."""

    def resolve() -> dict[str, list]:
        specs = {name: model_spec(name, entry).preprocess for name, entry in config["models"].items()}
        return {name: [pre.resize, pre.interpolation] for name, pre in specs.items()}

    return remembered("preprocess_resizes", config["models"], resolve, code="models")


def input_resolutions(config: Mapping) -> dict[str, int | None]:
    """``{model: crop}``: each configured model's input resolution (its preprocessing's crop; None for one
    that does not resolve), a covariate of the factors questions; remembered as :func:`preprocess_resizes`."""

    def crop(name: str, entry: Mapping) -> int | None:
        try:
            return model_spec(name, entry).preprocess.crop
        except (ValueError, RuntimeError):  # named by model_spec_problems, or recorded by the zoo's check
            return None

    return remembered(
        "input_resolutions",
        config["models"],
        lambda: {n: crop(n, e) for n, e in config["models"].items()},
        code="models",
    )


def model_spec_problems(config: Mapping) -> list[str]:
    """One line per model of a filled config that names no network the library can build: neither
    registered nor defined, or a source whose library lacks its architecture (:func:`architecture_problem`)
    or its pretrained tag; resolved without weights or network, before any job (rules/common.smk, and the
    preflight and estimate), and remembered once passed for these entries (``biastransfer.check_cache``:
    timm, open_clip and torchvision are imported only then). Not in a zoo, which records a model that does
    not resolve and leaves it out (docs/zoo.md). Kept out of ``biastransfer.workflow.config``, which the scripts of
    environments without these libraries import."""
    if config["zoo"]:
        return []

    def resolve() -> list[str]:
        problems = []
        for name, entry in config["models"].items():
            if entry.get("source") == "workflow" and "arch" not in entry:
                continue  # config.model_problems names it
            try:
                problem = architecture_problem(model_spec(name, entry))
            except (ValueError, RuntimeError) as exc:  # timm: RuntimeError for a pretrained tag it does not have
                problem = str(exc)
            if problem:
                problems.append(f"models.{name}: {problem}")
        return problems

    return passed_check("model_specs", config["models"], resolve, code="models")
