"""The shipped default config end to end: the synthetic demo recovers its planted bias.

This is the known answer the README promises: the model pretrained on biased scenes shows the planted
association (p < 0.01, effect size > 0.5) and the control pair does not. It reads the one run of the
whole default workflow shared with test_workflow.py (a few minutes).
"""

import pandas as pd
import pytest


@pytest.fixture(scope="module")
def demo(demo_run):
    return demo_run / "results"


def pretrained(ieat: pd.DataFrame, model: str, test: str) -> pd.Series:
    row = ieat[(ieat["model"] == model) & (ieat["stage"] == "pretrained") & (ieat["test"] == test)]
    assert len(row) == 1
    return row.iloc[0]


@pytest.mark.slow
def test_the_planted_association_is_found(demo):
    row = pretrained(pd.read_csv(demo / "summary" / "ieat.csv"), "democnn", "surfboard_vs_car")
    assert row["pvalue"] < 0.01 and row["effect_size"] > 0.5, row.to_dict()


@pytest.mark.slow
def test_the_control_pair_shows_no_association(demo):
    control_pair = pretrained(pd.read_csv(demo / "summary" / "ieat.csv"), "democnn", "refrigerator_vs_stop_sign")
    assert control_pair["pvalue"] > 0.05, control_pair.to_dict()


@pytest.mark.slow
def test_the_findings_say_so_in_words(demo):
    text = (demo / "summary" / "findings.rst").read_text()
    planted = text.split("surfboard_vs_car", 1)[1].split("refrigerator_vs_stop_sign", 1)[0]
    control = text.split("refrigerator_vs_stop_sign", 1)[1]
    assert "**democnn** pretrained: significant" in planted
    assert "**democnn** pretrained: not significant" in control
    html = (demo / "summary" / "findings.html").read_text()
    assert "<h1" in html and "democnn" in html


@pytest.mark.slow
def test_every_model_was_finetuned_with_every_seed(demo):
    metrics = pd.read_csv(demo / "summary" / "finetune_metrics.csv")
    assert sorted(zip(metrics["model"], metrics["seed"])) == [("democnn", s) for s in (0, 1, 2)]
    assert (metrics["metric_value"] > 0.5).all(), metrics


@pytest.mark.slow
def test_the_bts_is_read_beside_a_network_trained_only_on_the_target_data(demo):
    bts = pd.read_csv(demo / "summary" / "bts.csv")
    assert bts["scratch_statistic"].between(-1, 1).all() and bts["pretrained_vs_scratch"].between(-1, 1).all(), bts
    assert (demo / "embeddings" / "synthetic" / "democnn" / "scratch-synthetic_target-seed0.parquet").is_file()
    text = (demo / "summary" / "findings.rst").read_text()
    assert "The BTS against a network trained only on the target data" in text
    assert "rho(scratch, finetuned) = " in text and "Did training converge?" in text
