"""Analyses across networks: the scratch reference's stages, the controls' attribution config and DAG, the
attribution script, and the findings about convergence, the reference and attribution."""

import copy
import json
import sys

import pandas as pd
import pytest
import yaml
from conftest import ROOT, run_snakemake
from snakemake.utils import update_config
from test_workflow import planned_jobs

from biastransfer.report.findings.networks import (
    convergence,
    describe_attribution,
    describe_convergence,
    describe_reference,
)
from biastransfer.workflow import config as cfg
from biastransfer.workflow.plan import Plan
from biastransfer.workflow.rules.analysis import AttributionDesign, AttributionSettings

sys.path.insert(0, str(ROOT / "workflow" / "scripts"))


def merged(*names):
    conf = {}
    for name in names:
        update_config(conf, yaml.safe_load((ROOT / name).read_text()))
    return cfg.fill_defaults(conf)


@pytest.fixture
def controls():
    return merged("config/config.yaml", "config/controls.yaml")


def test_scratch_stages():
    assert cfg.parse_stage("scratch-synthetic_target-seed3") == ("synthetic_target", 3)
    assert [cfg.stage_kind(s) for s in ("pretrained", "ft-d-seed0", "scratch-d-seed0")] == [
        "pretrained",
        "finetuned",
        "scratch",
    ]
    with pytest.raises(ValueError, match="scratch-<dataset>-seed<n>"):
        cfg.stage_kind("scratch-d")
    demo = merged("config/config.yaml")
    demo["analysis"]["bts"].update(reference="scratch", reference_seeds=None)
    assert cfg.scratch_stages(demo) == [
        f"scratch-synthetic_target-seed{s}" for s in cfg.finetune_seeds(demo, "synthetic_target")
    ]
    demo["analysis"]["bts"].update(reference_seeds=[7])
    assert cfg.scratch_stages(demo) == ["scratch-synthetic_target-seed7"]
    demo["analysis"]["bts"]["reference"] = "none"
    assert cfg.scratch_stages(demo) == [] and cfg.stages(demo)[0] == "pretrained"


def test_controls_have_five_networks_per_arm(controls):
    cfg.check_config(controls)
    for spec in controls["analysis"]["attribution"]["comparisons"]:
        assert [len(m) for m in spec["groups"].values()] == [5, 5, 5]
    arms = controls["analysis"]["attribution"]["comparisons"][0]["groups"]
    pretrain = {m: controls["models"][m]["pretrain"] for models in arms.values() for m in models}
    recipe = {(p["epochs"], p["lr"], p["batch_size"]) for p in pretrain.values()}
    assert len(recipe) == 1, "the arms must share the pretraining recipe"
    assert len({controls["datasets"][p["dataset"]]["n_train"] for p in pretrain.values()}) == 1


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda s: s["groups"]["none"].append("nope"), "groups.none: unknown model 'nope'"),
        (lambda s: s["groups"]["none"].append("democnn"), "model 'democnn' is also in group 'planted'"),
        (lambda s: s.update(test="nope"), "test: 'nope' is not an iEAT test"),
        (lambda s: s.update(stage="ft-nope"), "stage: 'ft-nope' names no dataset"),
        (lambda s: s.update(analysis_set="nope"), "analysis_set: unknown analysis set 'nope'"),
        (
            lambda s: s.update(measure="contrast", stage="pretrained"),
            "stage: the prediction contrast is measured on finetuned networks",
        ),
    ],
)
def test_attribution_config_errors_are_named(controls, edit, message):
    conf = copy.deepcopy(controls)
    edit(conf["analysis"]["attribution"]["comparisons"][0])
    with pytest.raises(ValueError, match=message):
        cfg.check_config(conf)


def test_the_controls_compare_prediction_contrasts_and_a_dataset_without_predictions_is_named(controls):
    plan = Plan(controls, ROOT)
    specs = controls["analysis"]["attribution"]["comparisons"]
    assert [s["name"] for s in specs if s["measure"] == "contrast"] == [
        "planted_pair_predictions",
        "control_pair_predictions",
    ]
    assert plan.attribution_link() == ["results/summary/link.csv"]
    assert plan.settings("attribution")["comparisons"] == specs
    no_test = copy.deepcopy(controls)
    no_test["datasets"]["synthetic_target"]["n_test"] = 0
    with pytest.raises(ValueError, match="planted_pair_predictions: measure contrast needs predictions, but "):
        Plan(no_test, ROOT).settings("attribution")
    demo = merged("config/config.yaml")
    assert Plan(demo, ROOT).attribution_link() == []


def test_controls_dag_plans_the_attribution(tmp_path):
    done = run_snakemake(
        "-n", "--configfile", ROOT / "config/config.yaml", ROOT / "config/controls.yaml", cwd=tmp_path, timeout=300
    )
    jobs = planned_jobs(done.stdout)
    assert jobs["pretrain"] == 15 and jobs["attribution"] == 1 and jobs["claims"] == 1 and "train_scratch" not in jobs


def test_attribution_script_writes_one_row_per_pair(tmp_path):
    from attribution import main

    rows = [
        {"analysis_set": "s", "model": m, "stage": "pretrained", "finetune_dataset": "", "test": "t", "effect_size": d}
        for m, d in [("a0", 1.0), ("a1", 1.2), ("a2", 0.9), ("b0", -1.0), ("b1", -0.8), ("b2", -1.1)]
    ]
    pd.DataFrame(rows).to_csv(tmp_path / "ieat.csv", index=False)
    spec = {"name": "x", "analysis_set": "s", "test": "t", "groups": {"a": ["a0", "a1", "a2"], "b": ["b0", "b1", "b2"]}}
    design = AttributionDesign.from_mapping(
        {"alternative": "two-sided", "permutations": 100_000, "level": 0.95, "alpha": 0.05}
        | {"power": 0.8, "simulations": 100, "seed": 0}
    )
    main(str(tmp_path / "ieat.csv"), str(tmp_path / "out.csv"), AttributionSettings(comparisons=[spec], design=design))
    out = pd.read_csv(tmp_path / "out.csv")
    assert (
        len(out) == 1
        and out["pvalue"].iloc[0] == pytest.approx(0.1)
        and out["min_pvalue"].iloc[0] == pytest.approx(0.1)
    )
    text = "\n".join(describe_attribution(out))
    assert "a vs b: mean d 1.03 vs -0.97" in text and "the smallest this design allows" in text
    assert "cannot reach p < 0.05 at all" in text and "no difference detected" in text


def test_attribution_script_compares_prediction_contrasts_from_the_link_summary(tmp_path):
    from attribution import main

    contrasts = {"a0": 0.1, "a1": 0.12, "a2": 0.08, "a3": 0.1, "b0": -0.1, "b1": -0.08, "b2": -0.12, "b3": -0.1}
    link = pd.DataFrame(
        [
            {"analysis_set": "s", "test": "t", "dataset": "ft", "network": "finetuned", "model": m, "seed": seed}
            | {"contrast": c}
            for m, c in contrasts.items()
            for seed in ("0", "pooled")
        ]
    )
    link.to_csv(tmp_path / "link.csv", index=False)
    pd.DataFrame({"analysis_set": ["s"], "test": ["t"]}).to_csv(tmp_path / "ieat.csv", index=False)
    groups = {"a": ["a0", "a1", "a2", "a3"], "b": ["b0", "b1", "b2", "b3"]}
    spec = {
        "name": "amplify",
        "analysis_set": "s",
        "test": "t",
        "stage": "ft-ft",
        "measure": "contrast",
        "groups": groups,
    }
    design = AttributionDesign.from_mapping(
        {"alternative": "greater", "permutations": 100_000, "level": 0.95, "alpha": 0.05}
        | {"power": 0.8, "simulations": 100, "seed": 0}
    )
    settings = AttributionSettings(comparisons=[spec], design=design)
    main(str(tmp_path / "ieat.csv"), str(tmp_path / "out.csv"), settings, link=[str(tmp_path / "link.csv")])
    out = pd.read_csv(tmp_path / "out.csv")
    assert out["measure"].tolist() == ["contrast"] and out["pvalue"].iloc[0] == pytest.approx(1 / 70)
    text = "\n".join(describe_attribution(out))
    assert "its prediction contrast (the prediction level's primary measure" in text
    assert "**amplify** (t, ft-ft networks, contrast; greater" in text and "a vs b: mean contrast 0.10 vs -0.10" in text
    assert "differ: the difference is attributable to their training data" in text


def curve(metric, val_loss):
    return pd.DataFrame({"epoch": range(1, len(metric) + 1), "metric": metric, "val_loss": val_loss})


def test_convergence_is_read_from_the_curve():
    assert convergence(curve([0.5, 0.6], [0.4, 0.3]))["converged"] is False  # best = last, loss falling
    assert convergence(curve([0.5, 0.7, 0.69], [0.4, 0.3, 0.31]))["converged"] is True  # past its best
    assert convergence(curve([0.5, 0.6, 0.7], [0.4, 0.3, 0.35]))["converged"] is True  # loss turned up
    assert convergence(curve([0.5], [0.4]))["converged"] is False  # one epoch: nothing to judge by
    assert "a single epoch, so convergence cannot be judged: NOT converged" in "\n".join(
        describe_convergence({"m": curve([0.5], [0.4])})
    )
    text = "\n".join(
        describe_convergence({"m seed 0": curve([0.5, 0.6], [0.4, 0.3]), "m seed 1": curve([0.5, 0.4], [0.4, 0.5])})
    )
    assert "m seed 0: best epoch 2 of 2" in text and "NOT converged" in text and "1 of 2 runs had not converged" in text
    with pytest.raises(ValueError, match="val_loss"):
        convergence(pd.DataFrame({"epoch": [1], "metric": [0.1]}))


def test_finetuning_and_scratch_runs_are_named_and_judged_from_their_files(tmp_path):
    from biastransfer.report.findings.networks import training_runs

    history = [{"epoch": 1, "metric": 0.4, "val_loss": 0.5}, {"epoch": 2, "metric": 0.5, "val_loss": 0.45}]
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps({"model": "m", "dataset": "d", "seed": 0, "history": history}))
    curve_file = tmp_path / "finetune" / "d" / "m" / "seed1" / "curve.csv"
    curve_file.parent.mkdir(parents=True)
    pd.DataFrame(history).to_csv(curve_file, index=False)
    runs = training_runs([str(curve_file)], [str(path)])
    assert list(runs) == ["m finetuned on d, seed 1", "m trained from scratch on d (reference), seed 0"]
    assert "m trained from scratch on d (reference), seed 0: best epoch 2 of 2" in "\n".join(describe_convergence(runs))


def test_reference_is_described_beside_the_bts():
    bts = pd.DataFrame(
        {
            "analysis_set": "s",
            "model": "m",
            "finetune_dataset": "d",
            "seed": ["0", "pooled", "pooled"],
            "kind": ["intra", "intra", "inter"],
            "statistic": [0.9, 0.95, 0.5],
            "scratch_statistic": [0.4, 0.5, 0.8],
            "pretrained_vs_scratch": [0.3, 0.3, 0.6],
            "scratch_seeds": "0",
            "ci_level": 0.95,
            "retention_ci_low": [0.2, 0.1, -0.6],
            "retention_ci_high": [0.7, 0.8, -0.1],
            "retention_verdict": ["retained", "retained", "target data alone"],
        }
    )
    text = "\n".join(describe_reference(bts))
    assert "intra: rho(pretrained, finetuned) = 0.95, rho(scratch, finetuned) = 0.50" in text
    assert "closer to the pretrained one than to the scratch one (by 0.45, 95% CI [0.10, 0.80])" in text
    assert "inter: rho(pretrained, finetuned) = 0.50, rho(scratch, finetuned) = 0.80" in text
    assert "a ranking closer (difference -0.30, 95% CI [-0.60, -0.10]), so this BTS does not show" in text
    # the verdict follows the interval, not the point difference
    unresolved = bts.assign(retention_ci_low=-0.2, retention_verdict="undecided")
    assert "about as close (difference 0.45, 95% CI [-0.20, 0.80]), so" in "\n".join(describe_reference(unresolved))
    assert describe_reference(bts.drop(columns="scratch_statistic")) == []
