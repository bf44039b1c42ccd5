"""The workflow end to end on the default demo run: outputs, formats, targeted reruns, lint, bad input.

The session fixture ``demo_run`` (tests/conftest.py) runs the default config once; these tests and the
known-answer tests in test_demo.py read it. Bad-config tests use the toy-size tests/configs/tiny.yaml.
"""

import hashlib
import json
import re
import shutil
import subprocess
import sys
import zipfile

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import report_site
import yaml
from conftest import ROOT
from conftest import run_snakemake as snakemake
from PIL import Image

TINY = ROOT / "tests" / "configs" / "tiny.yaml"
MODELS = ("democnn",)
STAGES = ["pretrained", *(f"ft-synthetic_target-seed{s}" for s in range(3))]
N_CLASSES, PER_CLASS = 13, 40


def planned_jobs(output: str) -> dict[str, int]:
    """Job counts from a dry run's 'Job stats' table."""
    table = output.split("Job stats:", 1)[1] if "Job stats:" in output else ""
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M) if m[1] != "total"}


def test_every_target_is_made(demo_run):
    out = demo_run / "results"
    for name in ("similarity", "bts", "ieat", "analysis_sets", "finetune_metrics"):
        assert (out / "summary" / f"{name}.csv").stat().st_size > 0
    for model in MODELS:
        for stage in STAGES:
            assert (out / "embeddings" / "synthetic" / model / f"{stage}.parquet").is_file()
    for kind in ("intra", "inter", "rank"):
        png = out / "figures" / "synthetic" / "democnn" / f"{kind}.png"
        with Image.open(png) as img:
            assert img.size[0] > 200 and img.size[1] > 100
        assert (png.with_suffix(".pdf")).read_bytes()[:4] == b"%PDF"
    assert list((out / "tables").glob("*.tex"))
    assert (out / "checks" / "leakage" / "synthetic.ok").is_file()
    used = yaml.safe_load((out / "summary" / "config.yaml").read_text())
    assert used["models"]["democnn"]["pretrain"]["epochs"] == 4 and used["analysis"]["ieat"]["alpha"] == 0.01
    assert not list(out.rglob("*.partial")), "a temporary file was left behind"


def test_embeddings_follow_the_documented_schema(demo_run):
    path = demo_run / "results" / "embeddings" / "synthetic" / "democnn" / "ft-synthetic_target-seed1.parquet"
    schema = pq.read_schema(path)
    assert schema.names == ["image_id", "class", "embedding"]
    assert pa.types.is_fixed_size_list(schema.field("embedding").type)
    meta = json.loads(schema.metadata[b"biastransfer"])
    for key in (
        "model",
        "stage",
        "analysis_set",
        "weights_sha256",
        "layer",
        "preprocessing",
        "versions",
        "config_hash",
    ):
        assert key in meta, key
    assert meta["stage"] == "ft-synthetic_target-seed1" and meta["analysis_set"] == "synthetic"
    table = pq.read_table(path)
    assert table.num_rows == N_CLASSES * PER_CLASS


def test_result_tables_hold_what_the_config_asks(demo_run):
    summary = demo_run / "results" / "summary"
    sims = pd.read_csv(summary / "similarity.csv")
    assert set(sims["stage"]) == set(STAGES)
    runs = len(MODELS) * len(STAGES)
    assert (sims["kind"] == "intra").sum() == N_CLASSES * runs
    assert (sims["kind"] == "inter").sum() == N_CLASSES * (N_CLASSES - 1) // 2 * runs
    bts = pd.read_csv(summary / "bts.csv", keep_default_na=False)
    assert sorted(set(bts["seed"].astype(str))) == ["0", "1", "2", "pooled"]
    assert set(bts.loc[bts["kind"] == "intra", "n"]) == {7} and set(bts.loc[bts["kind"] == "inter", "n"]) == {13}
    ieat = pd.read_csv(summary / "ieat.csv")
    assert len(ieat) == 2 * runs and set(ieat["test"]) == {"surfboard_vs_car", "refrigerator_vs_stop_sign"}
    assert ieat["pvalue"].between(0, 1).all() and (ieat["pvalue_holm"] >= ieat["pvalue"]).all()
    metrics = pd.read_csv(summary / "finetune_metrics.csv")
    assert len(metrics) == len(MODELS) * 3 and metrics["metric_value"].between(0, 1).all()
    provenance = pd.read_csv(summary / "provenance.csv")
    # every embeddings file: the stages above and the scratch reference network (analysis.bts.reference)
    assert len(provenance) == runs + len(MODELS) and provenance["weights_sha256"].str.fullmatch("[0-9a-f]{64}").all()
    assert set(provenance["stage"]) == {*STAGES, "scratch-synthetic_target-seed0"}
    assert provenance["file_sha256"].str.fullmatch("[0-9a-f]{64}").all() and provenance["file_sha256"].is_unique
    assert provenance["weights_source"].str.startswith("pretrained by this workflow on synthetic_biased").all()
    findings = (summary / "findings.rst").read_text()
    assert "surfboard_vs_car" in findings and "Bias Transfer Scores" in findings


def test_rerunning_one_rule_reruns_only_what_depends_on_it(demo_run):
    done = snakemake("-n", "--cores", "1", "--forcerun", "ieat", cwd=demo_run)
    jobs = planned_jobs(done.stdout)
    assert jobs.get("ieat") == len(MODELS)  # one job per model: every network, the scratch reference too
    assert not {"pretrain", "finetune", "embed", "similarity", "bts"} & set(jobs), jobs


def test_a_changed_parameter_reruns_exactly_its_dependants(demo_run, tmp_path):
    conf = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    conf["analysis"]["ieat"]["permutations"] = 3000
    changed = tmp_path / "changed.yaml"
    changed.write_text(yaml.safe_dump(conf))
    jobs = planned_jobs(snakemake("-n", "--cores", "1", "--configfile", str(changed), cwd=demo_run).stdout)
    assert jobs.get("ieat") == len(MODELS)  # one job per model: every network, the scratch reference too
    assert not {"pretrain", "finetune", "embed", "similarity", "bts"} & set(jobs), jobs


def test_nothing_to_do_after_a_complete_run(demo_run):
    done = snakemake("-n", "--cores", "1", cwd=demo_run)
    assert "Nothing to be done" in done.stdout + done.stderr


def test_the_command_line_runs_on_workflow_embeddings(demo_run):
    emb = demo_run / "results" / "embeddings" / "synthetic" / "democnn"
    cli = [sys.executable, "-m", "biastransfer.cli"]
    done = subprocess.run(
        [
            *cli,
            "ieat",
            str(emb / "pretrained.parquet"),
            "--X",
            "person_a",
            "--Y",
            "person_b",
            "--A",
            "surfboard",
            "--B",
            "car",
            "--permutations",
            "100000",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "surfboard_vs_car" in done.stdout and "effect_size" in done.stdout
    out = demo_run / "bts.csv"
    subprocess.run(
        [
            *cli,
            "bts",
            str(emb / "pretrained.parquet"),
            str(emb / "ft-synthetic_target-seed0.parquet"),
            str(emb / "ft-synthetic_target-seed1.parquet"),
            "-o",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    assert set(pd.read_csv(out)["after"].astype(str)) >= {"pooled"}
    bad = subprocess.run(
        [
            *cli,
            "ieat",
            str(emb / "pretrained.parquet"),
            "--X",
            "nobody",
            "--Y",
            "person_b",
            "--A",
            "car",
            "--B",
            "surfboard",
        ],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "'nobody'" in bad.stderr


def test_snakemakes_report_builds_and_the_static_report_shows_all_it_shows(demo_run):
    """Snakemake's report (as a zip: every output of the DAG marked for it, with the report page) builds, and
    each file it holds is, byte for byte, one of the static report's files (results/report/files/)."""
    snakemake("--cores", "1", "--report", "report.zip", cwd=demo_run, timeout=600)
    static = {
        hashlib.sha256(p.read_bytes()).digest() for p in (demo_run / "results/report/files").rglob("*") if p.is_file()
    }
    with zipfile.ZipFile(demo_run / "report.zip") as bundle:
        html = bundle.read("report/report.html").decode(errors="replace")
        marked = [name for name in bundle.namelist() if name.startswith("report/data/raw/")]
        missing = [name for name in marked if hashlib.sha256(bundle.read(name)).digest() not in static]
    assert len(html) > 10_000 and "synthetic" in html
    assert len(marked) > 20 and not missing, f"marked for the report but not in results/report/: {missing}"


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
    # three seeds on COCO, one on Open Images, as the paper
    # one embed job per analysis set and model, for its pretrained and 3 + 1 finetuned networks
    assert jobs["finetune"] == 6 * (3 + 1) and jobs["embed"] == jobs["embed_layers"] == 2 * 6
    # one BTS and one change job per analysis set and model, each over both finetuning datasets
    assert jobs["bts"] == jobs["change"] == 2 * 6
    assert jobs["fetch_weights"] == 6 and jobs["download_dataset"] == 2
    # each dataset's evaluation split and attributes; every finetuned network scores its own dataset's
    assert jobs["real_test_split"] == jobs["real_test_attributes"] == 2 and jobs["fetch_split_images"] == 2 * 3
    # one predict job per model, for its 3 + 1 networks
    assert jobs["predict"] == 6 and jobs["amplification"] == 1 and jobs["table_amplification"] == 2
    # 270 forest rows, beyond FOREST_ROWS: one forest plot per analysis set
    assert jobs["plot_forest"] == 2 and "results/figures/ieat_forest_openimages.svg" in done.stdout
    # its COCO intervention is off: nothing of it is planned
    assert not {"real_train_attributes", "intervention", "comparison_change", "comparison_summary"} & set(jobs)


def test_the_paper_dag_with_its_intervention_switched_on(tmp_path):
    """coco_independent on: COCO's training split gets its caption attributes and is rebalanced once; every
    model is finetuned on it with COCO's three seeds, embedded on both analysis sets, scored on COCO's
    evaluation split, and compared with its untouched COCO finetuning per analysis set."""
    switch = tmp_path / "on.yaml"
    switch.write_text("datasets:\n  coco_independent: {enabled: true}\n")
    done = snakemake("-n", "--cores", "1", "--configfile", str(ROOT / "config" / "paper.yaml"), switch, cwd=tmp_path)
    jobs = planned_jobs(done.stdout)
    assert jobs["real_train_attributes"] == jobs["intervention"] == jobs["intervention_test_split"] == 1
    assert jobs["finetune"] == 6 * (3 + 1 + 3) and jobs["embed"] == 2 * 6  # each for 1 + 3 + 1 + 3 networks
    assert jobs["predict"] == 6 and jobs["real_test_attributes"] == 2
    assert jobs["comparison_change"] == 2 * 6 and jobs["intervention_summary"] == jobs["table_intervention"] == 1
    assert jobs["comparison_summary"] == jobs["table_arm_comparison"] == jobs["plot_comparison"] == 1
    for planned in (
        "results/splits/coco/train_attributes.parquet",
        "results/compare/coco_independent_vs_coco/coco/resnet18.csv",
        "results/predictions/clip_vit_b32/ft-coco_independent-seed2.parquet",
    ):
        assert planned in done.stdout, planned
    # an object that is no COCO category stops the run before any job, named
    switch.write_text("datasets:\n  coco_independent: {enabled: true, objects: [refrigerator, fridge]}\n")
    bad = tmp_path / "bad"
    bad.mkdir()
    done = snakemake("--cores", "1", "--configfile", str(ROOT / "config" / "paper.yaml"), switch, cwd=bad, check=False)
    assert done.returncode != 0 and "datasets.coco_independent.objects: 'fridge' is not one of the COCO categories" in (
        done.stderr + done.stdout
    )
    assert not (bad / "results").exists()


def test_the_paper_dag_with_its_open_images_intervention_switched_on(tmp_path):
    """An intervention on Open Images (not in paper.yaml: the toy run switches every intervention there on)
    added by an overlay: Open Images' training split gets its label attributes and is rebalanced once; every
    model is finetuned on it with openimages' one seed and compared with its untouched one."""
    switch = tmp_path / "on.yaml"
    switch.write_text(
        "datasets:\n  openimages_independent: {kind: intervention, from: openimages, objects: [Car, Mammal]}\n"
        "finetune:\n  datasets: [coco, openimages, openimages_independent]\n"
        "  seeds: {coco: [0, 1, 2], openimages: [0], openimages_independent: [0]}\n"
    )
    done = snakemake("-n", "--cores", "1", "--configfile", str(ROOT / "config" / "paper.yaml"), switch, cwd=tmp_path)
    jobs = planned_jobs(done.stdout)
    assert jobs["real_train_attributes"] == jobs["intervention"] == jobs["intervention_test_split"] == 1
    assert jobs["finetune"] == 6 * (3 + 1 + 1) and jobs["predict"] == 6
    assert jobs["comparison_change"] == 2 * 6 and jobs["real_test_attributes"] == 2
    for planned in (
        "results/splits/openimages/train_attributes.parquet",
        "results/predictions/resnet18/ft-openimages_independent-seed0.parquet",
    ):
        assert planned in done.stdout, planned
    assert "results/splits/coco/train_attributes.parquet" not in done.stdout


def test_the_demo_dag_scores_every_trained_network_on_the_test_split(tmp_path):
    """One test split of the finetuning dataset; each finetuned seed and the scratch reference score it (one
    job per model); one job measures them all and one table shows them."""
    done = snakemake("-n", "--cores", "1", cwd=tmp_path)
    jobs = planned_jobs(done.stdout)
    assert jobs["synthetic_test_split"] == 1 and jobs["predict"] == len(MODELS)
    assert jobs["amplification"] == 1 and jobs["table_amplification"] == 1
    assert jobs["link"] == jobs["plot_link"] == jobs["table_link"] == 1
    assert "results/predictions/democnn/scratch-synthetic_target-seed0.parquet" in done.stdout
    assert "results/predictions/democnn/scratch-synthetic_target-seed0.embedding.parquet" in done.stdout
    # the pretrained network's embedding of the test split, the leakage baseline, from the same job
    assert "results/predictions/democnn/pretrained-synthetic_target.embedding.parquet" in done.stdout


def test_the_demos_scratch_network_is_trained_after_its_pretraining(tmp_path):
    """Pretraining (two threads) starts the longest chain: the scratch network, which could take one free
    core first and hold it back, is ordered after it (rules/scratch.smk, after_pretraining)."""
    target = "results/scratch/synthetic_target/democnn/seed0/metrics.json"
    jobs = planned_jobs(snakemake("-n", "--cores", "1", target, cwd=tmp_path).stdout)
    assert jobs["pretrain"] == 1 and jobs["train_scratch"] == 1 and "finetune" not in jobs


def test_the_predictions_and_their_bias_follow_the_documented_formats(demo_run):
    out = demo_run / "results"
    path = out / "predictions" / "democnn" / "ft-synthetic_target-seed2.parquet"
    meta = json.loads(pq.read_schema(path).metadata[b"biastransfer"])
    split = out / "splits" / "synthetic_target" / "test.parquet"
    assert meta["split"] == "test" and meta["split_sha256"] == hashlib.sha256(split.read_bytes()).hexdigest()
    assert meta["classes"] == ["car", "person", "refrigerator", "stop_sign", "surfboard"]
    assert re.fullmatch("[0-9a-f]{64}", meta["weights_sha256"]) and meta["stage"] == "ft-synthetic_target-seed2"
    scores = pd.read_parquet(path)
    assert len(scores) == 300 and scores[meta["classes"]].stack().between(0, 1).all()
    from biastransfer.embeddings import read_embeddings

    # the same forward pass's embedding of the same images, in the embeddings format with the same provenance
    embedded = read_embeddings(path.with_name("ft-synthetic_target-seed2.embedding.parquet"))
    assert embedded.image_ids.tolist() == scores["image_id"].tolist() and set(embedded.classes) == {"test"}
    assert {k: v for k, v in embedded.metadata.items() if k != "dim"} == {
        k: v for k, v in meta.items() if k != "classes"
    }
    summary = pd.read_csv(out / "summary" / "amplification.csv", keep_default_na=False)
    fine = summary[summary["network"] == "finetuned"]
    thresholds = fine.groupby(fine["measure"] == "leakage_embedding")["threshold"].agg(set)
    assert set(fine["seed"]) == {"0", "1", "2", "pooled"} and thresholds[False] == {"0.5", "base_rate"}
    assert thresholds[True] == {""}  # the embedding's leakage depends on no threshold (docs/formats.md)
    assert set(summary.loc[summary["network"] == "scratch", "seed"]) == {"0"}
    before = summary[summary["network"] == "pretrained"]  # no head for the tasks: its embedding's leakage only
    assert before[["model", "seed", "measure"]].values.tolist() == [["democnn", "", "leakage_embedding"]]
    for measure in (
        "directional",
        "zhao",
        "leakage_model",
        "leakage_amplification",
        "leakage_embedding",
        "leakage_dataset",
    ):
        rows = summary[summary["measure"] == measure]
        assert not rows.empty and (rows["ci_low"].astype(float) < rows["ci_high"].astype(float)).all(), measure
    assert (summary["replicates"] == 1000).all() and summary["n_excluded"].gt(0).all()
    terms = pd.read_csv(out / "summary" / "amplification_terms.csv")
    assert set(terms["task"]) == {"car", "refrigerator", "stop_sign", "surfboard"}
    assert (out / "tables" / "amplification_synthetic_target.tex").is_file()
    findings = (out / "summary" / "findings.rst").read_text()
    assert "the planted surfboard->person_a association" in findings
    # the link across levels: both iEATs (their objects are tasks), every finetuned seed and the scratch network
    link = pd.read_csv(out / "summary" / "link.csv", keep_default_na=False, na_values=[""])
    assert set(zip(link["network"], link["seed"].astype(str))) == {
        ("finetuned", "0"),
        ("finetuned", "1"),
        ("finetuned", "2"),
        ("finetuned", "pooled"),
        ("scratch", "0"),
    }
    assert set(link["test"]) == {"surfboard_vs_car", "refrigerator_vs_stop_sign"} and set(link["first"]) == {
        "surfboard",
        "refrigerator",
    }
    shift = terms[
        (terms["measure"] == "directional")
        & (terms["threshold"] == "0.5")
        & (terms["task"] == "surfboard")
        & (terms["attribute"] == "person_a")
    ].set_index(["network", "seed"])["shift"]
    mine = link[link["test"] == "surfboard_vs_car"].set_index(["network", "seed"])["shift_first"]
    assert (mine - shift.loc[mine.index]).abs().max() < 1e-12
    assert (link["contrast_low"] <= link["contrast"]).all() and (link["contrast"] <= link["contrast_high"]).all()
    corr = pd.read_csv(out / "summary" / "link_correlation.csv")
    assert set(corr.loc[corr["embedding"] == "d", "n"]) == {4} and corr["verdict"].str.startswith("too few").all()
    assert (out / "figures" / "link_synthetic_target.png").is_file()
    primary = link[link["primary"]]  # the pooled contrast of each pair and family, Holm-adjusted over its 2 pairs
    assert set(zip(primary["network"], primary["seed"].astype(str))) == {("finetuned", "pooled"), ("scratch", "0")}
    assert (primary["family_size"] == 2).all() and (primary["contrast_pvalue_holm"] >= primary["contrast_pvalue"]).all()
    landing = report_site.page_text(demo_run / "results" / "report" / "index.html")
    assert (
        "In the predictions (the primary measure of each pair, its p Holm-adjusted over the network's pairs): democnn "
        "finetuned on synthetic_target "
    ) in landing
    assert "surfboard_vs_car (contrast " in landing and ", adjusted p " in landing and "3 seeds pooled)" in landing


def test_the_controls_overlay_trains_five_networks_per_arm(tmp_path):
    """Planted, none and mirrored arms of five initialisations each (the demo's democnn is one of them),
    one finetuning seed each on the target and on its intervention, one attribution job comparing the
    arms, and each network's intervened finetuning compared with its untouched one."""
    configs = [str(ROOT / "config" / name) for name in ("config.yaml", "controls.yaml")]
    done = snakemake("-n", "--cores", "1", "--configfile", *configs, cwd=tmp_path)
    jobs = planned_jobs(done.stdout)
    assert jobs["pretrain"] == 15 and jobs["finetune"] == 15 * 2 and jobs["synthetic_dataset"] == 4
    assert jobs["embed"] == jobs["ieat"] == 15 and jobs["attribution"] == 1  # each: the model's 3 networks
    assert jobs["bts"] == jobs["change"] == 15  # each: the target and its intervention
    assert jobs["intervention"] == jobs["intervention_test_split"] == jobs["synthetic_train_attributes"] == 1
    assert jobs["comparison_change"] == 15 and jobs["intervention_summary"] == jobs["table_intervention"] == 1
    assert jobs["comparison_summary"] == jobs["table_arm_comparison"] == jobs["plot_comparison"] == 1
    assert jobs["predict"] == 15 and jobs["amplification"] == 1


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda c: c["analysis"].update(colour="red"), "'colour' was unexpected"),
        (lambda c: c["finetune"].update(seeds="zero"), "finetune.seeds: 'zero' is not valid"),
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


def test_a_corrupt_image_fails_the_job_naming_the_file(demo_run, tmp_path):
    work = tmp_path / "run"
    shutil.copytree(demo_run, work, symlinks=True)
    victim = sorted((work / "results" / "data" / "analysis" / "synthetic").glob("*.png"))[0]
    victim.write_bytes(b"not a png")
    target = "results/embeddings/synthetic/democnn/pretrained.parquet"
    done = snakemake("--cores", "1", target, "--forcerun", "embed", "--allowed-rules", "embed", cwd=work, check=False)
    log = (work / "logs" / "embed" / "synthetic" / "democnn.log").read_text()
    assert done.returncode != 0 and victim.name in log and "sha256" in log
    assert not (work / target).exists(), "a failed job left its output behind"
    assert not list((work / "results" / "embeddings").rglob("*.partial"))


@pytest.mark.slow
def test_another_project_uses_the_workflow_as_a_module(tmp_path):
    """``module`` + ``use rule * from``: the host gives the config; the library, schema, captions and scripts
    are found from the module's own folder, not the host's."""
    (tmp_path / "Snakefile").write_text(
        f'configfile: "{ROOT / "config" / "config.yaml"}"\n\n\n'
        f'module biastransfer:\n    snakefile:\n        "{ROOT / "Snakefile"}"\n    config:\n        config\n\n\n'
        "use rule * from biastransfer as bt_*\n"
    )
    command = [sys.executable, "-m", "snakemake", "--cores", "1"]
    plan = subprocess.run([*command, "-n"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert planned_jobs(plan.stdout)["bt_finetune"] == 3  # the demo: three seeds
    manifest = "results/analysis_sets/synthetic/manifest.parquet"
    job = subprocess.run([*command, manifest], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert job.returncode == 0, job.stderr[-3000:]
    assert len(pd.read_parquet(tmp_path / manifest)) > 0
