"""The plan (biastransfer.workflow): each rule's settings built from the filled config, in one shape,
without running anything."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from biastransfer import config as cfg
from biastransfer.embeddings import write_embeddings
from biastransfer.workflow.plan import Plan, switch
from biastransfer.workflow.rules.analysis import ChangeSettings, IEATSettings
from biastransfer.workflow.settings import RULE_SETTINGS

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = {
    "demo": ["config/config.yaml"],
    "controls": ["config/config.yaml", "config/controls.yaml"],
    "paper": ["config/paper.yaml"],
    "claims": ["config/paper.yaml", "config/claims.yaml"],
}


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def plan(request):
    config = cfg.read_configs([ROOT / p for p in CONFIGS[request.param]])
    cfg.check_config(config)
    return Plan(config, ROOT)


def test_every_rules_settings_build_and_survive_their_round_trip(plan):
    for rule, kind in RULE_SETTINGS.items():
        for analysis_set in plan.analysis_sets:
            settings = plan.settings(rule, {"analysis_set": analysis_set})
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


def test_a_mapping_with_a_missing_or_unknown_key_is_named():
    assert IEATSettings.from_mapping({"tests": [], "options": OPTIONS}).options.permutations == 1000
    misspelt = {k: v for k, v in OPTIONS.items() if k != "permutations"} | {"permutation": 10}
    with pytest.raises(TypeError, match=r"IEATOptions.*unknown \['permutation'\]; missing \['permutations'\]"):
        IEATSettings.from_mapping({"tests": [], "options": misspelt})
    with pytest.raises(TypeError, match=r"ChangeSettings \(change\): missing"):
        ChangeSettings.from_mapping({})


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
    args = [sys.executable, script, "--embeddings", tmp_path / "e.parquet", "--table", tmp_path / "i.csv"]
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
