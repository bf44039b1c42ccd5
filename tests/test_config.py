"""Config validation: the JSON schema names the bad key; check_config names the undefined reference."""

import copy
from pathlib import Path

import pytest
import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from biastransfer import config as cfg

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = str(ROOT / "workflow" / "schemas" / "config.schema.yaml")


def load(name):
    return yaml.safe_load((ROOT / name).read_text())


@pytest.fixture
def demo():
    return load("config/config.yaml")


@pytest.mark.parametrize("name", ["config/config.yaml", "config/paper.yaml", "tests/configs/tiny.yaml"])
def test_shipped_configs_are_valid(name):
    conf = load(name)
    validate(conf, SCHEMA)
    cfg.check_config(conf)


def test_unknown_key_is_named(demo):
    demo["analysis"]["ieat"]["permutation"] = 10
    with pytest.raises(WorkflowError, match="'permutation' was unexpected"):
        validate(demo, SCHEMA)


def test_wrong_type_is_named(demo):
    demo["datasets"]["synthetic_target"]["n_train"] = "many"
    with pytest.raises(WorkflowError, match="'many' is not of type 'integer'"):
        validate(demo, SCHEMA)


def test_too_few_images_per_class_is_refused(demo):
    demo["analysis_sets"]["synthetic"]["n_per_class"] = 1
    with pytest.raises(WorkflowError, match="1 is less than the minimum of 2"):
        validate(demo, SCHEMA)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda c: c["finetune"]["datasets"].append("nope"), "finetune.datasets: unknown dataset 'nope'"),
        (lambda c: c["analysis_sets"]["synthetic"]["ieat"][0].update(A="boat"),
         "analysis_sets.synthetic.ieat.surfboard_vs_car.A: class 'boat'"),
        (lambda c: c["analysis_sets"]["synthetic"]["bts"]["intra"].append("boat"), "bts.intra: class 'boat'"),
        (lambda c: c["models"]["democnn"]["pretrain"].update(dataset="nope"), "models.democnn.pretrain.dataset"),
        (lambda c: c["finetune"]["overrides"].update(nope={}), "finetune.overrides: unknown model 'nope'"),
        (lambda c: c["finetune"].update(seeds={"nope": [0]}), "no seeds for finetune dataset 'synthetic_target'"),
        (lambda c: c["finetune"].update(seeds={"synthetic_target": [0], "nope": [1]}),
         "finetune.seeds: 'nope' is not in finetune.datasets"),
    ],
)
def test_undefined_references_are_named(demo, edit, message):
    conf = copy.deepcopy(demo)
    edit(conf)
    with pytest.raises(ValueError, match=message):
        cfg.check_config(conf)


def test_stages_and_parameters(demo):
    assert cfg.stages(demo) == ["pretrained", *(f"ft-synthetic_target-seed{s}" for s in (0, 1, 2))]
    assert cfg.parse_stage("ft-synthetic_target-seed2") == ("synthetic_target", 2)
    assert cfg.parse_stage("pretrained") == (None, None)
    with pytest.raises(ValueError, match="'finetuned'"):
        cfg.parse_stage("finetuned")
    demo["finetune"]["overrides"] = {"democnn": {"synthetic_target": {"lr": 0.5}}}
    assert cfg.finetune_params(demo, "democnn", "synthetic_target")["lr"] == 0.5
    demo["models"]["other"] = {"source": "timm", "arch": "resnet18"}
    assert cfg.finetune_params(demo, "other", "synthetic_target")["lr"] == 0.01
    assert cfg.pretrain_params(demo, "democnn")["epochs"] == 4
    assert cfg.training_datasets(demo) == ["synthetic_biased", "synthetic_target"]


def test_seeds_per_dataset(demo):
    demo["datasets"]["other"] = dict(demo["datasets"]["synthetic_target"])
    demo["finetune"].update(datasets=["synthetic_target", "other"], seeds={"synthetic_target": [0, 2], "other": [5]})
    validate(demo, SCHEMA)
    cfg.check_config(demo)
    assert cfg.finetune_seeds(demo, "synthetic_target") == [0, 2] and cfg.finetune_seeds(demo, "other") == [5]
    assert cfg.finetuned_stages(demo) == ["ft-synthetic_target-seed0", "ft-synthetic_target-seed2", "ft-other-seed5"]
    demo["finetune"]["seeds"] = {"synthetic_target": [0, 0], "other": [5]}
    with pytest.raises(WorkflowError, match="finetune"):
        validate(demo, SCHEMA)


def test_workflow_model_spec_never_downloads(demo):
    from biastransfer.models.resolve import model_spec

    spec = model_spec("democnn", demo["models"]["democnn"])
    assert spec.source == "timm" and spec.arch == "resnet18" and spec.weights is None
    assert spec.preprocess.crop == 64


def test_canonical_sorts_mappings_and_keeps_lists():
    value = {"b": [{"y": 1, "x": 2}, 3], "a": {"d": 0, "c": 1}}
    out = cfg.canonical(value)
    assert list(out) == ["a", "b"] and list(out["a"]) == ["c", "d"] and list(out["b"][0]) == ["x", "y"]
    assert out == value
