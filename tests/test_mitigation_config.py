"""Mitigation arms in the config (kind mitigation): named errors before any job, and the plan's view of them."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from biastransfer.workflow import config as cfg
from biastransfer.workflow.config_check import validation_problems
from biastransfer.workflow.plan import Plan

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "config" / "config.yaml", ROOT / "config" / "mitigation.yaml"]


@pytest.fixture(scope="module")
def merged():
    return cfg.merge_configs(FILES)


def problems_with(merged, edit):
    config = copy.deepcopy(merged)
    edit(config)
    return validation_problems(config)


def test_the_overlay_passes_every_check(merged):
    assert validation_problems(copy.deepcopy(merged)) == []


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda c: c["datasets"]["synthetic_target_dro"].update(method="fairness"),
            "datasets.synthetic_target_dro.method",
        ),
        (
            lambda c: c["datasets"]["synthetic_target_dro"].update({"from": "nowhere"}),
            "datasets.synthetic_target_dro.from: unknown dataset 'nowhere'",
        ),
        (
            lambda c: c["datasets"]["synthetic_target_dro"].update({"from": "synthetic_target_dfr"}),
            "datasets.synthetic_target_dro.from: 'synthetic_target_dfr' (kind mitigation): its splits have no "
            "per-image attribute file here, which method group_dro needs",
        ),
        (
            lambda c: c["datasets"]["synthetic_target_dfr"].update(selection="worst_group"),
            "datasets.synthetic_target_dfr.selection: method dfr trains no epochs to select from",
        ),
        (
            lambda c: c["finetune"].update(datasets=["synthetic_target_leace"]),
            "datasets.synthetic_target_leace: method leace starts from the plain finetuning of 'synthetic_target', "
            "which finetune.datasets and finetune.seeds must give seed(s) 0, 1, 2",
        ),
    ],
)
def test_bad_arms_are_named_errors(merged, edit, message):
    assert any(message in p for p in problems_with(merged, edit)), problems_with(merged, edit)


def test_worst_group_selection_on_a_dataset_without_validation_attributes_is_an_error(merged):
    def edit(config):
        config["datasets"]["coco"] = {"kind": "coco", "root": "data/coco"}
        config["datasets"]["coco_dro"] = {
            "kind": "mitigation",
            "from": "coco",
            "method": "group_dro",
            "selection": "worst_group",
        }

    assert any(
        "datasets.coco_dro.selection: worst_group needs the validation split's attribute file" in p
        for p in problems_with(merged, edit)
    )


def test_the_plan_reads_each_arm_from_its_source():
    config = cfg.read_configs(FILES)
    cfg.check_config(config)
    plan = Plan(config, ROOT)
    assert plan.source_of("synthetic_target_dfr") == "synthetic_target"
    assert plan.head_only_mitigations == ["synthetic_target_dfr", "synthetic_target_leace"]
    assert plan.method_of("synthetic_target_dro")["method"] == "group_dro"
    assert plan.method_of("synthetic_target") == {"method": "plain", "selection": "map"}
    assert plan.val_attribute_datasets == sorted(["synthetic_target", *plan.mitigations])
    assert "synthetic_target_dfr" in plan.predicted_datasets


def test_an_arm_switched_off_is_left_out(merged):
    config = copy.deepcopy(merged)
    config["datasets"]["synthetic_target_dfr"]["enabled"] = False
    cfg.fill_defaults(config)
    assert "synthetic_target_dfr" not in config["datasets"]
    assert "synthetic_target_dfr" not in config["finetune"]["datasets"]


def test_an_arm_on_a_table_without_an_attribute_column_is_a_named_error(merged, tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("path,labels\na.png,cat\nb.png,dog\n")

    def edit(config):
        config["datasets"]["own"] = {"kind": "table", "table": str(table)}
        config["datasets"]["synthetic_target_dro"]["from"] = "own"

    assert any(
        p.startswith(f"datasets.synthetic_target_dro.from: table {table} has no 'attribute' column")
        for p in problems_with(merged, edit)
    ), problems_with(merged, edit)
