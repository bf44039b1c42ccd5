"""Figures from small fixed result tables: bar and point counts, error bars, BTS titles, files on disk."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.container import BarContainer, ErrorbarContainer
from scipy.stats import spearmanr

import report_data as rd
from biastransfer.report import figures
from biastransfer.scripting import run
from biastransfer.report.formatting import read_summary
from biastransfer.report.tables import IEAT_COLUMNS

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "workflow" / "scripts"


@pytest.fixture(scope="module")
def run_tables(tmp_path_factory):
    paths = rd.write_all(tmp_path_factory.mktemp("summary"))
    return {
        "paths": paths,
        "similarity": read_summary(paths["similarity"], figures.SIMILARITY_COLUMNS),
        "bts": read_summary(paths["bts"], figures.BTS_COLUMNS),
        "ieat": read_summary(paths["ieat"], IEAT_COLUMNS),
    }


def bars(fig):
    ax = fig.axes[0]
    return [patch for c in ax.containers if isinstance(c, BarContainer) for patch in c]


def test_intra_bars_one_per_class_and_stage_group_with_min_max_error_bars(run_tables):
    sims, bts = run_tables["similarity"], run_tables["bts"]
    fig = figures.intra_figure(sims, bts, analysis_set="coco", model="resnet18")
    groups = 1 + len(rd.FINETUNE)
    assert len(bars(fig)) == len(rd.CLASSES["coco"]) * groups
    ax = fig.axes[0]
    # Error bars on the finetuned groups only; the pretrained model is one measurement.
    assert sum(isinstance(c, ErrorbarContainer) for c in ax.containers) == len(rd.FINETUNE)
    assert sum(p.get_hatch() == "///" for p in bars(fig)) == groups  # the random control, once per group
    assert ax.get_ylabel() == "mean cosine similarity"
    assert [t.get_text() for t in ax.get_xticklabels()] == list(rd.CLASSES["coco"])
    pooled = bts[(bts.analysis_set == "coco") & (bts.model == "resnet18") & (bts.kind == "intra") & (bts.seed == "pooled")]
    for dataset in rd.FINETUNE:
        rho = pooled.loc[pooled.finetune_dataset == dataset, "statistic"].item()
        assert f"ft-{dataset}: BTS ρ = {rho:.3f}" in ax.get_title()


def test_finetuned_bar_is_the_seed_mean_and_its_error_bar_spans_min_to_max(run_tables):
    sims = run_tables["similarity"]
    table = figures.similarity_by_stage(sims, analysis_set="coco", model="bit_m_r50x1", kind="intra")
    raw = sims[(sims.analysis_set == "coco") & (sims.model == "bit_m_r50x1") & (sims.kind == "intra")
               & (sims.finetune_dataset == "coco") & (sims.key == "car")]["value"]  # fmt: skip
    row = table[(table.group == "ft-coco") & (table.key == "car")].iloc[0]
    assert row["n_seeds"] == 3
    assert row["mean"] == pytest.approx(raw.mean())
    assert (row["low"], row["high"]) == pytest.approx((raw.min(), raw.max()))
    assert list(table["group"].cat.categories) == ["pretrained", "ft-coco", "ft-openimages"]


def test_inter_bars_cover_configured_pairs_and_hatch_random_controls(run_tables):
    fig = figures.inter_figure(run_tables["similarity"], run_tables["bts"], analysis_set="openimages", model="bit_m_r50x1")
    groups = 1 + len(rd.FINETUNE)
    assert len(bars(fig)) == len(rd.PAIRS["openimages"]) * groups
    n_controls = sum("random" in pair.split("|") for pair in rd.PAIRS["openimages"])
    assert sum(p.get_hatch() == "///" for p in bars(fig)) == n_controls * groups
    assert "inter-class" in fig.axes[0].get_title()


def test_rank_scatter_points_are_the_ranks_whose_correlation_is_the_pooled_bts(run_tables):
    sims, bts = run_tables["similarity"], run_tables["bts"]
    fig = figures.rank_figure(sims, bts, analysis_set="coco", model="resnet18")
    for ax, kind, n_keys in zip(fig.axes[:2], ("intra", "inter"), (len(rd.CLASSES["coco"]), len(rd.PAIRS["coco"]))):
        assert len(ax.collections) == len(rd.FINETUNE)
        for collection, dataset in zip(ax.collections, rd.FINETUNE):
            points = collection.get_offsets()
            assert len(points) == n_keys
            rho = bts[(bts.analysis_set == "coco") & (bts.model == "resnet18") & (bts.kind == kind)
                      & (bts.seed == "pooled") & (bts.finetune_dataset == dataset)]["statistic"].item()  # fmt: skip
            assert np.corrcoef(points[:, 0], points[:, 1])[0, 1] == pytest.approx(rho)


def test_ieat_heatmap_cells_and_marks_from_adjusted_p(run_tables):
    ieat = run_tables["ieat"].copy()
    planted = (ieat.model == "resnet18") & (ieat.stage == "pretrained") & (ieat.test == "car-fashion")
    ieat.loc[planted, "pvalue_holm"] = 0.004
    ieat = ieat[~((ieat.model == "bit_m_r50x1") & (ieat.test == "car-random"))]  # one test not run for one model
    fig = figures.ieat_heatmap(ieat)
    panels = [ax for ax in fig.axes if ax.images]
    assert [ax.get_title() for ax in panels] == ["pretrained", "ft-coco", "ft-openimages"]
    n_tests = sum(len(t) for t in rd.IEAT_TESTS.values())
    for ax in panels:
        data = ax.images[0].get_array()
        assert data.shape == (len(rd.MODELS), n_tests)
        assert data.mask.sum() == 1  # the missing cell is blank, not zero
        assert len(ax.texts) == len(rd.MODELS) * n_tests - 1
    texts = [t.get_text() for t in panels[0].texts]
    d = ieat.loc[planted, "effect_size"].item()
    assert f"{d:.2f}**" in texts
    assert sum("*" in t for t in texts) == 1 + sum(p < 0.05 for p in ieat.loc[ieat.stage == "pretrained", "pvalue_holm"] if p != 0.004)
    pre = ieat[ieat.stage == "pretrained"]
    assert sum("†" in t for t in texts) == (pre.effect_size <= -0.5).sum()  # large effects against the tested direction
    assert "†" in fig._suptitle.get_text()


def test_change_figure_has_a_bar_per_seed_and_the_p_as_a_bound_at_its_floor():
    change = pd.DataFrame({
        "analysis_set": "s", "model": "m", "finetune_dataset": "d", "seed": [0, 1], "test": "t",
        "delta_d": [-0.7, 0.1], "ci_low": [-0.9, -0.2], "ci_high": [-0.4, 0.3], "pvalue": [2 / 2001, 0.6],
        "pvalue_floor": 2 / 2001, "ci_level": 0.95,
    })  # fmt: skip
    ax = figures.change_figure(change).axes[0]
    assert [t.get_text() for t in ax.texts] == ["p <= 0.001", "p = 0.6"]
    assert len(ax.get_yticklabels()) == 2
    assert figures.change_figure(change.iloc[:0]).axes[0].texts  # no rows: says why


LISTS = {"intra": ["woman", "car", "man"], "inter": [["car", "car_man"], ["random", "car"], ["man", "woman"]]}


def test_figures_show_only_the_listed_classes_and_pairs_in_their_order(run_tables):
    """The workflow's similarity tables hold every class pair; the figures show what the BTS ranks."""
    sims, bts = run_tables["similarity"], run_tables["bts"]
    where = dict(analysis_set="coco", model="resnet18", lists=LISTS)
    intra = figures.intra_figure(sims, bts, **where).axes[0]
    assert [t.get_text() for t in intra.get_xticklabels()] == LISTS["intra"]
    inter = figures.inter_figure(sims, bts, **where).axes[0]
    assert [t.get_text() for t in inter.get_xticklabels()] == ["car vs car_man", "random vs car", "man vs woman"]
    rank = figures.rank_figure(sims, bts, **where)
    for ax, kind in zip(rank.axes[:2], ("intra", "inter")):
        table = figures.similarity_by_stage(sims, analysis_set="coco", model="resnet18", kind=kind, items=LISTS[kind])
        before = table[table.group == "pretrained"]["mean"].to_numpy()
        after = table[table.group == "ft-coco"]["mean"].to_numpy()
        points = ax.collections[0].get_offsets()
        assert len(points) == len(LISTS[kind])
        assert np.corrcoef(points[:, 0], points[:, 1])[0, 1] == pytest.approx(spearmanr(before, after).statistic)
    with pytest.raises(ValueError, match=r"'coco'/'resnet18' has no inter-class similarity for \['car', 'boat'\]"):
        figures.inter_figure(sims, bts, analysis_set="coco", model="resnet18", lists={"inter": [["car", "boat"]]})


def test_ieat_columns_name_the_targets_they_use():
    tests = pd.DataFrame({"analysis_set": ["s", "s"], "test": ["t1", "t2"], "X": ["person_a"] * 2,
                          "Y": ["person_b"] * 2, "A": ["surfboard", "refrigerator"], "B": ["car", "stop_sign"]})  # fmt: skip
    assert figures.ieat_columns(tests) == (["surfboard vs car", "refrigerator vs stop_sign"], "X vs Y = person_a vs person_b")
    mixed = tests.assign(X=["man", "person_a"], Y=["woman", "person_b"])
    columns, targets = figures.ieat_columns(mixed)
    assert columns == ["surfboard vs car (man/woman)", "refrigerator vs stop_sign (person_a/person_b)"]
    assert targets == "X/Y as each column says"
    same = tests.assign(A=["car", "car"], B=["dog", "dog"])
    assert figures.ieat_columns(same)[0] == ["t1", "t2"]
    two_sets = tests.assign(analysis_set=["coco", "openimages"])
    assert figures.ieat_columns(two_sets)[0] == ["coco: surfboard vs car", "openimages: refrigerator vs stop_sign"]


def test_save_figure_writes_png_and_pdf_atomically(run_tables, tmp_path):
    fig = figures.intra_figure(run_tables["similarity"], run_tables["bts"], analysis_set="coco", model="resnet18")
    png, pdf = figures.save_figure(fig, tmp_path / "sub" / "intra")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert pdf.read_bytes()[:5] == b"%PDF-"
    assert 10_000 < png.stat().st_size < 2_000_000
    assert 5_000 < pdf.stat().st_size < 2_000_000
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["intra.pdf", "intra.png"]


def test_bad_input_names_what_is_wrong(run_tables):
    sims, bts = run_tables["similarity"], run_tables["bts"]
    with pytest.raises(ValueError, match="'nosuchmodel'"):
        figures.intra_figure(sims, bts, analysis_set="coco", model="nosuchmodel")
    with pytest.raises(ValueError, match="no pooled row for finetune dataset 'openimages'"):
        figures.intra_figure(sims, bts[bts.finetune_dataset != "openimages"], analysis_set="coco", model="resnet18")
    lacking = sims[~((sims.stage == "ft-coco-seed1") & (sims.key == "woman"))]
    with pytest.raises(ValueError, match=r"stage ft-coco-seed1 lacks intra key\(s\) \['woman'\]"):
        figures.similarity_by_stage(lacking, analysis_set="coco", model="resnet18", kind="intra")
    with pytest.raises(ValueError, match="missing column.*value"):
        figures.intra_figure(sims.drop(columns="value"), bts, analysis_set="coco", model="resnet18")


def _script(name):
    spec = importlib.util.spec_from_file_location(f"script_{name}", SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # scripting.run reads the module's docstring for --help
    spec.loader.exec_module(module)
    return module


def test_plot_scripts_run_standalone(run_tables, tmp_path):
    paths = run_tables["paths"]
    out = {f"{k}_{e}": str(tmp_path / f"{k}.{e}") for k in ("intra", "inter", "rank") for e in ("png", "pdf")}
    argv = ["--similarity", paths["similarity"], "--bts", paths["bts"], "--analysis_set", "openimages", "--model", "resnet18",
            "--adjust", "holm"]
    argv += [a for k, v in out.items() for a in (f"--{k}", v)]
    run(_script("plot_similarity").main, None, argv)
    run(_script("plot_ieat").main, None, ["--ieat", paths["ieat"], "--png", str(tmp_path / "h.png"), "--pdf", str(tmp_path / "h.pdf")])
    run(_script("plot_change").main, None, ["--change", paths["ieat_change"], "--png", str(tmp_path / "c.png"), "--pdf", str(tmp_path / "c.pdf")])
    figures_written = [*out.values(), tmp_path / "h.png", tmp_path / "h.pdf", tmp_path / "c.png", tmp_path / "c.pdf"]
    assert all(Path(p).stat().st_size > 5_000 for p in figures_written)


@pytest.mark.slow
def test_report_rules_run_and_the_report_builds(tmp_path):
    """rules/report.smk on fixed summaries: every target is made, lint is clean, the HTML report builds."""
    for name in ("workflow", "envs", "resources"):
        (tmp_path / name).symlink_to(ROOT / name)
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "report.smk").symlink_to(ROOT / "rules" / "report.smk")
    (tmp_path / "Snakefile").write_text(
        'import sys\n\nsys.path.insert(0, "workflow/scripts")\n\nfrom biastransfer import config as cfg  # noqa: E402\n\n\n'
        'configfile: "config.yaml"\n\n\nreport: "workflow/report/workflow.rst"\n\n\n'
        'include: "rules/report.smk"\n\n\nrule all:\n    input:\n        REPORT_TARGETS,\n'
    )
    (tmp_path / "config.yaml").write_text(  # the sections rules/report.smk reads, with the schema's defaults filled
        "analysis_sets: {coco: {bts: {}}}\nmodels: {resnet18: {}}\nfinetune: {datasets: [coco], seeds: [0, 1, 2]}\n"
        "report: {p_adjust: bh, alpha: 0.05, control_class: random, tolerances: {}, ieat_targets: null}\n"
    )
    (tmp_path / "results" / "summary").mkdir(parents=True)
    rd.write_all(tmp_path / "results" / "summary")
    snakemake = [sys.executable, "-m", "snakemake", "--cores", "2"]
    lint = subprocess.run([*snakemake, "--lint"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert "Congratulations" in lint.stdout + lint.stderr, lint.stdout + lint.stderr
    for extra in (["--quiet", "all"], ["--report", "report.html"]):
        done = subprocess.run([*snakemake, *extra], cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
    for target in ("results/figures/coco/resnet18/rank.pdf", "results/tables/bts_coco_ft-coco.tex",
                   "results/tables/finetune_coco.tex", "results/comparison/paper_comparison.tex"):  # fmt: skip
        assert (tmp_path / target).stat().st_size > 0
    html = (tmp_path / "report.html").read_text()
    assert "Analysis set coco" in html and "Comparison with the paper" in html
    assert "bh-adjusted" in html  # captions are rendered with the configured settings
