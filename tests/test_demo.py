"""The shipped default config end to end: the synthetic demo recovers its planted bias.

This is the known answer the README promises: the model pretrained on biased scenes shows the planted
association (p < 0.01, effect size > 0.5); the control pair does not, and neither does the same
architecture pretrained on unbiased scenes. It runs the whole default workflow (a few minutes).
"""

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("demo")
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--cores", "2"],
        cwd=workdir, capture_output=True, text=True, timeout=1500,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    return workdir / "results"


def pretrained(ieat: pd.DataFrame, model: str, test: str) -> pd.Series:
    row = ieat[(ieat["model"] == model) & (ieat["stage"] == "pretrained") & (ieat["test"] == test)]
    assert len(row) == 1
    return row.iloc[0]


@pytest.mark.slow
def test_the_planted_association_is_found(demo):
    row = pretrained(pd.read_csv(demo / "summary" / "ieat.csv"), "democnn", "surfboard_vs_car")
    assert row["pvalue"] < 0.01 and row["effect_size"] > 0.5, row.to_dict()


@pytest.mark.slow
def test_the_control_pair_and_the_control_model_show_no_association(demo):
    ieat = pd.read_csv(demo / "summary" / "ieat.csv")
    control_pair = pretrained(ieat, "democnn", "refrigerator_vs_stop_sign")
    assert control_pair["pvalue"] > 0.05, control_pair.to_dict()
    control_model = pretrained(ieat, "democnn_control", "surfboard_vs_car")
    assert control_model["pvalue"] > 0.05, control_model.to_dict()


@pytest.mark.slow
def test_the_findings_say_so_in_words(demo):
    text = (demo / "summary" / "findings.rst").read_text()
    planted = text.split("surfboard_vs_car", 1)[1].split("refrigerator_vs_stop_sign", 1)[0]
    assert "**democnn** pretrained: significant" in planted
    assert "**democnn_control** pretrained: not significant" in planted
    html = (demo / "summary" / "findings.html").read_text()
    assert "<h1" in html and "democnn" in html


@pytest.mark.slow
def test_every_model_was_finetuned_with_every_seed(demo):
    metrics = pd.read_csv(demo / "summary" / "finetune_metrics.csv")
    assert sorted(zip(metrics["model"], metrics["seed"])) == [(m, s) for m in ("democnn", "democnn_control") for s in (0, 1, 2)]
    assert (metrics["metric_value"] > 0.5).all(), metrics
