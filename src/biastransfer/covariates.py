"""Each model's covariates for the meta-regression across models (config ``factors``, docs/models.md), with
their sources. Read at DAG-build time: no torch here.

A model's covariates come, in this order of precedence, from its config entry's ``covariates`` (your own
model's, or a correction), the registry (:data:`REGISTERED`), and its ``about``
(config/zoo.yaml, config/claims.yaml): the objective from the family, the pretraining images from the data
(:data:`PRETRAINING_DATA`), the parameters from ``params_m``, the architecture from the library's
architecture name. The input resolution is the preprocessing's crop: the entry's, the registry's, or the
library's pretrained config (resolved once by ``biastransfer.models.resolve.input_resolutions``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

#: The covariates a factors question may name, and whether each is categorical.
COVARIATES = {
    "objective": True,
    "pretraining_images": False,
    "parameters": False,
    "architecture": True,
    "resolution": False,
}
#: Counts that enter the regression as log10 (one coefficient per tenfold).
LOG10 = ("pretraining_images", "parameters")
OBJECTIVES = ("supervised", "contrastive image-text", "self-supervised")
#: The finetuning dataset: a within-model covariate (biastransfer.stats.factors.DATASET).
DATASET = "dataset"
#: Covariates the run measures rather than the model's entry gives, each where it is read from: known to a
#: question, checked against the models only once the run has measured them (``biastransfer.stats.factor_measures``).
CKA = "cka"
MEASURED = {CKA: "results/summary/cka.csv: the linear CKA between the pretrained and the finetuned embeddings"}

#: Pretraining data: its training images as the source states them, and the source.
PRETRAINING_DATA = {
    "ImageNet-1k": (1_281_167, "https://arxiv.org/abs/1409.0575"),
    "ImageNet-21k": (14_197_122, "https://arxiv.org/abs/2104.10972"),
    "ImageNet-22k": (14_197_122, "https://arxiv.org/abs/2104.10972"),
    "Instagram-1B": (940_000_000, "https://arxiv.org/abs/1905.00546"),
    "YFCC100M": (100_000_000, "https://arxiv.org/abs/1503.01817"),
    "LVD-142M": (142_109_386, "https://arxiv.org/abs/2304.07193"),
    "OpenAI WIT-400M": (400_000_000, "https://arxiv.org/abs/2103.00020"),
    "YFCC-15M": (15_000_000, "https://arxiv.org/abs/2103.00020"),
    "CC-12M": (12_400_000, "https://arxiv.org/abs/2102.08981"),
    "LAION-400M": (400_000_000, "https://arxiv.org/abs/2111.02114"),
    "LAION-2B": (2_320_000_000, "https://arxiv.org/abs/2210.08402"),
    "DataComp-1B": (1_400_000_000, "https://arxiv.org/abs/2304.14108"),
    "MetaCLIP-400M": (400_000_000, "https://arxiv.org/abs/2309.16671"),
    "CommonPool-M": (128_000_000, "https://arxiv.org/abs/2304.14108"),
    "CommonPool-L": (1_280_000_000, "https://arxiv.org/abs/2304.14108"),
    "DFN-2B": (2_000_000_000, "https://arxiv.org/abs/2309.17425"),
}
_IN1K = "ImageNet-1k"
#: The registered models' covariates (``biastransfer.models.registry.REGISTRY``; kept here, where no torch is
#: imported): objective, pretraining data, architecture and the paper that states them; parameters of the
#: image encoder without its classifier, counted on the timm / open_clip architecture built without weights
#: (tests/test_covariates.py counts them again); resolution, the registry preprocessing's crop.
# fmt: off
REGISTERED: dict[str, dict] = {
    "resnet18": {"objective": "supervised", "data": _IN1K, "architecture": "CNN", "parameters": 11_176_512,
                 "resolution": 224, "source": "https://arxiv.org/abs/1512.03385"},
    "resnet50": {"objective": "supervised", "data": _IN1K, "architecture": "CNN", "parameters": 23_508_032,
                 "resolution": 224, "source": "https://arxiv.org/abs/1512.03385"},
    "bit_m_r50x1": {"objective": "supervised", "data": "ImageNet-21k", "architecture": "CNN", "parameters": 23_500_352,
                    "resolution": 224, "source": "https://arxiv.org/abs/1912.11370"},
    "clip_vit_b32": {"objective": "contrastive image-text", "data": "OpenAI WIT-400M", "architecture": "transformer",
                     "parameters": 87_849_216, "resolution": 224, "source": "https://arxiv.org/abs/2103.00020"},
    "moco_r50_v1": {"objective": "self-supervised", "data": _IN1K, "architecture": "CNN", "parameters": 23_508_032,
                    "resolution": 224, "source": "https://arxiv.org/abs/1911.05722"},
    "moco_r50_v2": {"objective": "self-supervised", "data": _IN1K, "architecture": "CNN", "parameters": 23_508_032,
                    "resolution": 224, "source": "https://arxiv.org/abs/2003.04297"},
    "simclr_r50_v1": {"objective": "self-supervised", "data": _IN1K, "architecture": "CNN", "parameters": 23_508_032,
                      "resolution": 224, "source": "https://arxiv.org/abs/2002.05709"},
}
# fmt: on
#: ``about.family`` -> objective.
FAMILY_OBJECTIVES = {
    "supervised CNN": "supervised",
    "supervised ViT": "supervised",
    "self-supervised": "self-supervised",
    "CLIP-family": "contrastive image-text",
}
_TRANSFORMER = re.compile(r"vit|deit|swin|beit|eva", re.IGNORECASE)
OPEN_CLIP_TABLE = "https://github.com/mlfoundations/open_clip/blob/main/docs/PRETRAINED.md"
COUNTED = "counted on the architecture built without weights"
CONFIG = "the model's config entry (covariates)"


def pretraining_data(text: str) -> str | None:
    """The :data:`PRETRAINING_DATA` name that ``about.data`` starts with (its first pretraining stage), if any."""
    names = [n for n in PRETRAINING_DATA if text.startswith(n)]
    return max(names, key=len) if names else None


def _model_card(entry: Mapping) -> str | None:
    """The page that states a library model's training (the timm model card, the open_clip table)."""
    if entry.get("source") == "timm" and entry.get("pretrained_tag"):
        return f"https://huggingface.co/timm/{entry['arch']}.{entry['pretrained_tag']}"
    if entry.get("source") == "open_clip":
        return PRETRAINING_DATA["OpenAI WIT-400M"][1] if entry.get("pretrained_tag") == "openai" else OPEN_CLIP_TABLE
    return None


def model_covariates(name: str, entry: Mapping, resolution: Callable[[], int | None]) -> dict[str, dict]:
    """``{covariate: {value, source}}`` of one configured model (module docstring); a covariate that no source
    gives is absent. ``resolution``: the model's input resolution from its library (called only when neither
    the entry nor the registry gives it)."""
    found: dict[str, dict] = {}
    about, registered = entry.get("about") or {}, REGISTERED.get(name, {})
    card = _model_card(entry) or registered.get("source")
    if about.get("family") in FAMILY_OBJECTIVES and card:
        found["objective"] = {"value": FAMILY_OBJECTIVES[about["family"]], "source": card}
    elif "objective" in registered:
        found["objective"] = {"value": registered["objective"], "source": registered["source"]}
    data = pretraining_data(about["data"]) if "data" in about else registered.get("data")
    if data:
        found["pretraining_images"] = {"value": PRETRAINING_DATA[data][0], "source": PRETRAINING_DATA[data][1]}
    if "params_m" in about:
        found["parameters"] = {"value": round(about["params_m"] * 1e6), "source": f"about.params_m ({COUNTED})"}
    elif "parameters" in registered:
        found["parameters"] = {"value": registered["parameters"], "source": COUNTED}
    if entry.get("arch"):
        kind = "transformer" if _TRANSFORMER.search(entry["arch"]) else "CNN"
        found["architecture"] = {"value": kind, "source": f"the architecture name {entry['arch']!r}"}
    elif "architecture" in registered:
        found["architecture"] = {"value": registered["architecture"], "source": registered["source"]}
    crop = (entry.get("preprocess") or {}).get("crop")
    if crop is None and name in REGISTERED and not entry.get("arch"):
        crop = REGISTERED[name]["resolution"]
        where = "the registry's preprocessing"
    else:
        where = "the model's preprocess.crop" if crop is not None else "the library's pretrained config"
    crop = crop if crop is not None else resolution()
    if crop is not None:
        found["resolution"] = {"value": int(crop), "source": where}
    given = entry.get("covariates") or {}
    for key, value in given.items():
        if key != "source":
            found[key] = {"value": value, "source": given.get("source", CONFIG)}
    return found


def covariate_problems(where: str, terms, covariates: Mapping[str, Mapping], models) -> list[str]:
    """A factors question's covariates (``terms``) that are unknown, missing for one of ``models``, or of one
    value (a categorical one: one level) among them; each problem names the key, the covariate and the model."""
    problems = []
    for term in terms:
        if term == DATASET or term in MEASURED:
            continue
        if term not in COVARIATES:
            known = ", ".join([*COVARIATES, DATASET, *MEASURED])
            problems.append(f"{where}.covariates: unknown covariate {term!r} (known: {known})")
            continue
        lacking = [m for m in models if term not in covariates[m]]
        if lacking:
            problems.append(missing_covariate(where, term, lacking))
        elif len({str(covariates[m][term]["value"]) for m in models}) < 2:
            value, what = (
                covariates[models[0]][term]["value"] if models else None,
                "level" if COVARIATES[term] else "value",
            )
            problems.append(f"{where}.covariates: {term} has one {what} ({value!r}) among the models of the question")
    return problems


def missing_covariate(where: str, term: str, lacking) -> str:
    """The problem of a covariate that ``lacking`` models do not have, with where it would come from."""
    hint = f"no value in {MEASURED[term]}" if term in MEASURED else f"set models.<name>.covariates.{term}"
    return f"{where}.covariates: {term} is missing for model(s) {', '.join(lacking)} ({hint})"
