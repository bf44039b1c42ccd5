"""Comparisons between two finetuning arms (biastransfer.stats.comparison, analysis.comparisons): the pairs the
plan compares, the named config errors, hand-computed paired changes, the overview's quadrants in words, its
table (compiled with LaTeX) and figure."""

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from test_tables import compile_latex, needs_latex

from biastransfer.report.comparison_report import comparison_figure, comparison_frame, comparison_latex
from biastransfer.report.findings.comparison import arm_lines, describe_comparisons, quadrant
from biastransfer.stats.comparison import (
    SUMMARY_COLUMNS,
    accuracy_values,
    overview,
    paired_rows,
    toward_zero,
)
from biastransfer.workflow import config as cfg
from biastransfer.workflow.config import ConfigError, comparison_problems
from biastransfer.workflow.plan import Plan

ROOT = Path(__file__).resolve().parents[1]
CONTROLS = [ROOT / "config" / "config.yaml", ROOT / "config" / "controls.yaml"]


def controls(comparisons, seeds=None):
    config = cfg.read_configs(CONTROLS)
    config["analysis"]["comparisons"] = comparisons
    if seeds is not None:
        config["finetune"]["seeds"] = seeds
    return config


# ---- which pairs ---------------------------------------------------------------------------------------
def test_an_intervention_is_compared_with_its_from_once_however_often_it_is_declared():
    pair = {"arm": "synthetic_target_counter", "against": "synthetic_target"}
    reverse = {"arm": "synthetic_target", "against": "synthetic_target_counter"}
    config = controls([pair, reverse, pair])
    cfg.check_config(config)
    plan = Plan(config, ROOT)
    assert plan.comparisons == [
        ("synthetic_target_counter", "synthetic_target"),
        ("synthetic_target", "synthetic_target_counter"),
    ]
    assert plan.comparison_subject(*plan.comparisons[0]) == "the intervention"
    assert plan.comparison_subject(*plan.comparisons[1]) == "synthetic_target"
    demo = Plan(cfg.read_configs([ROOT / "config" / "config.yaml"]), ROOT)
    assert demo.comparisons == [] and "comparison" not in demo.written_summaries


def test_a_declared_pair_that_is_not_finetuned_is_named_before_any_job():
    config = controls([{"arm": "synthetic_biased", "against": "synthetic_target"}])
    (problem,) = comparison_problems(config)
    assert problem.startswith(
        "analysis.comparisons[0] (synthetic_biased against synthetic_target): arm 'synthetic_biased'"
    )
    assert (
        "not in finetune.datasets (synthetic_target, synthetic_target_counter): both arms must be finetuned" in problem
    )
    with pytest.raises(ConfigError, match=re.escape("analysis.comparisons[0]")):
        cfg.check_config(config)


def test_a_declared_pair_without_a_common_seed_is_named():
    pair = {"arm": "synthetic_target", "against": "synthetic_target_counter"}
    config = controls([pair], seeds={"synthetic_target": [0, 1], "synthetic_target_counter": [2]})
    assert comparison_problems(config) == [
        "analysis.comparisons[0] (synthetic_target against synthetic_target_counter): no finetuning seed in common "
        "(synthetic_target: [0, 1], synthetic_target_counter: [2]): the comparison pairs networks by seed"
    ]
    assert Plan(config, ROOT).comparisons[:1] == [("synthetic_target", "synthetic_target_counter")]
    same = controls([{"arm": "synthetic_target", "against": "synthetic_target"}])
    assert comparison_problems(same) == [
        "analysis.comparisons[0] (synthetic_target against synthetic_target): an arm compared against itself"
    ]


# ---- paired changes, by hand ---------------------------------------------------------------------------
def values(rows):
    """Rows (dataset, seed, estimate, low, high) of one measure in paired_rows' columns."""
    frame = pd.DataFrame(rows, columns=["dataset", "seed", "estimate", "low", "high"])
    return frame.assign(model="m", analysis_set="set", name="planted", threshold="0.5", role="planted", n=100)


def test_the_paired_change_per_seed_and_over_seeds_by_hand():
    z = stats.norm.ppf(0.975)
    rows = [
        ("plain", 0, 0.50, 0.50 - 0.2 * z, 0.50 + 0.2 * z),
        ("arm", 0, 0.10, 0.10 - 0.1 * z, 0.10 + 0.1 * z),
        ("plain", 1, 0.40, 0.30, 0.50),
        ("arm", 1, 0.20, 0.10, 0.30),
        ("plain", 2, 0.60, 0.50, 0.70),
        ("arm", 2, 0.30, 0.20, 0.40),
        ("arm", 3, 0.0, -0.1, 0.1),  # a seed the other arm lacks: not compared
    ]
    out = paired_rows(values(rows), "arm", "plain", "prediction", ci_level=0.95, permutations=1000)
    assert list(out.columns) == list(SUMMARY_COLUMNS)
    seed0 = out[out["seed"] == "0"].iloc[0]
    se = math.hypot(0.2, 0.1)  # each interval's half-width over z, independent
    assert seed0["delta"] == pytest.approx(-0.4)
    assert (seed0["ci_low"], seed0["ci_high"]) == pytest.approx((-0.4 - z * se, -0.4 + z * se))
    assert seed0["pvalue"] == pytest.approx(2 * stats.norm.sf(0.4 / se))
    assert seed0["verdict"] == "no change shown (the interval contains 0): delta = -0.400 [-0.838, +0.038] (100 images)"
    assert (
        out[out["seed"] == "1"]["verdict"].iloc[0] == "lower in the arm: delta = -0.200 [-0.341, -0.059] (100 images)"
    )
    over = out[out["unit"] == "seeds"].iloc[0]
    d = np.array([-0.4, -0.2, -0.3])
    half = stats.t.ppf(0.975, 2) * d.std(ddof=1) / math.sqrt(3)
    assert over["n"] == 3 and over["delta"] == pytest.approx(-0.3)
    assert (over["ci_low"], over["ci_high"]) == pytest.approx((-0.3 - half, -0.3 + half))
    assert over["min_pvalue"] == 0.25 and over["value_against"] == pytest.approx(0.5)


def test_the_validation_metric_of_one_seed_has_no_interval_and_says_so():
    metrics = [
        {"dataset": d, "model": "m", "seed": 0, "metric_name": "map", "metric_value": v, "metric_worst_group": w}
        for d, v, w in (("plain", 0.80, 0.60), ("arm", 0.78, float("nan")))
    ]
    table = accuracy_values(metrics)
    assert table["name"].tolist() == ["map", "map_worst_group", "map"]  # NaN worst group: not recorded
    out = paired_rows(table, "arm", "plain", "accuracy", ci_level=0.95)
    assert out["name"].tolist() == ["map", "map"] and out["delta"].tolist() == pytest.approx([-0.02, -0.02])
    assert out["verdict"].tolist() == ["not tested (no interval)", "not tested (one seed: no interval over seeds)"]


# ---- the overview, its quadrants in words, table and figure ---------------------------------------------
@pytest.mark.parametrize(
    "against, low, high, state",
    [
        (0.8, -0.5, -0.1, "reduced"),
        (-0.8, 0.1, 0.5, "reduced"),
        (0.8, 0.1, 0.3, "increased"),
        (0.8, -0.1, 0.2, "unchanged"),
        (0.8, math.nan, math.nan, "untested"),
    ],
)
def test_toward_zero(against, low, high, state):
    assert toward_zero(against, low, high) == state


@pytest.mark.parametrize(
    "representation, predictions, words",
    [
        ("unchanged", "reduced", "reduced in the predictions but not in the representation"),
        ("reduced", "unchanged", "reduced in the representation but not in the predictions"),
        ("reduced", "reduced", "reduced in both the predictions and the representation"),
        ("unchanged", "unchanged", "changed in neither the predictions nor the representation (both intervals hold 0)"),
        ("increased", "reduced", "reduced in the predictions, increased in the representation"),
    ],
)
def test_each_quadrant_in_words(representation, predictions, words):
    assert quadrant(representation, predictions) == words


def summary_of(arm, d_interval, shift_interval, metric_delta):
    """A comparison summary of one arm with 3 seeds: d, the shift and the metric over seeds."""
    base = dict(zip(SUMMARY_COLUMNS, [""] * len(SUMMARY_COLUMNS)))
    base |= {"arm": arm, "against": "plain", "model": "m", "threshold": "", "unit": "seeds", "seed": "all", "n": 3}
    base |= {"ci_level": 0.95, "pvalue": 0.25, "min_pvalue": 0.25, "method": "sign flips", "verdict": ""}
    rows = []
    for level, name, against, (low, high) in (
        ("embedding", "planted", 0.8, d_interval),
        ("prediction", "planted", 0.3, shift_interval),
        ("accuracy", "map", 0.8, (metric_delta - 0.01, metric_delta + 0.01)),
    ):
        rows.append(
            base
            | {
                "level": level,
                "name": name,
                "analysis_set": "" if level == "accuracy" else "set",
                "role": "planted",
                "value_against": against,
                "value_arm": against + (low + high) / 2,
                "delta": (low + high) / 2,
                "ci_low": low,
                "ci_high": high,
            }
        )
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))


@pytest.fixture
def arms():
    return pd.concat(
        [
            summary_of("dfr", (-0.1, 0.1), (-0.3, -0.1), -0.02),  # fixed in the predictions, still in the embedding
            summary_of("counter", (-0.6, -0.2), (-0.2, -0.05), -0.01),
            summary_of("none", (-0.1, 0.2), (-0.05, 0.05), 0.0),
        ],
        ignore_index=True,
    )


def test_the_overview_reads_each_arm_from_its_intervals(arms):
    rows = overview(arms)
    assert rows["arm"].tolist() == ["dfr", "counter", "none"]
    assert rows["representation"].tolist() == ["unchanged", "reduced", "unchanged"]
    assert rows["predictions"].tolist() == ["reduced", "reduced", "unchanged"]
    assert rows["seeds"].tolist() == ["3 seeds"] * 3 and rows["metric"].tolist() == ["map"] * 3
    text = "\n".join(describe_comparisons(arms))
    assert (
        "**dfr** against plain, m, iEAT planted on set (3 seeds): reduced in the predictions but not in the "
        "representation: d +0.000 [-0.100, +0.100]; prediction shift -0.200 [-0.300, -0.100]; validation map -0.020 "
        "[-0.030, -0.010]."
    ) in text
    assert "**counter** against plain" in text and "reduced in both the predictions and the representation" in text
    assert describe_comparisons(None) == [] and describe_comparisons(arms.iloc[:0]) == []


def test_the_table_rows_and_the_figure(arms):
    frame = comparison_frame(arms)
    assert frame["verdict"].tolist()[0] == "reduced in the predictions but not in the representation"
    fig = comparison_figure(arms)
    assert len(fig.axes) == 2  # the panel and the metric's colour bar
    with pytest.raises(ValueError, match="missing column"):
        comparison_frame(arms.drop(columns="delta"))


@needs_latex
def test_the_comparison_table_compiles_with_latex(arms, tmp_path):
    doc = comparison_latex(arms)
    assert "\\toprule" in doc and "reduced in the predictions but not in the representation" in doc
    compile_latex(doc, tmp_path, "arm_comparison")


def test_the_results_model_and_the_landing_page_carry_a_line_per_arm(arms):
    from test_html_report import FACTS, NO_BTS, TEST, ieat_rows

    from biastransfer.report.results import results_model, validate
    from biastransfer.report.site import _in_short

    tables = {"ieat": ieat_rows(dict(stage="pretrained", d=1.2, p=1e-5, p2=1e-5)), "bts": NO_BTS, "comparison": arms}
    model = results_model(tables, facts=FACTS, tests={"s": [TEST]}, alpha=0.01)
    validate(model)
    assert [r["arm"] for r in model["arms"]] == ["dfr", "counter", "none"]
    assert len(model["comparison_measures"]) == len(arms)
    first = model["arms"][0]
    assert first["verdict"] == "reduced in the predictions but not in the representation"
    assert first["sentence"].startswith(
        "dfr against plain, m, iEAT planted on set (3 seeds): reduced in the predictions"
    )
    assert model["arms_summary"][0] == (
        "dfr against plain (1 model, 1 model and iEAT pair): reduced in the predictions but not in the "
        "representation in 1; validation map changed by -0.020 [-0.030, -0.010]."
    )
    page = _in_short(model, [])
    assert '<ul id="arms">' in page and page.count("<li>dfr against plain (1 model") == 1
    model["arms"][0]["representation"] = "fixed"
    with pytest.raises(ValueError, match="arms/0/representation"):
        validate(model)
    empty = results_model(
        {k: v for k, v in tables.items() if k != "comparison"}, facts=FACTS, tests={"s": [TEST]}, alpha=0.01
    )
    assert empty["arms"] == empty["arms_summary"] == [] and 'id="arms"' not in _in_short(empty, [])


def script(name):
    """A workflow script's module, loaded from workflow/scripts/."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(f"script_{name}", ROOT / "workflow" / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_scripts_write_a_pairs_change_and_the_summary_from_the_runs_files(tmp_path):
    """Two seeds of two arms: the change table from their embeddings (rule comparison_change), then the summary
    from it, the BTS, leakage and link summaries and the runs' metrics.json (rule comparison_summary)."""
    import json

    from test_intervention import TEST, tables

    from biastransfer.embeddings import write_embeddings
    from biastransfer.scripting import run

    plain, arm = tables(0.8, 0.0, seeds=(0, 1))
    files = {"plain": [], "arm": []}
    for name, networks in (("plain", plain), ("arm", arm)):
        for s, e in networks.items():
            files[name].append(str(tmp_path / f"ft-{name}-seed{s}.parquet"))
            write_embeddings(files[name][-1], e.image_ids, e.classes, e.embeddings)
    change = tmp_path / "compare" / "arm_vs_plain" / "set" / "m.csv"
    change.parent.mkdir(parents=True)
    settings = {"tests": TEST, "bootstrap": 200, "ci_level": 0.95, "seed": 0, "permutations": 1000, "alpha": 0.05}
    argv = ["--against_embeddings", *files["plain"], "--arm_embeddings", *files["arm"], "--table", str(change)]
    run(script("comparison_change").main, None, [*argv, "--settings", json.dumps(settings | {"subject": "arm"})])
    seeds = [0, 1]
    pd.DataFrame(
        [
            dict(
                analysis_set="set",
                model="m",
                finetune_dataset=d,
                seed=s,
                kind="intra",
                statistic=r,
                n=5,
                ci_low=r - 0.1,
                ci_high=r + 0.1,
            )
            for d, r in (("plain", 0.9), ("arm", 0.5))
            for s in [*seeds, "pooled"]
        ]
    ).to_csv(tmp_path / "bts.csv", index=False)
    pd.DataFrame(
        [
            dict(
                network="finetuned",
                model="m",
                dataset=d,
                seed=s,
                measure="leakage_embedding",
                threshold="",
                estimate=e,
                ci_low=e - 0.05,
                ci_high=e + 0.05,
                n_images=50,
            )
            for d, e in (("plain", 0.8), ("arm", 0.6))
            for s in seeds
        ]
    ).to_csv(tmp_path / "amplification.csv", index=False)
    pd.DataFrame(
        [
            dict(
                analysis_set="set",
                test="planted",
                role="planted",
                dataset=d,
                network="finetuned",
                model="m",
                seed=s,
                threshold=0.5,
                contrast=c,
                contrast_low=c - 0.05,
                contrast_high=c + 0.05,
                n_images=50,
            )
            for d, c in (("plain", 0.3), ("arm", 0.1))
            for s in [*seeds, "pooled"]
        ]
    ).to_csv(tmp_path / "link.csv", index=False)
    metrics = []
    for d, v in (("plain", 0.8), ("arm", 0.75)):
        for s in seeds:
            metrics.append(tmp_path / "finetune" / d / "m" / f"seed{s}" / "metrics.json")
            metrics[-1].parent.mkdir(parents=True)
            # the run's dataset, model and seed are those of its path (results/finetune/{d}/{m}/seed{s}/)
            metrics[-1].write_text(
                json.dumps(
                    {"dataset": d, "model": "spec name", "seed": s, "metric_name": "map", "metric_value": v + s / 100}
                )
            )
    out = tmp_path / "comparison.csv"
    options = {"pairs": [["arm", "plain"]], "ci_level": 0.95, "alpha": 0.05, "permutations": 1000, "seed": 0}
    where = [f"--{k}" for k in ("bts", "amplification", "link")]
    argv = ["--changes", str(change), "--metrics", *map(str, metrics), "--summary", str(out)]
    argv += [x for k in where for x in (k, str(tmp_path / f"{k[2:]}.csv"))]
    run(script("comparison_summary").main, None, [*argv, "--settings", json.dumps(options)])
    summary = pd.read_csv(out)
    assert list(summary.columns) == list(SUMMARY_COLUMNS)
    assert summary["level"].drop_duplicates().tolist() == ["embedding", "bts", "leakage", "prediction", "accuracy"]
    over = summary[summary["unit"] == "seeds"].set_index("level")
    assert over.loc["bts", "delta"] == pytest.approx(-0.4) and over.loc["leakage", "delta"] == pytest.approx(-0.2)
    assert over.loc["prediction", "delta"] == pytest.approx(-0.2) and over.loc["accuracy", "delta"] == pytest.approx(
        -0.05
    )
    per_seed = summary[(summary["level"] == "embedding") & (summary["unit"] == "images")]
    assert per_seed["verdict"].str.startswith("arm lowered d").all()  # images as units: each seed's change is clear
    assert over.loc["embedding", "verdict"].startswith("no change of d shown")  # 2 seeds as units: a wide t interval
    row = comparison_frame(summary).iloc[0]
    assert (row["arm"], row["test"], row["seeds"], row["metric"]) == ("arm", "planted", "2 seeds", "map")
    assert (row["representation"], row["predictions"]) == ("unchanged", "reduced")
    assert row["verdict"] == "reduced in the predictions but not in the representation"


def test_a_change_of_rounding_alone_is_no_change():
    # each seed's arm differs from its against by the same rounding: a t interval of width 0 that excludes 0
    rows = [("plain", s, 0.3 - 0.1, 0.1, 0.3) for s in (0, 1)] + [("arm", s, 0.4 - 0.2, 0.1, 0.3) for s in (0, 1)]
    over = paired_rows(values(rows), "arm", "plain", "prediction", ci_level=0.95).iloc[-1]
    assert (over["ci_low"], over["ci_high"]) == (0.0, 0.0)
    assert toward_zero(over["value_against"], over["ci_low"], over["ci_high"]) == "unchanged"


def test_the_landing_line_of_an_arm_counts_its_readings_commonest_first(arms):
    # one arm on four models: two fixed in the predictions only, one in both, one in neither
    models = {"dfr": ["m", "n"], "counter": ["o"], "none": ["p"]}
    rows = pd.concat(
        [arms[arms["arm"] == a].assign(model=m) for a, names in models.items() for m in names], ignore_index=True
    )
    lines = arm_lines(overview(rows.assign(arm="dfr")))
    assert lines == [
        "dfr against plain (4 models, 4 model and iEAT pairs): reduced in the predictions but not in the "
        "representation in 2; reduced in both the predictions and the representation in 1; changed in neither the "
        "predictions nor the representation (both intervals hold 0) in 1; validation map changed by -0.020 to +0.000 "
        "across models."
    ]


def test_a_mixed_reading_names_both_levels():
    assert quadrant("increased", "unchanged") == "not changed in the predictions, increased in the representation"
    assert quadrant("untested", "reduced") == "reduced in the predictions, not tested in the representation"


def test_a_comparison_without_the_bootstrap_of_its_change_is_named():
    config = controls([])  # the intervention's automatic pair alone
    config["analysis"]["ieat"]["bootstrap"] = 0
    assert comparison_problems(config) == [
        "analysis.ieat.bootstrap: 0, but the paired change of d between finetuning arms (synthetic_target_counter "
        "against synthetic_target) needs bootstrap replicates"
    ]
    demo = cfg.read_configs([ROOT / "config" / "config.yaml"])
    demo["analysis"]["ieat"]["bootstrap"] = 0
    assert comparison_problems(demo) == []  # no pair: nothing needs it


def test_the_figure_of_the_papers_arms_fits_a_page():
    """The toy paper run's comparisons: two arms of COCO, six models with long names, three iEATs; the points
    spread to the panels' edges, where a label reaches past the axes."""
    from biastransfer.report.style import print_size_problems

    models = ("resnet18", "resnet50", "bit_m_r50x1", "clip_vit_b32", "moco_r50_v1", "simclr_r50_v1")
    parts = []
    for a, arm in enumerate(("coco_independent", "coco_dfr")):
        for k, model in enumerate(models):
            for test in ("car_vs_random", "surfboard_vs_refrigerator", "fashion_vs_random"):
                one = summary_of(arm, (k - 3 - a, k - 2.5), (k / 10 - 0.05 * a, k / 10 + 0.05), -0.01 * k)
                name = one["name"].where(one["level"] == "accuracy", test)
                parts.append(one.assign(against="coco", model=model, name=name))
    fig = comparison_figure(pd.concat(parts, ignore_index=True))
    assert print_size_problems(fig) == []


def test_the_figure_draws_an_estimate_a_rounding_error_beside_its_zero_width_interval():
    """Two arms with identical predictions: the toy paper run's change of 1e-16 outside its [0, 0] interval."""
    one = summary_of("coco_independent", (-0.1, 0.1), (0.0, 0.0), 0.0)
    one.loc[one["level"] == "prediction", "delta"] = 1.1e-16
    fig = comparison_figure(one)
    assert fig.axes
