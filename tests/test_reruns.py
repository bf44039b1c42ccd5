"""Reruns redo exactly what a config edit changes: params carry only what shapes each output.

One complete run of the toy config (tests/configs/tiny.yaml) in a module fixture, and one of the same
config with a folder of your own images as its analysis set, the trajectory on and layer profiles on;
each edit is then planned with ``snakemake -n`` and the planned jobs (rule: count) must be exactly the
expected ones.
Snakemake's default rerun triggers (mtime, params, input, software-env, code) apply; a script rule's
"code" is the script's mtime, which no test here changes.
"""

import copy
import os
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT
from conftest import run_snakemake as snakemake
from test_workflow import planned_jobs

TINY = yaml.safe_load((ROOT / "tests" / "configs" / "tiny.yaml").read_text())
SEEDS = len(TINY["finetune"]["seeds"])
# similarity and ieat: one job per analysis set and model, over all its networks (rules/analysis.smk)
STATS_JOBS = 1


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("tiny")
    config = workdir / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    snakemake("--cores", "2", "--configfile", config, cwd=workdir)
    return workdir


def planned(workdir, edit, base=TINY) -> dict[str, int]:
    conf = copy.deepcopy(base)
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
# The finetuned networks' predictions on the test split (one job per model), and what reads them
# (rules/predictions.smk).
PREDICTIONS = {"predict": 1, "amplification": 1, "table_amplification": 1}
# The link across levels reads the iEATs, their change and the predictions (rules/link.smk).
LINK = {"link": 1, "plot_link": 1, "table_link": 1}
# A model's embed job rerun (rules/embed.smk: it embeds every network of the model) reruns the statistics of every
# stage it rewrites, the predictions of the model's trained networks and all that reads them.
REEMBEDDED = {
    "embed": 1,
    "similarity": STATS_JOBS,
    "ieat": STATS_JOBS,
    "bts": 1,
    "summarise": 2,
    "summarise_bts": 1,
    "provenance": 1,
    "findings": 1,
    "plot_similarity": 1,
    "plot_ieat": 1,
    "plot_forest": 1,
    "table_ieat": 1,
    "table_bts": 1,
    "compare_paper": 1,
    **CHANGE,
    **PREDICTIONS,
    **LINK,
}
# Every edit also reruns effective_config (its output is the config), html_report (the static report shows
# the findings, which every edit here reruns) and the target rule `all`.
EDITS = {
    "an iEAT test added": (
        add_ieat_test,
        {
            "ieat": STATS_JOBS,
            "summarise": 1,
            "findings": 1,
            "plot_ieat": 1,
            "plot_forest": 1,
            "table_ieat": 1,
            "compare_paper": 1,
            "plot_similarity": 1,
            **CHANGE,
            **LINK,
        },  # the similarity figures draw the rewritten change table
    ),
    "a BTS list changed": (
        drop_bts_pair,
        {
            "bts": 1,
            "summarise_bts": 1,
            "findings": 1,
            "plot_similarity": 1,
            "table_bts": 1,
            "compare_paper": 1,
            **CHANGE,
            **LINK,
        },
    ),
    "a report option": (
        lambda c: c.setdefault("report", {}).update(p_adjust="bh"),
        # the link table words its prediction verdicts with the run's adjustment
        {
            "plot_similarity": 1,
            "plot_ieat": 1,
            "plot_forest": 1,
            "table_ieat": 1,
            "table_bts": 1,
            "table_link": 1,
            "findings": 1,
        },
    ),
    # every iEAT row carries the |d| detectable at alpha, so the iEATs rerun (not the change, nor any training);
    # alpha is the run's one significance rule, so every figure and table with stars redraws too
    "an alpha": (
        lambda c: c["analysis"]["ieat"].update(alpha=0.01),
        {
            "ieat": STATS_JOBS,
            "summarise": 1,
            "findings": 1,
            "plot_ieat": 1,
            "plot_forest": 1,
            "plot_similarity": 1,
            "table_ieat": 1,
            "table_bts": 1,
            "compare_paper": 1,
            "model_analyses": 1,
            **LINK,
        },
    ),
    # one embed job embeds every network of a model (rules/embed.smk): new checkpoints rerun it, and so also the
    # statistics of the pretrained embedding it rewrites (the same numbers)
    "a finetune epoch count": (
        lambda c: c["finetune"]["defaults"].update(epochs=2),
        {"finetune": SEEDS, "finetune_summary": 1, "table_finetune": 1, "plot_curves": 1, **REEMBEDDED},
    ),
}


def test_nothing_to_do_after_the_run(tiny_run):
    assert planned(tiny_run, lambda c: None) == {}


@pytest.mark.parametrize("name", list(EDITS))
def test_an_edit_reruns_exactly_the_jobs_that_depend_on_it(tiny_run, name):
    edit, expected = EDITS[name]
    assert planned(tiny_run, edit) == {**expected, "effective_config": 1, "html_report": 1, "all": 1}


def test_one_retrained_network_reruns_its_models_embed_job_and_every_stage_it_rewrites(tiny_run):
    """One checkpoint made newer (as a retrained seed): the model's one embed job per analysis set reruns and
    rewrites every network's embedding (rules/embed.smk), so every stage's statistics rerun, the pretrained
    one's too (the same numbers; with one embed job per network only the changed one's would), and the
    predictions of the model's trained networks (one predict job per model)."""
    checkpoint = tiny_run / "results" / "finetune" / "synthetic_target" / "tinycnn" / "seed0" / "model.safetensors"
    before = checkpoint.stat()
    os.utime(checkpoint)
    try:
        jobs = planned(tiny_run, lambda c: None)
    finally:
        os.utime(checkpoint, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert jobs == {**REEMBEDDED, "html_report": 1, "all": 1}


def test_the_effective_config_shows_every_default(tiny_run):
    written = yaml.safe_load((tiny_run / "results" / "summary" / "config.yaml").read_text())
    assert "report" not in TINY and written["report"]["p_adjust"] == "holm"
    assert "similarity" not in TINY["analysis"] and written["analysis"]["similarity"]["method"] == "exact"
    assert written["finetune"]["defaults"]["momentum"] == 0.9 and written["finetune"]["overrides"] == {}
    assert written["models"]["tinycnn"]["pretrain"]["seed"] == 0


def add_pretraining_dataset(conf):
    conf["datasets"]["synthetic_other"] = {
        "kind": "synthetic",
        "size": 32,
        "n_train": 80,
        "n_val": 40,
        "label_groups": True,
        "seed": 21,
    }
    conf["models"]["othercnn"] = copy.deepcopy(conf["models"]["tinycnn"])
    conf["models"]["othercnn"]["pretrain"]["dataset"] = "synthetic_other"


# Everything the new model needs; the leakage check reruns (a new training split to compare), and the
# other model's pretraining and finetuning do not (the check is an ordering input of theirs: ancient).
NEW_MODEL = {
    "synthetic_dataset": 1,
    "check_leakage": 1,
    "pretrain": 1,
    "trajectory_settings": 1,
    "finetune": SEEDS,
    "finetune_summary": 1,
    "table_finetune": 1,
    "plot_curves": 1,
    **REEMBEDDED,  # the new model's finetuned networks score the test split too
    "plot_similarity": 2,  # one per model: each draws the change table, which gains the new model's rows
}
# Model keys the layer profile alone reads, and `pool` with the default layer (not pooled there).
NETWORK_EDITS = {
    "a pretraining dataset added": (add_pretraining_dataset, NEW_MODEL),
    "models.<m>.layers (profiles off)": (lambda c: c["models"]["tinycnn"].update(layers=["layer2", "layer4"]), {}),
    "models.<m>.pool at the default layer": (lambda c: c["models"]["tinycnn"].update(pool="max"), {}),
}


@pytest.mark.parametrize("name", list(NETWORK_EDITS))
def test_no_training_reruns_for_what_does_not_shape_it(tiny_run, name):
    edit, expected = NETWORK_EDITS[name]
    assert planned(tiny_run, edit) == {**expected, "effective_config": 1, "html_report": 1, "all": 1}


def own_config() -> dict:
    """TINY with a folder of exported images as its only analysis set, the trajectory and layer profiles on."""
    conf = copy.deepcopy(TINY)
    synthetic = conf["analysis_sets"].pop("synthetic")
    conf["analysis_sets"]["own"] = {
        "source": "folder",
        "root": "own/analysis",
        **{k: synthetic[k] for k in ("classes", "bts", "ieat")},
    }
    conf["finetune"]["trajectory"] = "every"
    conf["analysis"]["layers"] = {"enabled": True}
    conf["models"]["tinycnn"]["layers"] = ["layer3", "layer4"]
    return conf


OWN = own_config()


@pytest.fixture(scope="module")
def own_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("own")
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "workflow" / "scripts" / "export_synthetic_images.py"),
            *("--out", "own", "--n_per_class", "6", "--n_images", "8", "--size", "32"),
        ],
        cwd=workdir,
        check=True,
        capture_output=True,
    )
    (workdir / "own.yaml").write_text(yaml.safe_dump(OWN))
    snakemake("--cores", "2", "--configfile", workdir / "own.yaml", cwd=workdir)
    return workdir


def add_own_ieat_test(conf):
    conf["analysis_sets"]["own"]["ieat"].append(
        {"name": "car_vs_random", "X": "person_a", "Y": "person_b", "A": "car", "B": "random"}
    )


# The statistics of one analysis set: at every layer, at every epoch, and the change.
SET_STATISTICS = {
    "layer_profile": 1,
    "summarise_layers": 1,
    "plot_layers": 1,
    "table_layers": 1,
    "trajectory": 1,
    "summarise_trajectory": 1,
    "plot_trajectory": 1,
    "table_trajectory": 1,
    "summarise": 1,
    "findings": 1,
    "compare_paper": 1,
    "plot_similarity": 1,
    **CHANGE,
    **LINK,  # it reads the iEATs and their change
}
# The layer profile of one model, pretrained and finetuned.
PROFILE = {
    "embed_layers": 1,
    "layer_profile": 1,
    "summarise_layers": 1,
    "plot_layers": 1,
    "table_layers": 1,
    "findings": 1,
    "model_analyses": 1,
}
OWN_EDITS = {
    "an iEAT test added to a folder set": (
        add_own_ieat_test,
        {"ieat": STATS_JOBS, "plot_ieat": 1, "plot_forest": 1, "table_ieat": 1, **SET_STATISTICS},
    ),
    "a BTS list of a folder set changed": (
        lambda c: c["analysis_sets"]["own"]["bts"]["inter"].pop(),
        {**{k: n for k, n in SET_STATISTICS.items() if k != "summarise"}, "bts": 1, "summarise_bts": 1, "table_bts": 1},
    ),
    "models.<m>.layers": (lambda c: c["models"]["tinycnn"].update(layers=["layer2", "layer4"]), PROFILE),
    "models.<m>.layer_pooling": (lambda c: c["models"]["tinycnn"].update(layer_pooling="max"), PROFILE),
    # the finetune jobs' settings file is rewritten, and ancient to them while the trajectory is off; the
    # static report drops the trajectory's figures and tables
    "the trajectory turned off": (lambda c: c["finetune"].update(trajectory="off"), {"trajectory_settings": 1}),
    # every embedding (and what reads it) reruns, its batch size being a param; no finetune job does: the
    # trajectory embeds at the training batch size
    "analysis.embed.batch_size with the trajectory on": (
        lambda c: c["analysis"]["embed"].update(batch_size=16),
        {**SET_STATISTICS, **REEMBEDDED, "embed_layers": 1},  # the predictions too: scored at this batch size
    ),
}


def test_nothing_to_do_after_the_own_run(own_run):
    assert planned(own_run, lambda c: None, OWN) == {}


@pytest.mark.parametrize("name", list(OWN_EDITS))
def test_an_edit_of_the_own_run_reruns_exactly_the_jobs_that_depend_on_it(own_run, name):
    edit, expected = OWN_EDITS[name]
    assert planned(own_run, edit, OWN) == {**expected, "effective_config": 1, "html_report": 1, "all": 1}
