"""The plan (biastransfer.workflow): each rule's settings built from the filled config, in one shape,
without running anything."""

import importlib.util
import inspect
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from biastransfer.embeddings import write_embeddings
from biastransfer.report.artefacts import FOREST_ROWS
from biastransfer.workflow import config as cfg
from biastransfer.workflow.plan import Plan, switch
from biastransfer.workflow.rules.analysis import ChangeSettings, IEATSettings
from biastransfer.workflow.rules.report import MARKED_TABLES, TABLE_KINDS, TableSettings
from biastransfer.workflow.rules.zoo import ZooForestSettings
from biastransfer.workflow.settings import RULE_SETTINGS

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = {
    "demo": ["config/config.yaml"],
    "controls": ["config/config.yaml", "config/controls.yaml"],
    "mitigation": ["config/config.yaml", "config/mitigation.yaml"],
    "paper": ["config/paper.yaml"],
    "claims": ["config/paper.yaml", "config/claims.yaml"],
}


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def plan(request):
    config = cfg.read_configs([ROOT / p for p in CONFIGS[request.param]])
    cfg.check_config(config)
    return Plan(config, ROOT)


#: The values that each wildcard (or, for the tables' rules, the kind) of a settings class's build takes.
WILDCARD_VALUES = {
    "analysis_set": lambda plan: plan.analysis_sets,
    "model": lambda plan: plan.models,
    "dataset": lambda plan: plan.finetune_datasets,
    "arm": lambda plan: list(dict.fromkeys(arm for arm, _ in plan.comparisons)),
    "against": lambda plan: list(dict.fromkeys(against for _, against in plan.comparisons)),
    "synthetic": lambda plan: plan.datasets_of_kind("synthetic"),
    "summary": lambda plan: ["similarity", "bts", "ieat", "ieat_scratch"],  # rule summarise's
    "kind": lambda plan: TABLE_KINDS,
}


def job_wildcards(plan: Plan, kind) -> list[dict[str, str]]:
    """The wildcards of every job whose settings ``kind`` builds (one empty mapping for a rule of one job)."""
    names = [n for n in inspect.signature(kind.build).parameters if n != "plan"]
    return [dict(zip(names, v)) for v in itertools.product(*(WILDCARD_VALUES[n](plan) for n in names))]


def test_every_rules_settings_build_and_survive_their_round_trip(plan):
    for rule, kind in RULE_SETTINGS.items():
        for wildcards in job_wildcards(plan, kind):
            settings = plan.settings(rule, wildcards)
            assert json.loads(json.dumps(settings)) == settings, rule
            assert kind.from_mapping(settings).as_dict() == settings, rule


def test_settings_carry_the_configs_values_not_defaults_of_their_own(plan):
    analysis_set = plan.analysis_sets[0]
    change = plan.rule_settings("change", analysis_set=analysis_set)
    ieat = plan.config["analysis"]["ieat"]
    assert change.tests == plan.config["analysis_sets"][analysis_set]["ieat"]
    assert (change.ieat.permutations, change.ieat.alternative) == (ieat["permutations"], ieat["alternative"])
    assert change.bts.bootstrap == plan.config["analysis"]["bts"]["bootstrap"]


OPTIONS = {
    "permutations": 1000,
    "alternative": "greater",
    "method": "auto",
    "seed": 0,
    "alpha": 0.05,
    "bootstrap": 0,
    "ci_level": 0.95,
}


def test_each_models_image_cache_setting_is_its_preprocessing_resolved_once(tmp_path, monkeypatch):
    from biastransfer.data.cache import CacheSetting
    from biastransfer.models import resolve

    monkeypatch.setenv("BIASTRANSFER_CACHE_DIR", str(tmp_path))
    config = cfg.read_configs([ROOT / "config" / "paper.yaml"])
    config["finetune"]["cache_quality"] = 90
    expected = {}
    for model in config["models"]:
        pre = resolve.model_spec(model, config["models"][model]).preprocess
        expected[model] = CacheSetting(pre.resize, pre.interpolation, 90).name
    assert Plan(config, ROOT).image_cache_settings == expected
    assert len(set(expected.values())) > 1  # the paper's models start from different sizes
    monkeypatch.setattr(resolve, "model_spec", lambda *a: pytest.fail("resolved again"))
    assert Plan(config, ROOT).image_cache_settings == expected  # a later call reads them back


def test_a_rules_settings_are_built_once_per_value_of_the_wildcards_they_take(monkeypatch):
    plan = Plan(cfg.read_configs([ROOT / "config" / "config.yaml"]), ROOT)
    analysis_set, model = plan.analysis_sets[0], plan.models[0]
    expected = plan.rule_settings("ieat", analysis_set=analysis_set).as_dict()
    built = []
    build = plan.rule_settings
    monkeypatch.setattr(plan, "rule_settings", lambda rule, **w: built.append((rule, w)) or build(rule, **w))
    for stage in plan.stages:  # a wildcard the build does not take
        assert plan.settings("ieat", {"analysis_set": analysis_set, "model": model, "stage": stage}) == expected
    assert built == [("ieat", {"analysis_set": analysis_set})]
    plan.settings("similarity", {"analysis_set": analysis_set})
    assert built[1:] == [("similarity", {})]  # another rule: built anew (its settings take no wildcard)


def test_a_mapping_with_a_missing_or_unknown_key_is_named():
    assert IEATSettings.from_mapping({"tests": [], "options": OPTIONS}).options.permutations == 1000
    misspelt = {k: v for k, v in OPTIONS.items() if k != "permutations"} | {"permutation": 10}
    with pytest.raises(TypeError, match=r"IEATOptions.*unknown \['permutation'\]; missing \['permutations'\]"):
        IEATSettings.from_mapping({"tests": [], "options": misspelt})
    with pytest.raises(TypeError, match=r"ChangeSettings \(change\): missing"):
        ChangeSettings.from_mapping({})


def test_only_the_tables_with_marks_read_the_significance_rule_and_an_unknown_kind_is_named(plan):
    for kind in TABLE_KINDS:
        table = plan.rule_settings("table", kind=kind)
        assert (table.significance is not None) == (kind in MARKED_TABLES), kind
    assert table.significance is None and TableSettings.from_mapping(table.as_dict()) == table
    marked = plan.rule_settings("table", kind="ieat")
    assert marked.significance.alpha == plan.config["analysis"]["ieat"]["alpha"]
    assert TableSettings.from_mapping(marked.as_dict()) == marked
    with pytest.raises(ValueError, match="table kind 'heatmap'"):
        plan.rule_settings("table", kind="heatmap")


def test_the_table_kinds_are_those_make_tables_makes():
    spec = importlib.util.spec_from_file_location("make_tables", ROOT / "workflow" / "scripts" / "make_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert set(module.KINDS) == set(TABLE_KINDS)


def test_the_paper_comparison_compares_the_papers_targets_unless_the_config_names_others(plan):
    targets = plan.config["report"]["ieat_targets"]
    assert plan.rule_settings("compare_paper").targets == (targets or ["man", "woman"])


def test_the_zoos_ranking_is_asked_for_only_while_the_zoo_is_on():
    zoo = cfg.read_configs([ROOT / "config/paper.yaml", ROOT / "config/zoo.yaml"])
    cfg.check_config(zoo)
    forest = Plan(zoo, ROOT).rule_settings("zoo_forest")
    assert forest.ranked_by() == zoo["zoo"]["rank_by"] and ZooForestSettings.from_mapping(forest.as_dict()) == forest
    paper = cfg.read_configs([ROOT / "config/paper.yaml"])
    cfg.check_config(paper)
    off = Plan(paper, ROOT).rule_settings("zoo_forest")
    assert off.rank_by is None and ZooForestSettings.from_mapping(off.as_dict()) == off
    with pytest.raises(ValueError, match="ZooForestSettings: no rank_by, the zoo is off"):
        off.ranked_by()


@pytest.mark.parametrize("value, on", [("on", True), (True, True), ("off", False), (False, False), (None, False)])
def test_a_switch_is_normalised_once(value, on):
    assert switch(value) is on


def test_a_script_takes_its_settings_as_json_from_the_command_line(tmp_path):
    rng = np.random.default_rng(0)
    classes = np.repeat(["man", "woman", "car", "surfboard"], 6)
    embeddings = rng.normal(size=(len(classes), 8))
    write_embeddings(tmp_path / "e.parquet", [f"i{n}" for n in range(len(classes))], classes, embeddings)
    settings = {
        "tests": [{"name": "t", "X": "man", "Y": "woman", "A": "car", "B": "surfboard"}],
        "options": OPTIONS,
    }
    script = ROOT / "workflow" / "scripts" / "ieat.py"
    args = [sys.executable, script, "--embeddings", tmp_path / "e.parquet", "--tables", tmp_path / "i.csv"]
    args += ["--stages", "pretrained"]
    subprocess.run([*map(str, args), "--settings", json.dumps(settings)], check=True, capture_output=True)
    table = pd.read_csv(tmp_path / "i.csv")
    assert list(table.test) == ["t"] and table.permutations.iloc[0] == 924  # all C(12, 6) splits: exact
    bad = {**settings, "options": {**settings["options"], "permutation": 5}}
    run = subprocess.run([*map(str, args), "--settings", json.dumps(bad)], capture_output=True, text=True)
    assert run.returncode != 0 and "unknown ['permutation']" in run.stderr


def test_a_jobs_log_begins_with_its_settings_ready_to_paste(tmp_path):
    from types import SimpleNamespace

    from biastransfer.scripting import run

    def main(table: str, settings: IEATSettings):
        return settings

    settings = {"tests": [], "options": OPTIONS}
    smk = SimpleNamespace(
        input=dict(),
        output=dict(table="t.csv"),
        params=dict(settings=settings),
        threads=1,
        wildcards=dict(),
        log=[str(tmp_path / "job.log")],
    )
    assert run(main, smk) == IEATSettings.from_mapping(settings)
    assert (
        f"--settings '{json.dumps(IEATSettings.from_mapping(settings).as_dict())}'"
        in (tmp_path / "job.log").read_text()
    )


# ---- the plan's snapshots: each shipped config's targets and every rule's settings, as readable YAML ----------
SNAPSHOTS = ROOT / "tests" / "snapshots" / "plan"
SNAPSHOT_CONFIGS = {
    **CONFIGS,
    "zoo": ["config/paper.yaml", "config/zoo.yaml"],
    "intervention_planted": ["config/config.yaml", "config/examples/intervention_planted.yaml"],
    "own_images": ["config/config.yaml", "config/examples/own_images.yaml"],
}


def plan_snapshot(plan: Plan) -> dict:
    """The plan as the snapshot records it: the targets, and per rule each distinct settings with its jobs."""
    rules = {}
    for rule, kind in sorted(RULE_SETTINGS.items()):
        jobs = {}
        for wildcards in job_wildcards(plan, kind):
            settings = plan.settings(rule, wildcards)
            jobs.setdefault(json.dumps(settings, sort_keys=True), []).append(
                "/".join(wildcards.values()) or "(one job)"
            )
        rules[rule] = [{"jobs": listed, "settings": json.loads(text)} for text, listed in jobs.items()]
    return {"targets": plan.analysis_targets(), "settings": rules}


def snapshot_text(name: str) -> str:
    config = cfg.read_configs([ROOT / p for p in SNAPSHOT_CONFIGS[name]])
    cfg.check_config(config)
    header = (
        f"# The plan of {' + '.join(SNAPSHOT_CONFIGS[name])} (tests/test_plan.py; UPDATE_SNAPSHOTS=1 rewrites it)\n"
    )
    snapshot = plan_snapshot(Plan(config, ROOT))
    targets = yaml.safe_dump({"targets": snapshot["targets"]}, default_flow_style=False)  # one a line: diffs read well
    settings = yaml.safe_dump({"settings": snapshot["settings"]}, sort_keys=False, width=120, default_flow_style=None)
    return header + targets + settings


@pytest.fixture(scope="module")
def own_images(tmp_path_factory):
    """A folder with config/examples/own_images.yaml's files (few and small: the plan reads only the table)."""
    folder = tmp_path_factory.mktemp("own")
    script = ROOT / "workflow" / "scripts" / "export_synthetic_images.py"
    small = ["--n_per_class", "2", "--n_images", "30", "--size", "16"]
    subprocess.run([sys.executable, script, "--out", "data/own_images", *small], cwd=folder, check=True)
    return folder


@pytest.mark.parametrize("name", sorted(SNAPSHOT_CONFIGS))
def test_the_plan_of_each_shipped_config_matches_its_snapshot(name, request, monkeypatch):
    """A change to what runs or to any rule's settings shows here, as a diff a reviewer reads."""
    if name == "own_images":
        monkeypatch.chdir(request.getfixturevalue("own_images"))
    file = SNAPSHOTS / f"{name}.yaml"
    text = snapshot_text(name)
    if os.environ.get("UPDATE_SNAPSHOTS"):
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text)
    assert file.exists(), f"{file} is missing: rerun with UPDATE_SNAPSHOTS=1"
    assert text == file.read_text(), f"the plan of {name} changed: review, then rerun with UPDATE_SNAPSHOTS=1"


def test_a_run_beyond_the_forest_rows_gets_one_forest_plot_per_analysis_set():
    """Forest rows: tests x models x networks (the demo: 2 tests x 1 model x 5 networks = 10)."""
    assert FOREST_ROWS == 40  # the counts below are set around it
    config = cfg.read_configs([ROOT / "config" / "config.yaml"])
    assert Plan(config, ROOT).forest_rows == {"synthetic": 10} and Plan(config, ROOT).forest_sets == []
    test = config["analysis_sets"]["synthetic"]["ieat"][0]
    for tests, expected in ((6, []), (7, ["synthetic", "second"])):  # 10 + 30 = 40 rows: one plot; 10 + 35 > 40
        second = {**config["analysis_sets"]["synthetic"], "ieat": [{**test, "name": f"t{i}"} for i in range(tests)]}
        plan = Plan({**config, "analysis_sets": {**config["analysis_sets"], "second": second}}, ROOT)
        assert plan.forest_rows == {"synthetic": 10, "second": 5 * tests} and plan.forest_sets == expected
