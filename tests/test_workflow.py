"""The workflow end to end on the tiny config: outputs, formats, targeted reruns, lint, bad input.

The tiny config (tests/configs/tiny.yaml) has the demo's DAG at toy size; one run is shared by the
module's tests. The full default demo and its known answer are in test_demo.py.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tests" / "configs" / "tiny.yaml"
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
STAGES = ["pretrained", "ft-synthetic_target-seed0", "ft-synthetic_target-seed1"]


def snakemake(*args, cwd, check=True, timeout=900):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [*SNAKEMAKE, "--snakefile", str(ROOT / "Snakefile"), *args],
        cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}")
    return done


def planned_jobs(output: str) -> dict[str, int]:
    """Job counts from a dry run's 'Job stats' table."""
    table = output.split("Job stats:", 1)[1] if "Job stats:" in output else ""
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M) if m[1] != "total"}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("tiny")
    snakemake("--cores", "2", "--configfile", str(TINY), cwd=workdir)
    return workdir


def test_every_target_is_made(tiny_run):
    out = tiny_run / "results"
    for name in ("similarity", "bts", "ieat", "analysis_sets", "finetune_metrics"):
        assert (out / "summary" / f"{name}.csv").stat().st_size > 0
    for stage in STAGES:
        assert (out / "embeddings" / "synthetic" / "tinycnn" / f"{stage}.parquet").is_file()
    for kind in ("intra", "inter", "rank"):
        png = out / "figures" / "synthetic" / "tinycnn" / f"{kind}.png"
        with Image.open(png) as img:
            assert img.size[0] > 200 and img.size[1] > 100
        assert (png.with_suffix(".pdf")).read_bytes()[:4] == b"%PDF"
    assert list((out / "tables").glob("*.tex"))
    assert (out / "checks" / "leakage" / "synthetic.ok").is_file()
    assert not list(out.rglob("*.partial")), "a temporary file was left behind"


def test_embeddings_follow_the_documented_schema(tiny_run):
    path = tiny_run / "results" / "embeddings" / "synthetic" / "tinycnn" / "ft-synthetic_target-seed1.parquet"
    schema = pq.read_schema(path)
    assert schema.names == ["image_id", "class", "embedding"]
    assert pa.types.is_fixed_size_list(schema.field("embedding").type)
    meta = json.loads(schema.metadata[b"biastransfer"])
    for key in ("model", "stage", "analysis_set", "weights_sha256", "layer", "preprocessing", "versions", "config_hash"):
        assert key in meta, key
    assert meta["stage"] == "ft-synthetic_target-seed1" and meta["analysis_set"] == "synthetic"
    table = pq.read_table(path)
    assert table.num_rows == 7 * 6


def test_result_tables_hold_what_the_config_asks(tiny_run):
    summary = tiny_run / "results" / "summary"
    sims = pd.read_csv(summary / "similarity.csv")
    assert set(sims["stage"]) == set(STAGES)
    assert (sims["kind"] == "intra").sum() == 7 * 3 and (sims["kind"] == "inter").sum() == 21 * 3
    bts = pd.read_csv(summary / "bts.csv", keep_default_na=False)
    assert sorted(set(bts["seed"].astype(str))) == ["0", "1", "pooled"]
    assert set(bts.loc[bts["kind"] == "intra", "n"]) == {7} and set(bts.loc[bts["kind"] == "inter", "n"]) == {6}
    ieat = pd.read_csv(summary / "ieat.csv")
    assert len(ieat) == 2 * 3 and set(ieat["test"]) == {"surfboard_vs_car", "refrigerator_vs_stop_sign"}
    assert ieat["pvalue"].between(0, 1).all() and (ieat["pvalue_holm"] >= ieat["pvalue"]).all()
    metrics = pd.read_csv(summary / "finetune_metrics.csv")
    assert len(metrics) == 2 and metrics["metric_value"].between(0, 1).all()
    findings = (summary / "findings.rst").read_text()
    assert "surfboard_vs_car" in findings and "Bias transfer" in findings


def test_rerunning_one_rule_reruns_only_what_depends_on_it(tiny_run):
    done = snakemake("-n", "--cores", "1", "--configfile", str(TINY), "--forcerun", "ieat", cwd=tiny_run)
    jobs = planned_jobs(done.stdout)
    assert jobs.get("ieat") == 3
    assert not {"pretrain", "finetune", "embed", "similarity", "bts"} & set(jobs), jobs


def test_a_changed_parameter_reruns_exactly_its_dependants(tiny_run, tmp_path):
    conf = yaml.safe_load(TINY.read_text())
    conf["analysis"]["ieat"]["permutations"] = 3000
    changed = tmp_path / "changed.yaml"
    changed.write_text(yaml.safe_dump(conf))
    jobs = planned_jobs(snakemake("-n", "--cores", "1", "--configfile", str(changed), cwd=tiny_run).stdout)
    assert jobs.get("ieat") == 3
    assert not {"pretrain", "finetune", "embed", "similarity", "bts"} & set(jobs), jobs


def test_nothing_to_do_after_a_complete_run(tiny_run):
    done = snakemake("-n", "--cores", "1", "--configfile", str(TINY), cwd=tiny_run)
    assert "Nothing to be done" in done.stdout + done.stderr


def test_the_command_line_runs_on_workflow_embeddings(tiny_run):
    emb = tiny_run / "results" / "embeddings" / "synthetic" / "tinycnn"
    cli = [sys.executable, "-m", "biastransfer.cli"]
    done = subprocess.run(
        [*cli, "ieat", str(emb / "pretrained.parquet"), "--X", "person_a", "--Y", "person_b", "--A", "surfboard",
         "--B", "car", "--permutations", "2000"], capture_output=True, text=True, check=True,
    )
    assert "surfboard_vs_car" in done.stdout and "effect_size" in done.stdout
    out = tiny_run / "bts.csv"
    subprocess.run(
        [*cli, "bts", str(emb / "pretrained.parquet"), str(emb / "ft-synthetic_target-seed0.parquet"),
         str(emb / "ft-synthetic_target-seed1.parquet"), "-o", str(out)], check=True, capture_output=True,
    )
    assert set(pd.read_csv(out)["after"].astype(str)) >= {"pooled"}
    bad = subprocess.run([*cli, "ieat", str(emb / "pretrained.parquet"), "--X", "nobody", "--Y", "person_b",
                          "--A", "car", "--B", "surfboard"], capture_output=True, text=True)
    assert bad.returncode == 2 and "'nobody'" in bad.stderr


def test_the_report_builds(tiny_run):
    snakemake("--cores", "1", "--configfile", str(TINY), "--report", "report.html", cwd=tiny_run, timeout=600)
    html = (tiny_run / "report.html").read_text(errors="replace")
    assert len(html) > 10_000 and "synthetic" in html


def test_lint_and_format_are_clean():
    done = snakemake("--lint", cwd=ROOT, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Congratulations" in done.stdout + done.stderr or "no lints" in (done.stdout + done.stderr).lower()
    fmt = subprocess.run(
        [sys.executable, "-m", "snakefmt", "--check", "Snakefile", "rules"], cwd=ROOT, capture_output=True, text=True
    )
    assert fmt.returncode == 0, fmt.stderr


def test_the_paper_dag_plans_without_network(tmp_path):
    done = snakemake("-n", "--cores", "1", "--configfile", str(ROOT / "config" / "paper.yaml"), cwd=tmp_path)
    jobs = planned_jobs(done.stdout)
    assert jobs["finetune"] == 6 * 2 * 3 and jobs["embed"] == 2 * 6 * (1 + 2 * 3)
    assert jobs["fetch_weights"] == 6 and jobs["download_dataset"] == 2


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda c: c["analysis"].update(colour="red"), "'colour' was unexpected"),
        (lambda c: c["finetune"].update(seeds="zero"), "'zero' is not of type 'array'"),
        (lambda c: c["analysis_sets"]["synthetic"]["ieat"][0].update(B="boat"), "class 'boat'"),
    ],
)
def test_bad_config_fails_before_any_job(tmp_path, edit, message):
    conf = yaml.safe_load(TINY.read_text())
    edit(conf)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(conf))
    done = snakemake("--cores", "1", "--configfile", str(path), cwd=tmp_path, check=False)
    assert done.returncode != 0 and message in done.stderr + done.stdout
    assert not (tmp_path / "results").exists()


def test_a_corrupt_image_fails_the_job_naming_the_file(tmp_path):
    conf = yaml.safe_load(TINY.read_text())
    conf["finetune"]["seeds"] = [0]
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(conf))
    snakemake("--cores", "2", "--configfile", str(path), "--until", "check_leakage", cwd=tmp_path)
    victim = sorted((tmp_path / "results" / "data" / "analysis" / "synthetic").glob("*.png"))[0]
    victim.write_bytes(b"not a png")
    done = snakemake("--cores", "2", "--configfile", str(path), "--until", "embed", cwd=tmp_path, check=False)
    logs = "".join(p.read_text() for p in (tmp_path / "logs" / "embed").rglob("*.log"))
    assert done.returncode != 0 and victim.name in logs
    assert not list((tmp_path / "results" / "embeddings").rglob("*.parquet"))
