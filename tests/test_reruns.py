"""Reruns redo exactly what a config edit changes: params carry only what shapes each output.

One complete run of the toy config (tests/configs/tiny.yaml) in a module fixture; each edit is then
planned with ``snakemake -n`` and the planned jobs (rule: count) must be exactly the expected ones.
Snakemake's default rerun triggers (mtime, params, input, software-env, code) apply; a script rule's
"code" is the script's mtime, which no test here changes.
"""

import copy

import pytest
import yaml
from conftest import ROOT
from conftest import run_snakemake as snakemake
from test_workflow import planned_jobs

TINY = yaml.safe_load((ROOT / "tests" / "configs" / "tiny.yaml").read_text())
SEEDS = len(TINY["finetune"]["seeds"])
STAGES = 1 + SEEDS


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("tiny")
    config = workdir / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    snakemake("--cores", "2", "--configfile", config, cwd=workdir)
    return workdir


def planned(workdir, edit) -> dict[str, int]:
    conf = copy.deepcopy(TINY)
    edit(conf)
    path = workdir / "edited.yaml"
    path.write_text(yaml.safe_dump(conf))
    return planned_jobs(snakemake("-n", "--cores", "1", "--configfile", path, cwd=workdir).stdout)


def add_ieat_test(conf):
    conf["analysis_sets"]["synthetic"]["ieat"].append(
        {"name": "car_vs_random", "X": "person_a", "Y": "person_b", "A": "car", "B": "random"}
    )


def drop_bts_pair(conf):
    conf["analysis_sets"]["synthetic"]["bts"]["inter"].pop()


# The change of each statistic from pretrained to finetuned (rules/analysis.smk): one job per pair; a
# rewritten analysis table also reruns its model's marker, model_analyses (it runs no code).
CHANGE = {"change": 1, "summarise_change": 1, "plot_change": 1, "model_analyses": 1}
# Every edit also reruns effective_config (its output is the config), html_report (the static report shows
# the findings, which every edit here reruns) and the target rule `all`.
EDITS = {
    "an iEAT test added": (
        add_ieat_test,
        {
            "ieat": STAGES,
            "summarise": 1,
            "findings": 1,
            "plot_ieat": 1,
            "table_ieat": 1,
            "compare_paper": 1,
            "plot_similarity": 1,
            **CHANGE,
        },  # the similarity figures draw the rewritten change table
    ),
    "a BTS list changed": (
        drop_bts_pair,
        {"bts": 1, "summarise": 1, "findings": 1, "plot_similarity": 1, "table_bts": 1, "compare_paper": 1, **CHANGE},
    ),
    "a report option": (
        lambda c: c.setdefault("report", {}).update(p_adjust="bh"),
        {"plot_similarity": 1, "plot_ieat": 1, "table_ieat": 1, "table_bts": 1, "findings": 1},
    ),
    "an alpha": (lambda c: c["analysis"]["ieat"].update(alpha=0.01), {"findings": 1}),
    "a finetune epoch count": (
        lambda c: c["finetune"]["defaults"].update(epochs=2),
        {
            "finetune": SEEDS,
            "finetune_summary": 1,
            "table_finetune": 1,
            "embed": SEEDS,
            "similarity": SEEDS,
            "ieat": SEEDS,
            "bts": 1,
            "summarise": 3,
            "provenance": 1,
            "findings": 1,
            "plot_similarity": 1,
            "plot_ieat": 1,
            "table_ieat": 1,
            "table_bts": 1,
            "compare_paper": 1,
            "plot_curves": 1,
            **CHANGE,
        },
    ),
}


def test_nothing_to_do_after_the_run(tiny_run):
    assert planned(tiny_run, lambda c: None) == {}


@pytest.mark.parametrize("name", list(EDITS))
def test_an_edit_reruns_exactly_the_jobs_that_depend_on_it(tiny_run, name):
    edit, expected = EDITS[name]
    assert planned(tiny_run, edit) == {**expected, "effective_config": 1, "html_report": 1, "all": 1}


def test_the_effective_config_shows_every_default(tiny_run):
    written = yaml.safe_load((tiny_run / "results" / "summary" / "config.yaml").read_text())
    assert "report" not in TINY and written["report"]["p_adjust"] == "holm"
    assert "similarity" not in TINY["analysis"] and written["analysis"]["similarity"]["method"] == "exact"
    assert written["finetune"]["defaults"]["momentum"] == 0.9 and written["finetune"]["overrides"] == {}
    assert written["models"]["tinycnn"]["pretrain"]["seed"] == 0
