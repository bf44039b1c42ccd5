"""Figures from small fixed result tables: bar and point counts, error bars, BTS titles, files on disk."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import report_data as rd
from matplotlib.collections import PathCollection
from matplotlib.container import ErrorbarContainer
from matplotlib.lines import Line2D
from matplotlib.text import Text
from report_site import script as _script
from scipy.stats import spearmanr

from biastransfer.report import curves, figures, forest, gallery, ieat_figures, person_figures, style
from biastransfer.report.findings import describe_findings
from biastransfer.report.formatting import BTS_COLUMNS, read_summary
from biastransfer.report.tables import IEAT_COLUMNS, with_scratch
from biastransfer.scripting import run
from biastransfer.workflow.rules.report import ForestSettings

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "workflow" / "scripts"


@pytest.fixture(scope="module")
def run_tables(tmp_path_factory):
    paths = rd.write_all(tmp_path_factory.mktemp("summary"))
    return {
        "paths": paths,
        "similarity": read_summary(paths["similarity"], figures.SIMILARITY_COLUMNS),
        "bts": read_summary(paths["bts"], BTS_COLUMNS),
        "ieat": read_summary(paths["ieat"], IEAT_COLUMNS),
    }


def change_rows(run_tables):
    return read_summary(run_tables["paths"]["similarity_change"], figures.SIMILARITY_CHANGE_COLUMNS)


def test_the_similarity_figures_fit_a_page_with_four_finetuning_datasets(run_tables):
    """A run with interventions finetunes on more datasets than the paper's two: the title gets a line per
    dataset and the legend one column, so the figure keeps a page's width and readable type."""

    def more(frame):
        copies = [frame]
        for name in ("coco_rebalanced_independent", "coco_rebalanced_reversed"):
            rows = frame[frame["finetune_dataset"] == "coco"].copy()
            rows["finetune_dataset"] = name
            if "stage" in rows:
                rows["stage"] = rows["stage"].str.replace("ft-coco-", f"ft-{name}-", regex=False)
            copies.append(rows)
        return pd.concat(copies, ignore_index=True)

    sims, bts, change = (more(t) for t in (run_tables["similarity"], run_tables["bts"], change_rows(run_tables)))
    where = dict(analysis_set="coco", model="resnet18", alpha=0.05)
    for build in (figures.intra_figure, figures.inter_figure):
        fig = build(sims, bts, change, **where)
        assert len(fig.axes[0].get_legend().get_texts()) == 5
        assert style.print_size_problems(fig) == [], build.__name__


#: Finetuning dataset names as long as the overlays' (make controls, make mitigation).
LONG_NAMES = [
    "synthetic_target",
    "synthetic_target_counter",
    "synthetic_target_rebalanced",
    "synthetic_target_independent",
    "synthetic_target_adversarial",
    "synthetic_target_leace",
]


@pytest.mark.parametrize("n_datasets", [2, 3, 6])
def test_the_similarity_figures_fit_a_page_with_long_finetuning_dataset_names(run_tables, n_datasets):
    """`make controls` finetunes on synthetic_target and synthetic_target_counter, `make mitigation` on six
    datasets: names that long put BTS results side by side wider than a page; each dataset gets its own title
    line, the rank figure's legend wraps, and every figure stays printable."""
    finetuned = LONG_NAMES[:n_datasets]

    def renamed(frame):
        copies = []
        for k, new in enumerate(finetuned):
            old = ("coco", "openimages")[k % 2]
            rows = frame[frame["finetune_dataset"] == old].copy()
            rows["finetune_dataset"] = new
            if "stage" in rows:
                rows["stage"] = rows["stage"].str.replace(f"ft-{old}-", f"ft-{new}-", regex=False)
            copies.append(rows)
        return pd.concat([frame[~frame["finetune_dataset"].isin(["coco", "openimages"])], *copies], ignore_index=True)

    sims, bts, change = (renamed(t) for t in (run_tables["similarity"], run_tables["bts"], change_rows(run_tables)))
    for build in (figures.intra_figure, figures.inter_figure):
        fig = build(sims, bts, change, analysis_set="coco", model="resnet18", alpha=0.05)
        title = fig._suptitle.get_text()
        assert all(f"\n{name}: BTS ρ = " in title for name in finetuned)
        assert len(fig.axes[0].get_legend().get_texts()) == n_datasets + 1
        assert style.print_size_problems(fig) == [], build.__name__
        plt.close(fig)
    fig = figures.rank_figure(sims, bts, analysis_set="coco", model="resnet18")
    assert len(fig.legends[0].get_texts()) == n_datasets + 1
    assert style.print_size_problems(fig) == [], "rank_figure"
    plt.close(fig)
    cars = sims[sims["key"].str.contains("car")]
    objects = [cars.assign(key=cars["key"].str.replace("car", other)) for other in ("bus", "cup")]
    fig = person_figures.person_figure(pd.concat([sims, *objects]), analysis_set="coco", model="resnet18")
    assert len(fig.axes) >= 3 and len(fig.axes[0].get_xticklabels()) == n_datasets + 1
    assert style.print_size_problems(fig) == [], "person_figure"
    plt.close(fig)


def test_intra_figure_shows_levels_with_se_intervals_and_seed_points_and_the_change_with_its_interval(run_tables):
    sims, bts, change = run_tables["similarity"], run_tables["bts"], change_rows(run_tables)
    fig = figures.intra_figure(sims, bts, change, alpha=0.05, analysis_set="coco", model="resnet18")
    top, bottom = fig.axes[:2]
    classes = list(rd.CLASSES["coco"])
    assert [t.get_text() for t in bottom.get_xticklabels()] == classes
    # pretrained: one point per class with a 95% interval of +-1.96 SE
    (pretrained,) = [c for c in top.containers if isinstance(c, ErrorbarContainer)]
    pre = sims[
        (sims.analysis_set == "coco")
        & (sims.model == "resnet18")
        & (sims.kind == "intra")
        & (sims.stage == "pretrained")
    ]
    assert pretrained.lines[0].get_ydata() == pytest.approx(pre["value"].to_numpy())
    segments = pretrained.lines[2][0].get_segments()
    assert [s[1, 1] - s[0, 1] for s in segments] == pytest.approx(2 * figures.Z95 * pre["se"].to_numpy())
    # finetuned: every seed a point (3 + 1 seeds per class), the change of every seed with its interval
    assert sum(len(c.get_offsets()) for c in top.collections if isinstance(c, PathCollection)) == len(classes) * 4
    drawn = [c for c in bottom.containers if isinstance(c, ErrorbarContainer)]
    assert [len(c.lines[0].get_ydata()) for c in drawn] == [len(classes) * 3, len(classes)]
    mine = change[
        (change.analysis_set == "coco")
        & (change.model == "resnet18")
        & (change.kind == "intra")
        & (change.finetune_dataset == "coco")
    ]
    assert sorted(drawn[0].lines[0].get_ydata()) == pytest.approx(sorted(mine["delta"]))
    assert top.get_ylim()[0] > 0.05  # the axis spans the data, not from 0
    pooled = bts[
        (bts.analysis_set == "coco") & (bts.model == "resnet18") & (bts.kind == "intra") & (bts.seed == "pooled")
    ]
    for dataset in rd.FINETUNE:
        rho = pooled.loc[pooled.finetune_dataset == dataset, "statistic"].item()
        assert f"{dataset}: BTS ρ = {rho:.3f}" in fig._suptitle.get_text()
    legend = [t.get_text() for t in top.get_legend().get_texts()]
    assert "finetuned on coco (mean of 3 seeds); circles: seeds" in legend
    assert "finetuned on openimages (1 seed); circles: seeds" in legend
    assert not any("ft-" in t.get_text() for t in fig.findobj(Text))  # no internal stage names


def test_without_change_table_the_change_panel_shows_each_seeds_change_without_interval(run_tables):
    fig = figures.intra_figure(
        run_tables["similarity"], run_tables["bts"], None, alpha=0.05, analysis_set="coco", model="resnet18"
    )
    bottom = fig.axes[1]
    assert not [c for c in bottom.containers if isinstance(c, ErrorbarContainer)]
    assert (
        sum(len(c.get_offsets()) for c in bottom.collections if isinstance(c, PathCollection))
        == len(rd.CLASSES["coco"]) * 4
    )
    assert "no bootstrap intervals" in bottom.get_legend().get_texts()[0].get_text()


def test_finetuned_summary_is_the_seed_mean_with_min_max_and_mean_se(run_tables):
    sims = run_tables["similarity"]
    table = figures.similarity_by_stage(sims, analysis_set="coco", model="bit_m_r50x1", kind="intra")
    raw = sims[
        (sims.analysis_set == "coco")
        & (sims.model == "bit_m_r50x1")
        & (sims.kind == "intra")
        & (sims.finetune_dataset == "coco")
        & (sims.key == "car")
    ]
    row = table[(table.group == "ft-coco") & (table.key == "car")].iloc[0]
    assert row["n_seeds"] == 3
    assert row["mean"] == pytest.approx(raw["value"].mean())
    assert (row["low"], row["high"]) == pytest.approx((raw["value"].min(), raw["value"].max()))
    assert row["se"] == pytest.approx(raw["se"].mean())
    assert list(table["group"].cat.categories) == ["pretrained", "ft-coco", "ft-openimages"]


def test_inter_figure_covers_configured_pairs_and_shades_random_controls(run_tables):
    fig = figures.inter_figure(
        run_tables["similarity"],
        run_tables["bts"],
        change_rows(run_tables),
        alpha=0.05,
        analysis_set="openimages",
        model="bit_m_r50x1",
    )
    labels = [t.get_text() for t in fig.axes[1].get_xticklabels()]
    assert labels == [p.replace("|", " vs ") for p in rd.PAIRS["openimages"]]
    n_controls = sum("random" in pair.split("|") for pair in rd.PAIRS["openimages"])
    assert len(fig.axes[0].patches) == n_controls  # one shaded column per control pair
    assert "inter-class" in fig._suptitle.get_text() and "shaded: the random control" in fig._suptitle.get_text()


def test_rank_scatter_points_are_the_ranks_whose_correlation_is_the_pooled_bts(run_tables):
    sims, bts = run_tables["similarity"], run_tables["bts"]
    fig = figures.rank_figure(sims, bts, analysis_set="coco", model="resnet18")
    for ax, kind, n_keys in zip(fig.axes[:2], ("intra", "inter"), (len(rd.CLASSES["coco"]), len(rd.PAIRS["coco"]))):
        assert len(ax.collections) == len(rd.FINETUNE)
        assert list(ax.get_xticks()) == list(range(1, n_keys + 1)) == list(ax.get_yticks())  # integer ranks
        for collection, dataset in zip(ax.collections, rd.FINETUNE):
            points = collection.get_offsets()
            assert len(points) == n_keys
            rho = bts[
                (bts.analysis_set == "coco")
                & (bts.model == "resnet18")
                & (bts.kind == kind)
                & (bts.seed == "pooled")
                & (bts.finetune_dataset == dataset)
            ]["statistic"].item()
            assert np.corrcoef(points[:, 0], points[:, 1])[0, 1] == pytest.approx(rho)
            assert f"ρ = {rho:.3f} ({dataset})" in ax.get_title().replace("\n", " ")
        fig.canvas.draw()
        box = ax.get_window_extent()
        for label in ax.texts:  # point labels stay inside their axes
            extent = label.get_window_extent()
            assert box.x0 - 1 <= extent.x0 and extent.x1 <= box.x1 + 1, label.get_text()


def test_ieat_heatmap_cells_and_marks_from_adjusted_p(run_tables):
    ieat = run_tables["ieat"].copy()
    planted = (ieat.model == "resnet18") & (ieat.stage == "pretrained") & (ieat.test == "car-fashion")
    ieat.loc[planted, "pvalue_holm"] = 0.004
    ieat = ieat[~((ieat.model == "bit_m_r50x1") & (ieat.test == "car-random"))]  # one test not run for one model
    fig = ieat_figures.ieat_heatmap(ieat, alpha=0.05)
    panels = [ax for ax in fig.axes if ax.images]
    assert [ax.get_title() for ax in panels] == [
        "pretrained",
        "finetuned on coco (mean of 3 seeds)",
        "finetuned on openimages (1 seed)",
    ]
    (bar,) = [ax for ax in fig.axes if not ax.images]
    fig.canvas.draw()
    top, bottom = panels[0].get_window_extent().y1, panels[-1].get_window_extent().y0
    assert bar.get_window_extent().height == pytest.approx(top - bottom, rel=0.02)  # the panels' full height
    assert "mean over seeds" in fig._suptitle.get_text()
    n_tests = sum(len(t) for t in rd.IEAT_TESTS.values())
    for ax in panels:
        data = ax.images[0].get_array()
        assert data.shape == (len(rd.MODELS), n_tests)
        assert data.mask.sum() == 1  # the missing cell is blank, not zero
        assert len(ax.texts) == len(rd.MODELS) * n_tests - 1
    texts = [t.get_text() for t in panels[0].texts]
    d = ieat.loc[planted, "effect_size"].item()
    assert f"{d:.2f}**" in texts
    assert sum("*" in t for t in texts) == 1 + sum(
        p < 0.05 for p in ieat.loc[ieat.stage == "pretrained", "pvalue_holm"] if p != 0.004
    )
    pre = ieat[ieat.stage == "pretrained"]
    assert sum("†" in t for t in texts) == (pre.effect_size <= -0.5).sum()  # large effects against the tested direction
    assert "†" in fig._suptitle.get_text()


def test_change_figure_has_a_bar_per_seed_and_the_p_as_a_bound_at_its_floor():
    change = pd.DataFrame(
        {
            "analysis_set": "s",
            "model": "m",
            "finetune_dataset": "d",
            "seed": [0, 1],
            "test": "t",
            "delta_d": [-0.7, 0.1],
            "ci_low": [-0.9, -0.2],
            "ci_high": [-0.4, 0.3],
            "pvalue": [2 / 2001, 0.6],
            "pvalue_floor": 2 / 2001,
            "ci_level": 0.95,
        }
    )
    ax = ieat_figures.change_figure(change).axes[0]
    assert [t.get_text() for t in ax.texts] == ["p < 0.001", "p = 0.6"]
    assert len(ax.get_yticklabels()) == 2
    assert ieat_figures.change_figure(change.iloc[:0]).axes[0].texts  # no rows: says why
    tiny = change.assign(ci_low=[float("nan"), -0.2], ci_high=[float("nan"), 0.3], pvalue=[float("nan"), 0.6])
    ax = ieat_figures.change_figure(tiny).axes[0]  # a set below the resampling floor: no interval, said so
    assert [t.get_text() for t in ax.texts] == ["interval not estimable (set too small)", "p = 0.6"]
    assert all(np.isfinite(ax.get_xlim()))
    paper = pd.concat(  # the paper run: two analysis sets, six models, long test names; still on one page width
        change.assign(analysis_set=a, model=m, test="sport_man/sport_woman vs car_man/car_woman")
        for a in ("openimages", "coco")
        for m in ("bit_m_r50x1", "clip_vit_b32", "moco_r50_v1", "simclr_r50_v1", "resnet18", "resnet50")
    )
    assert style.print_size_problems(ieat_figures.change_figure(paper)) == []


def scratch_rows(run_tables):
    return read_summary(run_tables["paths"]["ieat_scratch"], forest.FOREST_COLUMNS)


def forest_lines(fig) -> dict[str, Line2D]:
    """The forest plot's points and intervals by their id, ``analysis_set/test/model/stage[/interval]``."""
    (ax,) = fig.axes
    return {line.get_gid(): line for line in ax.lines if line.get_gid()}


def gid(r) -> str:
    return f"{r.analysis_set}/{r.test}/{r.model}/{r.stage}"


def test_forest_plot_has_a_point_per_network_and_test_with_its_interval_and_zero_line(run_tables):
    ieat, scratch = run_tables["ieat"], scratch_rows(run_tables)
    fig = forest.forest_figure(ieat, scratch, alpha=0.05)
    lines = forest_lines(fig)
    rows = pd.concat([ieat, scratch], ignore_index=True)
    assert len(lines) == 2 * len(rows) == 2 * (len(ieat) + len(scratch))  # a point and an interval each
    for r in rows.itertuples():
        assert list(lines[gid(r)].get_xdata()) == pytest.approx([r.effect_size])
        assert list(lines[f"{gid(r)}/interval"].get_xdata()) == pytest.approx([r.ci_low, r.ci_high])
        assert lines[gid(r)].get_ydata()[0] == lines[f"{gid(r)}/interval"].get_ydata()[0]
    (ax,) = fig.axes
    assert len({line.get_ydata()[0] for line in lines.values()}) == len(rows)  # one row per network and test
    assert any(list(line.get_xdata()) == [0, 0] for line in ax.lines)  # the vertical line at d = 0
    headings = [t.get_text() for t in ax.get_yticklabels() if t.get_fontweight() == "bold"]
    assert len(headings) == len(rows.drop_duplicates(["analysis_set", "test", "model"]))
    assert headings[:3] == [
        "coco: car vs random (man/woman), ResNet18",
        "coco: car vs random (man/woman), BiT-M-R50x1",
        "openimages: car vs fashion (man/woman), ResNet18",
    ]  # in the summary's order, a test's models together
    assert style.print_size_problems(fig) == []
    without = forest_lines(forest.forest_figure(ieat, alpha=0.05))
    assert len(without) == 2 * len(ieat) and not any("/scratch-" in g for g in without)
    paper = pd.concat(  # the paper run's long names: headings wrap, and the figure stays a page wide
        ieat.assign(model=m, A=ieat["A"] + "_man/sport_woman_and_more", test=ieat["test"] + "_long")
        for m in ("clip_vit_b32", "simclr_r50_v1")
    )
    wide = forest.forest_figure(paper, alpha=0.05)
    assert style.print_size_problems(wide) == []
    assert all("\n" in t.get_text() for t in wide.axes[0].get_yticklabels() if t.get_fontweight() == "bold")


def test_a_forest_plot_of_one_analysis_set_draws_that_sets_rows_alone(run_tables, tmp_path):
    """The two-set summaries of tests/report_data.py drawn per set, as a run beyond FOREST_ROWS rows draws them."""
    paths = run_tables["paths"]
    ieat, scratch = read_summary(paths["ieat"], forest.FOREST_COLUMNS), scratch_rows(run_tables)
    assert set(ieat["analysis_set"]) == {"coco", "openimages"}
    drawn = {}
    for analysis_set in ("coco", "openimages"):
        files = {e: str(tmp_path / f"ieat_forest_{analysis_set}.{e}") for e in ("png", "pdf", "svg")}
        settings = ForestSettings(alpha=0.01, adjust="holm")
        main = _script("plot_forest").main
        main(paths["ieat"], **files, settings=settings, scratch=[paths["ieat_scratch"]], analysis_set=analysis_set)
        svg = (tmp_path / f"ieat_forest_{analysis_set}.svg").read_text()
        drawn[analysis_set] = set(re.findall(r'id="((?:coco|openimages)/[^"]+?)(?:/interval)?"', svg))
    for analysis_set, gids in drawn.items():
        mine = pd.concat([ieat, scratch])
        mine = mine[mine["analysis_set"] == analysis_set]
        assert gids == {gid(r) for r in mine.itertuples()}  # every row of the set, none of the other
    with pytest.raises(ValueError, match=r"ieat.csv: no rows for analysis_set 'other'"):
        files = {e: str(tmp_path / f"x.{e}") for e in ("png", "pdf", "svg")}
        _script("plot_forest").main(paths["ieat"], **files, settings=settings, analysis_set="other")


def test_forest_plot_names_each_seed_by_marker_and_fills_the_significant_points(run_tables):
    ieat, scratch = run_tables["ieat"].copy(), scratch_rows(run_tables)
    ieat.loc[ieat.index[:3], "pvalue_holm"] = [0.01, 0.2, float("nan")]  # significant, not, no p
    fig = forest.forest_figure(ieat, scratch, alpha=0.05)
    points = {g: line for g, line in forest_lines(fig).items() if not g.endswith("/interval")}
    marker = {g.rsplit("/", 1)[1]: line.get_marker() for g, line in points.items()}
    seeds = [marker[f"ft-coco-seed{s}"] for s in (0, 1, 2)]
    assert len(set(seeds)) == 3 and marker["pretrained"] not in seeds
    assert marker["ft-openimages-seed0"] == marker["ft-coco-seed0"] == marker["scratch-coco-seed0"]
    legend = {t.get_text(): h for t, h in zip(fig.legends[0].get_texts(), fig.legends[0].legend_handles)}
    for stage in marker:
        assert legend[style.stage_words(stage)].get_marker() == marker[stage]
    assert "trained from scratch on coco, seed 0" in legend and "finetuned on coco, seed 2" in legend
    assert legend["hollow: not significant"].get_markerfacecolor() == "white"
    assert "filled: significant (Holm-adjusted p < 0.05)" in legend
    for r in pd.concat([ieat, scratch], ignore_index=True).itertuples():
        hollow = points[gid(r)].get_markerfacecolor() == "white"
        assert hollow == (not r.pvalue_holm < 0.05), (r.stage, r.pvalue_holm)
    assert [points[gid(r)].get_markerfacecolor() == "white" for r in ieat.iloc[:3].itertuples()] == [
        False,
        True,
        True,
    ]


def test_forest_plot_shows_a_point_alone_without_its_interval_and_names_a_missing_column(run_tables):
    ieat = run_tables["ieat"].copy()
    ieat.loc[ieat.index[0], ["ci_low", "ci_high"]] = float("nan")  # a set too small to resample
    lines = forest_lines(forest.forest_figure(ieat, alpha=0.05))
    first = ieat.iloc[0]
    assert gid(first) in lines and f"{gid(first)}/interval" not in lines
    assert sum(g.endswith("/interval") for g in lines) == len(ieat) - 1
    ieat.loc[ieat.index[1], ["effect_size", "ci_low", "ci_high"]] = float("nan")  # d itself not estimable
    (ax,) = forest.forest_figure(ieat, alpha=0.05).axes
    assert [t.get_text() for t in ax.texts] == ["d not estimable"]
    with pytest.raises(ValueError, match="scratch iEAT summary: .*ci_level"):
        forest.forest_figure(ieat, scratch_rows(run_tables).drop(columns="ci_level"), alpha=0.05)
    with pytest.raises(ValueError, match="no rows"):
        forest.forest_figure(ieat.iloc[:0], alpha=0.05)


def test_ieat_heatmap_has_a_panel_for_each_scratch_network(run_tables):
    ieat = with_scratch(run_tables["ieat"], read_summary(run_tables["paths"]["ieat_scratch"], IEAT_COLUMNS))
    panels = [ax for ax in ieat_figures.ieat_heatmap(ieat, alpha=0.05).axes if ax.images]
    assert [ax.get_title() for ax in panels][-2:] == [
        "trained from scratch on coco (1 seed)",
        "trained from scratch on openimages (1 seed)",
    ]
    scratch = ieat[ieat.stage == "scratch-coco-seed0"]
    shown = {t.get_text().rstrip("*†") for t in panels[-2].texts}
    assert shown == {f"{d:.2f}" for d in scratch["effect_size"]}


LISTS = {"intra": ["woman", "car", "man"], "inter": [["car", "car_man"], ["random", "car"], ["man", "woman"]]}


def test_figures_show_only_the_listed_classes_and_pairs_in_their_order(run_tables):
    """The workflow's similarity tables hold every class pair; the figures show what the BTS ranks."""
    sims, bts = run_tables["similarity"], run_tables["bts"]
    where = dict(analysis_set="coco", model="resnet18", lists=LISTS)
    intra = figures.intra_figure(sims, bts, alpha=0.05, **where).axes[1]
    assert [t.get_text() for t in intra.get_xticklabels()] == LISTS["intra"]
    inter = figures.inter_figure(sims, bts, alpha=0.05, **where).axes[1]
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
        figures.inter_figure(
            sims, bts, alpha=0.05, analysis_set="coco", model="resnet18", lists={"inter": [["car", "boat"]]}
        )


def test_ieat_columns_name_the_targets_they_use():
    tests = pd.DataFrame(
        {
            "analysis_set": ["s", "s"],
            "test": ["t1", "t2"],
            "X": ["person_a"] * 2,
            "Y": ["person_b"] * 2,
            "A": ["surfboard", "refrigerator"],
            "B": ["car", "stop_sign"],
        }
    )
    assert ieat_figures.ieat_columns(tests) == (
        ["surfboard vs car", "refrigerator vs stop_sign"],
        "X vs Y = person_a vs person_b",
    )
    mixed = tests.assign(X=["man", "person_a"], Y=["woman", "person_b"])
    columns, targets = ieat_figures.ieat_columns(mixed)
    assert columns == ["surfboard vs car (man/woman)", "refrigerator vs stop_sign (person_a/person_b)"]
    assert targets == "X/Y as each column says"
    same = tests.assign(A=["car", "car"], B=["dog", "dog"])
    assert ieat_figures.ieat_columns(same)[0] == ["t1", "t2"]
    two_sets = tests.assign(analysis_set=["coco", "openimages"])
    assert ieat_figures.ieat_columns(two_sets)[0] == ["coco: surfboard vs car", "openimages: refrigerator vs stop_sign"]


def test_save_figure_writes_png_and_pdf_atomically(run_tables, tmp_path):
    fig = figures.intra_figure(
        run_tables["similarity"], run_tables["bts"], alpha=0.05, analysis_set="coco", model="resnet18"
    )
    png, pdf = figures.save_figure(fig, tmp_path / "sub" / "intra")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert pdf.read_bytes()[:5] == b"%PDF-"
    fonts = set(re.findall(rb"/Subtype ?/(Type3|TrueType|CIDFontType2)", pdf.read_bytes()))
    assert fonts and b"Type3" not in fonts  # TrueType (Type 42) fonts, no Type 3 bitmaps
    assert 10_000 < png.stat().st_size < 2_000_000
    assert 5_000 < pdf.stat().st_size < 2_000_000
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["intra.pdf", "intra.png"]


def test_bad_input_names_what_is_wrong(run_tables):
    sims, bts = run_tables["similarity"], run_tables["bts"]
    with pytest.raises(ValueError, match="'nosuchmodel'"):
        figures.intra_figure(sims, bts, alpha=0.05, analysis_set="coco", model="nosuchmodel")
    with pytest.raises(ValueError, match="no pooled row for finetune dataset 'openimages'"):
        figures.intra_figure(
            sims, bts[bts.finetune_dataset != "openimages"], alpha=0.05, analysis_set="coco", model="resnet18"
        )
    lacking = sims[~((sims.stage == "ft-coco-seed1") & (sims.key == "woman"))]
    with pytest.raises(ValueError, match=r"stage ft-coco-seed1 lacks intra key\(s\) \['woman'\]"):
        figures.similarity_by_stage(lacking, analysis_set="coco", model="resnet18", kind="intra")
    with pytest.raises(ValueError, match="missing column.*value"):
        figures.intra_figure(sims.drop(columns="value"), bts, alpha=0.05, analysis_set="coco", model="resnet18")


@pytest.mark.slow  # about 21 s of CPU (make test-fast leaves it out)
def test_plot_scripts_run_standalone(run_tables, tmp_path):
    paths = run_tables["paths"]
    out = {f"{k}_{e}": str(tmp_path / f"{k}.{e}") for k in ("intra", "inter", "rank", "person") for e in ("png", "pdf")}
    argv = [
        "--similarity",
        paths["similarity"],
        "--bts",
        paths["bts"],
        "--change",
        paths["similarity_change"],
        "--analysis_set",
        "coco",
        "--model",
        "resnet18",
        "--settings",
        '{"alpha": 0.01, "adjust": "holm", "control_class": null, "lists": {}}',
    ]
    argv += [a for k, v in out.items() for a in (f"--{k}", v)]
    run(_script("plot_similarity").main, None, argv)
    # the heat map and the forest plot read the same summaries with the same significance rule
    ieat_args = [
        "--ieat",
        paths["ieat"],
        "--scratch",
        paths["ieat_scratch"],
        "--settings",
        '{"alpha": 0.01, "adjust": "holm"}',
    ]
    run(
        _script("plot_ieat").main,
        None,
        [
            *ieat_args,
            "--png",
            str(tmp_path / "h.png"),
            "--pdf",
            str(tmp_path / "h.pdf"),
        ],
    )
    forest_files = [tmp_path / f"f.{e}" for e in ("png", "pdf", "svg")]
    run(
        _script("plot_forest").main,
        None,
        [
            *ieat_args,
            *[a for f in forest_files for a in (f"--{f.suffix[1:]}", str(f))],
        ],
    )
    run(
        _script("plot_change").main,
        None,
        ["--change", paths["ieat_change"], "--png", str(tmp_path / "c.png"), "--pdf", str(tmp_path / "c.pdf")],
    )
    rd.write_run_files(tmp_path)
    run_dir = tmp_path / "results" / "finetune" / "coco" / "resnet18"
    run(
        _script("plot_curves").main,
        None,
        [
            "--curves",
            *map(str, sorted(run_dir.glob("seed*/curve.csv"))),
            "--metrics",
            *map(str, sorted(run_dir.glob("seed*/metrics.json"))),
            "--settings",
            '{"scratch": false}',
            "--png",
            str(tmp_path / "k.png"),
            "--pdf",
            str(tmp_path / "k.pdf"),
        ],
    )
    scratch = tmp_path / "results" / "scratch" / "coco" / "resnet18" / "seed0" / "metrics.json"
    run(
        _script("plot_curves").main,
        None,
        [
            "--metrics",
            str(scratch),
            "--settings",
            '{"scratch": true}',
            "--png",
            str(tmp_path / "r.png"),
            "--pdf",
            str(tmp_path / "r.pdf"),
        ],
    )
    sheet = [tmp_path / f"s.{e}" for e in ("png", "pdf", "csv")]
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)  # manifest paths are relative to the working directory
        run(
            _script("plot_contact_sheet").main,
            None,
            [
                "--manifest",
                "results/analysis_sets/coco/manifest.parquet",
                "--analysis_set",
                "coco",
                "--png",
                str(sheet[0]),
                "--pdf",
                str(sheet[1]),
                "--csv",
                str(sheet[2]),
                "--settings",
                '{"per_class": 4}',
            ],
        )
    figures_written = [
        *out.values(),
        *(tmp_path / f"{n}.{e}" for n in "hckr" for e in ("png", "pdf")),
        *sheet[:2],
        *forest_files,
    ]
    assert all(Path(p).stat().st_size > 5_000 for p in figures_written)
    assert len(pd.read_csv(sheet[2])) == 3 * len(rd.CLASSES["coco"])
    empty = tmp_path / "empty.csv"
    empty.write_text("\n")  # no bootstrap: summarise_change writes an empty table
    run(_script("plot_similarity").main, None, [*argv[:4], "--change", str(empty), *argv[6:]])


def figure_builders(tables, root):
    """Every figure function of the report on the small tables (and run files under ``root``)."""
    sims, bts, change = (
        tables["similarity"],
        tables["bts"],
        read_summary(tables["paths"]["similarity_change"], figures.SIMILARITY_CHANGE_COLUMNS),
    )
    where = dict(analysis_set="coco", model="resnet18")
    manifest = pd.read_parquet(root / "results" / "analysis_sets" / "coco" / "manifest.parquet")
    run_dir = root / "results" / "finetune" / "coco" / "resnet18"
    return {
        "intra": lambda: figures.intra_figure(sims, bts, change, alpha=0.05, **where),
        "inter": lambda: figures.inter_figure(sims, bts, change, alpha=0.05, **where),
        "rank": lambda: figures.rank_figure(sims, bts, **where),
        "person": lambda: person_figures.person_figure(sims, **where),
        "no persons": lambda: person_figures.person_figure(sims, analysis_set="openimages", model="resnet18"),
        "heat map": lambda: ieat_figures.ieat_heatmap(tables["ieat"], alpha=0.05),
        "forest": lambda: forest.forest_figure(tables["ieat"], scratch_rows(tables), alpha=0.05),
        "change": lambda: ieat_figures.change_figure(
            read_summary(tables["paths"]["ieat_change"], ieat_figures.CHANGE_COLUMNS)
        ),
        "contact sheet": lambda: gallery.contact_sheet(
            gallery.sheet_images(manifest), analysis_set="coco", counts={}, root=root
        ),
        "curves": lambda: curves.curves_figure(
            curves.read_curves(sorted(run_dir.glob("seed*/curve.csv")), sorted(run_dir.glob("seed*/metrics.json")))
        ),
    }


def test_every_figure_prints_at_a_paper_width_with_fonts_of_at_least_7_pt(run_tables, tmp_path):
    rd.write_run_files(tmp_path)
    for name, build in figure_builders(run_tables, tmp_path).items():
        fig = build()
        assert fig.get_figwidth() in (style.SINGLE_COLUMN, style.DOUBLE_COLUMN), name
        assert style.print_size_problems(fig) == [], name
        assert style.smallest_font(fig) >= style.MIN_FONT_PT, name


def test_object_person_classes_pair_each_object_with_its_person_classes():
    classes = ["man", "woman", "car", "car_man", "car_woman", "dog_man", "surfboard", "surfboard_man", "random"]
    assert person_figures.object_person_classes(classes) == {"car": [("car_man", "man"), ("car_woman", "woman")]}
    demo = [
        "person_a",
        "person_b",
        "car",
        "car_person_a",
        "car_person_b",
        "refrigerator",
        "refrigerator_person_a",
        "refrigerator_person_b",
        "stop_sign",
    ]
    assert list(person_figures.object_person_classes(demo)) == ["car", "refrigerator"]


def test_person_figure_plots_each_object_person_pair_and_the_gap_before_and_after(run_tables):
    sims = run_tables["similarity"]
    fig = person_figures.person_figure(sims, analysis_set="coco", model="resnet18")
    (ax,) = [a for a in fig.axes if a.axison]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["the object with man", "the object with woman"]
    assert person_figures.person_pairs(sims, analysis_set="coco", model="resnet18") == {
        "car": [("car_man", "car"), ("car_woman", "car")]
    }
    table = figures.similarity_by_stage(
        sims, analysis_set="coco", model="resnet18", kind="inter", items=[("car_man", "car"), ("car_woman", "car")]
    )
    gaps = [
        table[(table.group == g) & (table.key == "car_man|car")]["mean"].item()
        - table[(table.group == g) & (table.key == "car_woman|car")]["mean"].item()
        for g in ("pretrained", "ft-coco", "ft-openimages")
    ]
    assert ax.get_title().endswith(" → ".join(f"{g:+.3f}" for g in gaps))
    pre = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert [c.lines[0].get_ydata()[0] for c in pre] == pytest.approx(list(table[table.group == "pretrained"]["mean"]))
    seeds = sum(len(c.get_offsets()) for c in ax.collections if isinstance(c, PathCollection))
    assert seeds == 2 * 4  # two pairs, 3 + 1 finetuned seeds
    none = person_figures.person_figure(sims, analysis_set="openimages", model="resnet18")
    assert "no\nobject+person classes" in none.axes[0].texts[0].get_text()


def test_contact_sheet_shows_the_first_images_of_each_class_and_names_a_missing_file(tmp_path):
    rd.write_run_files(tmp_path)
    manifest = pd.read_parquet(tmp_path / "results" / "analysis_sets" / "coco" / "manifest.parquet")
    shown = gallery.sheet_images(manifest.iloc[::-1], per_class=2)
    assert list(shown["class"].unique()) == list(rd.CLASSES["coco"])[::-1]  # classes in manifest order
    assert list(shown["image_id"][:2]) == ["random-0", "random-1"]  # the first by id
    assert list(shown["number"]) == list(range(1, 2 * len(rd.CLASSES["coco"]) + 1))
    fig = gallery.contact_sheet(shown, analysis_set="coco", counts={"man": 40}, root=tmp_path)
    images = [ax for ax in fig.axes if ax.images]
    assert len(images) == len(shown)
    titles = [ax.get_title(loc="left") for ax in fig.axes if ax.get_title(loc="left")]
    assert "man (40 images)" in titles and "woman (2 images)" in titles
    assert [ax.get_xlabel() for ax in images] == [f"#{n}" for n in shown["number"]]  # several sources: numbered
    (tmp_path / shown["path"].iloc[3]).unlink()
    with pytest.raises(FileNotFoundError, match="woman-0.png|car-0.png|missing image"):
        gallery.contact_sheet(shown, analysis_set="coco", counts={}, root=tmp_path)
    with pytest.raises(ValueError, match="per_class must be at least 1"):
        gallery.sheet_images(manifest, per_class=0)


def test_curves_figure_draws_each_seeds_losses_and_metric_and_rings_the_best_epoch(tmp_path):
    rd.write_run_files(tmp_path)
    run_dir = tmp_path / "results" / "finetune" / "coco" / "resnet18"
    table = curves.read_curves(sorted(run_dir.glob("seed*/curve.csv")), sorted(run_dir.glob("seed*/metrics.json")))
    assert sorted(table["seed"].unique()) == list(rd.FINETUNE["coco"]) and set(table["metric_name"]) == {"mAP"}
    fig = curves.curves_figure(table)
    loss, metric = fig.axes[:2]
    assert len(loss.lines) == 2 * len(rd.FINETUNE["coco"]) and len(metric.lines) == len(rd.FINETUNE["coco"])
    assert metric.get_ylabel() == "validation mAP"
    assert [tuple(c.get_offsets()[0]) for c in metric.collections] == [(4, pytest.approx(0.9))] * 3
    scratch = curves.read_histories([tmp_path / "results" / "scratch" / "coco" / "resnet18" / "seed0" / "metrics.json"])
    assert list(scratch["epoch"]) == [1, 2, 3] and set(scratch["seed"]) == {0}
    assert "trained from scratch" in curves.curves_figure(scratch, scratch=True)._suptitle.get_text()
    with pytest.raises(ValueError, match="metrics.json: history: missing column"):
        curves.read_histories(sorted(run_dir.glob("seed*/metrics.json")))  # finetuning runs keep theirs in curve.csv
    with pytest.raises(ValueError, match="one model on one dataset"):
        curves.curves_figure(pd.concat([table, table.assign(model="other")]))
    bad = tmp_path / "x" / "curve.csv"
    bad.parent.mkdir()
    bad.write_text("epoch,train_loss\n1,0.5\n")
    with pytest.raises(ValueError, match="curve.csv: missing column.*val_loss, metric"):
        curves.read_curves([bad])
    bad.write_text("epoch,train_loss,val_loss,metric\n1,0.5,0.6,0.3\n")
    with pytest.raises(ValueError, match="not a run's"):
        curves.read_curves([bad])


@pytest.mark.slow
def test_report_rules_run_and_the_report_builds(tmp_path):
    """rules/report.smk on fixed summaries: every target is made, lint is clean, the HTML report builds."""
    for name in ("workflow", "src", "envs", "resources", "CITATION.cff"):
        (tmp_path / name).symlink_to(ROOT / name)
    (tmp_path / "rules").mkdir()
    for name in ("artefacts.smk", "report.smk", "tables.smk"):
        (tmp_path / "rules" / name).symlink_to(ROOT / "rules" / name)
    (tmp_path / "Snakefile").write_text(  # the rest of the workflow needs a whole config
        'import os\nimport sys\nfrom types import SimpleNamespace\n\nsys.path.insert(0, "src")\n\n'
        "from biastransfer.workflow import config as cfg  # noqa: E402\nfrom biastransfer.paths import path  # noqa: E402\n"
        "from biastransfer.workflow.plan import Plan  # noqa: E402\n\n"
        "BASEDIR = str(workflow.current_basedir)\n"
        'RESOURCES = {"small": {"mem_mb": 500}, "plot": {"mem_mb": 1000}}\n\n\n'
        'configfile: "config.yaml"\n\n\n'
        "# the plan's part that rules/report.smk reads: the summaries below, no claims nor predictions\n"
        f"WRITTEN = {(*rd.SUMMARY_NAMES, 'provenance')!r}\n"
        "PLAN = SimpleNamespace(\n"
        "    summary=Plan.summary,\n"
        "    summaries=lambda *names: [Plan.summary(n) for n in names if n in WRITTEN],\n"
        "    written_summaries=WRITTEN,\n"
        "    finetune_runs=lambda name: [],\n"
        "    scratch_runs=lambda: [],\n"
        "    analysis_sets=list(config['analysis_sets']),\n"
        "    models=list(config['models']),\n"
        "    layers_on=False,\n"
        "    scratch_stages=cfg.scratch_stages(config),\n"
        "    forest_sets=[],\n"
        "    settings=Plan(config, BASEDIR).settings,\n"
        ")\n\n\n"
        'report: "workflow/report/workflow.rst"\n\n\n'
        'include: "rules/artefacts.smk"\ninclude: "rules/report.smk"\ninclude: "rules/tables.smk"\n\n\n'
        'rule all:\n    input:\n        ARTEFACTS.targets(),\n        "results/report/index.html",\n'
    )
    (tmp_path / "config.yaml").write_text(  # the sections rules/report.smk reads, with the schema's defaults filled
        "analysis_sets: {coco: {source: paper, ieat: [], bts: {}}}\nmodels: {resnet18: {}}\ndatasets: {}\n"
        "finetune: {datasets: [coco], seeds: [0, 1, 2], defaults: {epochs: 25, lr: 0.001, optimizer: sgd}}\n"
        "report: {p_adjust: bh, alpha: 0.05, control_class: random, tolerances: {}, ieat_targets: null}\n"
        "analysis: {ieat: {alpha: 0.05, alternative: greater, permutations: 1000, seed: 0, bootstrap: 200, "
        "ci_level: 0.95}, bts: {reference: scratch, reference_seeds: [0], pvalue: permutation, bootstrap: 200, "
        "ci_level: 0.95, seed: 0}}\n"
    )
    summary = tmp_path / "results" / "summary"
    summary.mkdir(parents=True)
    rd.write_all(summary)
    rd.write_run_files(tmp_path)
    (summary / "findings.rst").write_text("Findings\n========\n\nNone in this test.\n")
    (summary / "config.yaml").write_text((tmp_path / "config.yaml").read_text())  # the effective_config rule's
    pd.DataFrame(
        [
            {
                "file": "results/embeddings/coco/resnet18/pretrained.parquet",
                "analysis_set": "coco",
                "model": "resnet18",
                "stage": "pretrained",
                "weights_sha256": "0" * 64,
                "layer": "penultimate",
                "preprocessing": "{}",
                "versions": "torch",
                "dim": 512,
            }
        ]
    ).to_csv(summary / "provenance.csv", index=False)
    snakemake = [sys.executable, "-m", "snakemake", "--cores", "2"]
    lint = subprocess.run([*snakemake, "--lint"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert "Congratulations" in lint.stdout + lint.stderr, lint.stdout + lint.stderr
    for extra in (["--quiet", "all"], ["--report", "report.html"]):
        done = subprocess.run([*snakemake, *extra], cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
    for target in (
        "results/figures/coco/resnet18/rank.pdf",
        "results/figures/coco/resnet18/person.pdf",
        "results/figures/coco/contact_sheet.png",
        "results/figures/curves/coco/resnet18.png",
        "results/tables/bts_coco_ft-coco.tex",
        "results/tables/finetune_coco.tex",
        "results/comparison/paper_comparison.tex",
        "results/report/index.html",
        "results/figures/scratch_curves/coco/resnet18.pdf",
        "results/figures/ieat_forest.svg",
    ):
        assert (tmp_path / target).stat().st_size > 0
    html = (tmp_path / "report.html").read_text()
    assert "Analysis set coco" in html and "Comparison with the paper" in html
    assert "bh-adjusted" in html  # captions are rendered with the configured settings


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_heatmap_column_labels_wrap_when_they_fit_and_turn_when_they_do_not(run_tables):
    ieat = run_tables["ieat"]
    few = ieat_figures.ieat_heatmap(ieat, alpha=0.05)
    labels = [ax for ax in few.axes if ax.images][-1].get_xticklabels()
    assert all(t.get_rotation() == 0 for t in labels) and "openimages:\ncar\nvs fashion" in [
        t.get_text() for t in labels
    ]
    many = pd.concat([ieat.assign(test=ieat["test"] + f"-{i}", A=ieat["A"] + f"_long_name_{i}") for i in range(4)])
    turned = [ax for ax in ieat_figures.ieat_heatmap(many, alpha=0.05).axes if ax.images][-1].get_xticklabels()
    assert {t.get_rotation() for t in turned} == {30}


def test_one_significance_rule_the_intra_figure_the_heat_map_and_the_findings_agree(run_tables):
    """At alpha = 0.01 an adjusted p of 0.03 is not significant in the figure's title, the heat map's cell and
    the findings alike (no star anywhere); at alpha = 0.05 it is, everywhere."""
    bts, ieat = run_tables["bts"].copy(), run_tables["ieat"].copy()
    pooled = (bts.analysis_set == "coco") & (bts.model == "resnet18") & (bts.kind == "intra") & (bts.seed == "pooled")
    bts.loc[pooled, "pvalue_holm"] = 0.03
    cell = (ieat.analysis_set == "coco") & (ieat.model == "resnet18") & (ieat.stage == "pretrained")
    ieat.loc[cell, "pvalue_holm"] = 0.03
    d = float(ieat.loc[cell, "effect_size"].iloc[0])
    tests = {
        a: [{"name": f"{x}-{y}", "X": "man", "Y": "woman", "A": x, "B": y} for x, y in t]
        for a, t in rd.IEAT_TESTS.items()
    }
    for alpha, significant in ((0.01, False), (0.05, True)):
        title = figures.intra_figure(
            run_tables["similarity"], bts, alpha=alpha, analysis_set="coco", model="resnet18"
        )._suptitle.get_text()
        heat_map = ieat_figures.ieat_heatmap(ieat, alpha=alpha)
        pretrained = [ax for ax in heat_map.axes if ax.images][0]
        text = pretrained.texts[0].get_text()  # resnet18's first test, coco's car-random
        findings = describe_findings(ieat, bts, tests, alpha=alpha)
        star = "*" if significant else ""
        for dataset in rd.FINETUNE:
            rho = bts.loc[pooled & (bts.finetune_dataset == dataset), "statistic"].item()
            assert f"{dataset}: BTS ρ = {rho:.3f}{star} (" in title
        assert ("not significant)" in title) != significant  # the title says the verdict
        for fig_title in (title, heat_map._suptitle.get_text()):  # and both legends state the rule
            assert f"no mark: not significant at alpha = {alpha:g}" in fig_title
        assert text == f"{d:.2f}{star}"
        verdict = "significant" if significant else "not significant"
        assert f"**resnet18** pretrained: {verdict} (d = {d:.2f}" in findings
        assert f"adjusted p = 0.03, {verdict}, n = {len(rd.CLASSES['coco'])})" in findings
