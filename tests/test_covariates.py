"""Each model's covariates with their sources (biastransfer.covariates), and the factors questions' checks
before any job (biastransfer.factors)."""

import copy
import re
from pathlib import Path

import pytest

from biastransfer.covariates import COVARIATES, PRETRAINING_DATA, REGISTERED, model_covariates
from biastransfer.factors import config_covariates
from biastransfer.models.registry import REGISTRY
from biastransfer.workflow.config import check_config, read_configs

CONFIG = Path(__file__).parents[1] / "config"


def _count(module) -> int:
    return sum(p.numel() for p in module.parameters())


def test_registered_parameters_are_the_counts_of_their_architectures_built_without_weights():
    import open_clip
    import timm

    counted = {
        "resnet18": _count(timm.create_model("resnet18", num_classes=0)),
        "resnet50": _count(timm.create_model("resnet50", num_classes=0)),
        "bit_m_r50x1": _count(timm.create_model("resnetv2_50x1_bit", num_classes=0)),
        "clip_vit_b32": _count(open_clip.create_model("ViT-B-32-quickgelu").visual),
    }
    for name in ("moco_r50_v1", "moco_r50_v2", "simclr_r50_v1"):  # torchvision ResNet-50 trunks
        counted[name] = counted["resnet50"]
    assert {name: REGISTERED[name]["parameters"] for name in REGISTRY} == counted


def test_every_registered_model_has_every_covariate_with_a_source():
    assert set(REGISTERED) == set(REGISTRY)
    for name in REGISTRY:
        found = model_covariates(name, {}, lambda: pytest.fail("the registry gives the resolution"))
        assert set(found) == set(COVARIATES), name
        assert all(item["source"] for item in found.values())
        assert REGISTERED[name]["source"].startswith("https://arxiv.org/abs/")
        assert found["resolution"]["value"] == REGISTRY[name].preprocess.crop
    assert all(source.startswith("https://") for _, source in PRETRAINING_DATA.values())


@pytest.mark.parametrize("overlay", ["zoo.yaml", "claims.yaml"])
def test_every_zoo_and_claims_model_has_every_covariate(overlay):
    from biastransfer.models.resolve import input_resolutions

    config = read_configs([CONFIG / "paper.yaml", CONFIG / overlay])
    covariates = config_covariates(config, resolutions=input_resolutions(config))
    assert all(set(found) == set(COVARIATES) for found in covariates.values())
    assert "resolution" not in config_covariates(config)["clip_ViT_B_32_laion2b_s34b_b79k"]  # not resolved
    zoo_config = read_configs([CONFIG / "paper.yaml", CONFIG / "zoo.yaml"])
    zoo = config_covariates(zoo_config, resolutions=input_resolutions(zoo_config))
    assert zoo["vit_base_patch14_dinov2_lvd142m"]["resolution"]["value"] == 518
    assert zoo["clip_ViT_B_16_dfn2b"]["objective"] == {
        "value": "contrastive image-text",
        "source": "https://github.com/mlfoundations/open_clip/blob/main/docs/PRETRAINED.md",
    }
    assert zoo["resnet50_fb_swsl_ig1b_ft_in1k"]["pretraining_images"]["value"] == 940_000_000
    assert zoo["convnext_tiny_fb_in1k"]["objective"]["source"] == "https://huggingface.co/timm/convnext_tiny.fb_in1k"


def test_a_models_own_covariates_override_with_their_source():
    entry = {"source": "timm", "arch": "resnet18", "preprocess": {"crop": 192, "resize": 220}}
    entry["covariates"] = {"objective": "self-supervised", "pretraining_images": 5e6, "source": "https://example.org/m"}
    found = model_covariates("mine", entry, lambda: pytest.fail("the entry gives the resolution"))
    assert found["objective"] == {"value": "self-supervised", "source": "https://example.org/m"}
    assert found["pretraining_images"]["value"] == 5e6 and found["resolution"]["value"] == 192
    assert found["architecture"]["value"] == "CNN" and "parameters" not in found


def _paper(edit):
    config = copy.deepcopy(read_configs([CONFIG / "paper.yaml"]))
    edit(config)
    check_config(config)


def _mine(config):
    config["models"]["mine"] = {"source": "timm", "arch": "resnet18", "preprocess": {"crop": 224, "resize": 256}}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda c: c["factors"]["questions"][0].update(covariates=["depth"]),
            "factors.questions.retention_by_objective.covariates: unknown covariate 'depth'",
        ),
        (
            _mine,
            "factors.questions.retention_by_objective.covariates: objective is missing for model(s) mine",
        ),
        (
            lambda c: c["factors"]["questions"][0].update(models=["resnet18", "resnet50"]),
            "factors.questions.retention_by_objective.covariates: objective has one level ('supervised')",
        ),
        (
            lambda c: c["factors"]["questions"][0].update(models=["resnet18", "vit_huge"]),
            "factors.questions.retention_by_objective.models: unknown model 'vit_huge'",
        ),
        (
            lambda c: c["factors"]["questions"][1].update(datasets=["coco"]),
            "factors.questions.new_associations_by_dataset.covariates: dataset needs two finetuning datasets",
        ),
        (
            lambda c: c["factors"]["questions"][0].update(test="sports_vs_car"),
            "factors.questions.retention_by_objective.test: 'sports_vs_car' is not an iEAT test of analysis_sets.coco",
        ),
        (
            lambda c: c["factors"]["questions"][0].update(measure="d", stage="pretrained", covariates=["cka"]),
            "factors.questions.retention_by_objective.covariates: cka (the linear CKA between the pretrained and "
            "the finetuned embeddings) needs finetuned networks, and the pretrained d has none",
        ),
        (
            lambda c: c["factors"]["questions"][0].update(references={"architecture": "CNN"}),
            "factors.questions.retention_by_objective.references: 'architecture' is not one of the question's",
        ),
    ],
)
def test_a_bad_question_is_named_before_any_job(edit, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        _paper(edit)


def test_a_question_may_name_cka_beside_the_models_covariates():
    _paper(lambda c: c["factors"]["questions"][0].update(covariates=["cka", "objective"]))


def test_a_zoo_question_needs_pretrained_d():
    config = read_configs([CONFIG / "paper.yaml", CONFIG / "zoo.yaml"])
    config["factors"]["questions"][0].update(measure="bts_intra")
    with pytest.raises(ValueError, match=r"pretrained_d_by_model.measure: bts_intra needs finetuned networks"):
        check_config(config)


def test_a_question_on_the_resolution_checks_it_with_the_libraries():
    from biastransfer.factors import resolution_problems
    from biastransfer.workflow.config_check import validation_problems

    config = read_configs([CONFIG / "paper.yaml", CONFIG / "claims.yaml"])
    config["factors"]["questions"][0]["covariates"] = ["resolution"]
    assert resolution_problems(config, {}) == [
        "factors.questions.retention_by_objective.covariates: resolution is missing for model(s) "
        + ", ".join(m for m in config["models"] if m not in REGISTRY)
        + " (set models.<name>.covariates.resolution)"
    ]
    assert resolution_problems(config, {m: 224 for m in config["models"]}) == [
        "factors.questions.retention_by_objective.covariates: resolution has one value (224) among the models of "
        "the question"
    ]
    raw = copy.deepcopy(read_configs([CONFIG / "paper.yaml", CONFIG / "claims.yaml"]))
    raw["factors"]["questions"][0]["covariates"] = ["resolution"]
    assert "resolution has one value (224)" in "\n".join(validation_problems(raw))


@pytest.mark.parametrize(
    ("overlays", "answered"),
    [
        ([], []),  # six models: too few for every question of the paper
        (["claims.yaml"], ["retention_by_objective", "new_associations_by_dataset", "retention_by_pretraining_images"]),
        (["zoo.yaml"], ["pretrained_d_by_model"]),
    ],
)
def test_which_configured_questions_have_enough_models(overlays, answered):
    import pandas as pd

    from biastransfer.factors import question_datasets, question_models
    from biastransfer.stats.factor_measures import regression_covariates
    from biastransfer.stats.factors import design, models_rule

    config = read_configs([CONFIG / "paper.yaml", *(CONFIG / o for o in overlays)])
    covariates = config_covariates(config)
    enough = []
    for question in config["factors"]["questions"]:
        models, datasets = question_models(question, config), question_datasets(question, config) or [""]
        given = {m: {k: v["value"] for k, v in covariates[m].items()} for m in models}
        terms = [t for t in question["covariates"] if t != "dataset"]
        values, names = regression_covariates(given, terms)
        names += ["dataset"] if "dataset" in question["covariates"] else []
        rows = pd.DataFrame([{"model": m, "dataset": d, "value": 0.0} for m in models for d in datasets])
        frame, columns = design(rows, values, names)
        if not models_rule(frame, columns)[1]:
            enough.append(question["name"])
    assert enough == answered
