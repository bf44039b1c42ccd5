"""The link across levels: the contrast of attribute shifts against a brute force, the rank correlation's
known answers (monotone networks, independent ones, too few), and the link script on small files."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from report_site import script as _script
from scipy.stats import spearmanr

from biastransfer.data.attributes import Attributes, write_attributes
from biastransfer.data.splits import Split, write_split
from biastransfer.hashing import file_digest
from biastransfer.predictions import write_predictions
from biastransfer.report.findings import describe_link
from biastransfer.report.findings.link import ACTS
from biastransfer.report.formatting import Significance as FormatSignificance
from biastransfer.report.formatting import adjusted_floor, p_text, prediction_verdict
from biastransfer.report.link_report import link_frame, link_latex
from biastransfer.stats.link import (
    TOGETHER,
    TOO_FEW,
    UNRELATED,
    association_contrast,
    correlation_table,
    family_adjusted,
    linked_test,
    min_networks,
    rank_correlation,
    spearman,
    spearman_interval,
)
from biastransfer.workflow.rules.predictions import LinkSettings
from biastransfer.workflow.rules.report import Significance, TableSettings

NAMES, TASKS = ("person_a", "person_b"), ("car", "surfboard", "stop_sign")


def test_monotone_networks_give_rho_1_with_an_interval_below_1_only_through_its_width():
    d = [0.1, 0.3, 0.35, 0.8, 1.2, 1.3, 1.9, 2.4]
    amp = [-0.02, 0.0, 0.01, 0.03, 0.05, 0.2, 0.21, 0.4]  # any increasing values
    result = rank_correlation(d, amp)
    assert result.estimate == 1 and result.ci_high == 1 and 0 < result.ci_low < 1
    assert result.n == 8 and result.verdict == TOGETHER
    flipped = rank_correlation(d, [-v for v in amp])
    assert (flipped.estimate, flipped.ci_low, flipped.ci_high) == (-1, -1, -result.ci_low)


def test_too_few_networks_to_tell_is_decided_from_the_intervals_width():
    need = min_networks(0.95)
    assert need == 6  # at 5 networks even a perfect agreement's interval holds 0
    assert spearman_interval(1.0, need - 1)[0] <= 0 < spearman_interval(1.0, need)[0]
    three = rank_correlation([1, 2, 3], [1, 2, 3])
    assert three.verdict.startswith(TOO_FEW) and "3 networks" in three.verdict and math.isnan(three.ci_low)
    assert rank_correlation(range(5), range(5)).verdict.startswith(TOO_FEW)
    assert min_networks(0.99) > need > min_networks(0.8)


def test_independent_measures_over_many_networks_give_an_interval_that_holds_0():
    rng = np.random.default_rng(3)
    held = [
        (r.ci_low <= 0 <= r.ci_high, r.verdict == UNRELATED)
        for r in (rank_correlation(rng.normal(size=40), rng.normal(size=40)) for _ in range(200))
    ]
    covered = np.mean([h for h, _ in held])
    assert covered >= 0.9 and all(v for h, v in held if h)


@pytest.mark.filterwarnings("ignore:An input array is constant")
@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31), st.integers(4, 40), st.booleans())
def test_spearman_matches_scipy_and_its_interval_holds_it(seed, n, ties):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=n), rng.normal(size=n) + rng.normal() * np.arange(n) / n
    if ties:
        x, y = np.round(x), np.round(y, 1)
    expected = spearmanr(x, y)[0]
    result = rank_correlation(x, y)
    if np.isnan(expected):
        assert np.isnan(result.estimate)
        return
    assert result.estimate == pytest.approx(expected, abs=1e-12) and result.ci_low <= result.estimate <= result.ci_high
    swapped = rank_correlation(y, x)
    assert (swapped.estimate, swapped.ci_low, swapped.ci_high) == pytest.approx(
        (result.estimate, result.ci_low, result.ci_high)
    )


def test_a_constant_measure_has_no_correlation_and_bad_shapes_are_named():
    assert "no rank correlation defined" in rank_correlation(range(8), [1.0] * 8).verdict
    assert math.isnan(spearman([1, 2, 3], [2, 2, 2]))
    with pytest.raises(ValueError, match=r"x and y must be 1-D of the same length"):
        rank_correlation([1, 2, 3], [1, 2])
    # networks without a value are left out, and counted out of n
    assert rank_correlation([1, 2, np.nan, 4, 5, 6, 7], [1, 2, 3, 4, 5, 6, 7]).n == 6


def test_which_side_of_an_ieat_are_the_objects_of_the_finetuning_task():
    test = {"X": "person_a", "Y": "person_b", "A": "surfboard", "B": "car"}
    assert linked_test(test, NAMES, TASKS) == ("person_a", "surfboard", "car")
    flipped = {"X": "car", "Y": "surfboard", "A": "person_b", "B": "person_a"}
    assert linked_test(flipped, NAMES, TASKS) == ("person_b", "car", "surfboard")
    assert linked_test({**test, "B": "refrigerator"}, NAMES, TASKS) is None


def _contrast(A, T, P, attribute: str, first: str, second: str, **options):
    """association_contrast of ``attribute`` towards ``first`` over ``second``, over NAMES and TASKS."""
    return association_contrast(
        A, T, P, attribute=attribute, first=first, second=second, attribute_names=NAMES, task_names=TASKS, **options
    )


def _brute_contrast(A, T, P, a, i, j):
    """shift(a, i) - shift(a, j) with shift = delta_at minus the other attribute's delta, by loops."""

    def delta(group, t):
        rows = [k for k in range(len(A)) if A[k, group]]
        return sum(P[k, t] for k in rows) / len(rows) - sum(T[k, t] for k in rows) / len(rows)

    def shift(t):
        return delta(a, t) - delta(1 - a, t)

    return shift(i) - shift(j)


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    A = np.eye(2, dtype=int)[a]
    T = (rng.random((n, 3)) < 0.4).astype(int)
    return a, A, T


def test_the_contrast_is_the_difference_of_the_two_objects_shifts():
    rng = np.random.default_rng(1)
    a, A, T = _data(n=12, seed=1)
    P = (rng.random(T.shape) < 0.5).astype(int)
    got = _contrast(A, T, P, "person_b", "stop_sign", "car", replicates=200)
    assert got.estimate == pytest.approx(_brute_contrast(A, T, P, 1, 2, 0))
    assert got.ci_low <= got.estimate <= got.ci_high and got.n_images == 12 and got.n_seeds == 1


def test_a_planted_prediction_bias_is_found_and_exact_predictions_show_none():
    a, A, T = _data()
    towards = T.copy()
    towards[a == 0, 1] = 1  # surfboard predicted for every person_a image
    found = _contrast(A, T, towards, "person_a", "surfboard", "car", replicates=300)
    assert found.ci_low > 0
    exact = _contrast(A, T, [T, T], "person_a", "surfboard", "car", replicates=300)
    assert exact.estimate == 0 and exact.ci_low == exact.ci_high == 0 and exact.n_seeds == 2
    with pytest.raises(ValueError, match=r"task 'refrigerator' is not one of car, surfboard, stop_sign"):
        _contrast(A, T, T, "person_a", "refrigerator", "car")


def test_the_contrasts_p_inverts_its_interval_and_has_the_bootstraps_floor():
    a, A, T = _data()
    towards = T.copy()
    towards[a == 0, 1] = 1
    found = _contrast(A, T, towards, "person_a", "surfboard", "car", replicates=300)
    assert found.pvalue == found.pvalue_floor == pytest.approx(2 / 301)  # every replicate above 0
    rng = np.random.default_rng(3)
    for _ in range(5):  # p < 0.05 where the 95% interval excludes 0, up to the interpolation of its quantiles
        result = _contrast(A, T, (rng.random(T.shape) < 0.5).astype(int), "person_a", "surfboard", "car")
        assert result.pvalue_floor <= result.pvalue <= 1
        if abs(result.pvalue - 0.05) > 0.005:
            assert (result.pvalue < 0.05) == (result.ci_low > 0 or result.ci_high < 0)


def _primary_rows(p: dict) -> pd.DataFrame:
    """Link rows with the given contrast p: {(dataset, network, model, test, seed): p}."""
    return pd.DataFrame(
        [
            {"analysis_set": "s", "test": t, "dataset": d, "network": n, "model": m, "seed": seed, "contrast_pvalue": v}
            for (d, n, m, t, seed), v in p.items()
        ]
    )


def test_the_primary_contrasts_of_one_network_family_are_holm_adjusted_together():
    table = family_adjusted(
        _primary_rows(
            {
                ("d", "finetuned", "m", "t1", "0"): 0.001,  # a seed of a pooled family: exploratory
                ("d", "finetuned", "m", "t1", "pooled"): 0.01,
                ("d", "finetuned", "m", "t2", "pooled"): 0.04,
                ("d", "finetuned", "m", "t3", "pooled"): 0.03,
                ("d", "scratch", "m", "t1", "0"): 0.04,  # one seed: its own row is primary, its own family
                ("e", "finetuned", "m", "t1", "pooled"): math.nan,  # not estimable: no test, outside the count
            }
        )
    )
    assert table["primary"].tolist() == [False, True, True, True, True, True]
    # Holm by hand over 0.01, 0.03, 0.04: 3 x 0.01 = 0.03, max(0.03, 2 x 0.03) = 0.06, max(0.06, 1 x 0.04) = 0.06
    assert table["contrast_pvalue_holm"].tolist()[1:5] == pytest.approx([0.03, 0.06, 0.06, 0.04])
    # BH by hand: 0.04 x 3/3 = 0.04, 0.03 x 3/2 = 0.045 -> 0.04 (step-up minimum), 0.01 x 3 = 0.03
    assert table["contrast_pvalue_bh"].tolist()[1:4] == pytest.approx([0.03, 0.04, 0.04])
    assert np.isnan(table.loc[0, "contrast_pvalue_holm"]) and np.isnan(table.loc[5, "contrast_pvalue_holm"])
    assert table["family_size"].tolist()[1:] == [3, 3, 3, 1, 0]


def test_a_planted_pair_stays_significant_after_adjustment_and_a_null_pair_does_not():
    """At the demo's size (250 test images with a figure, 1000 replicates), a network family with two declared
    pairs: surfboard pushed towards person_a in half of its images against car, and refrigerator against
    stop_sign predicted as the truth with chance errors on both attributes."""
    tasks = ("car", "surfboard", "stop_sign", "refrigerator")
    rng = np.random.default_rng(4)
    a = rng.integers(0, 2, 250)
    A, T = np.eye(2, dtype=int)[a], (rng.random((250, 4)) < 0.4).astype(int)
    P = np.where(rng.random(T.shape) < 0.1, 1 - T, T)  # chance errors, the same for both attributes
    P[(a == 0) & (rng.random(250) < 0.5), 1] = 1
    rows = []
    for test, first, second in (("planted", "surfboard", "car"), ("null", "refrigerator", "stop_sign")):
        result = association_contrast(
            A,
            T,
            P,
            attribute="person_a",
            first=first,
            second=second,
            attribute_names=NAMES,
            task_names=tasks,
            replicates=1000,
        )
        rows.append(
            {
                "analysis_set": "s",
                "test": test,
                "dataset": "d",
                "network": "finetuned",
                "model": "m",
                "seed": "0",
                "contrast_pvalue": result.pvalue,
            }
        )
    adjusted = family_adjusted(pd.DataFrame(rows)).set_index("test")["contrast_pvalue_holm"]
    assert adjusted["planted"] < 0.01 <= adjusted["null"]


def _files(tmp_path, a, T, scores_by_stage):
    ids = [f"d-test-{i:04d}" for i in range(len(a))]
    labels = [[t for t, on in zip(TASKS, row) if on] + ["person"] for row in T]
    split = tmp_path / "test.parquet"
    write_split(
        split, Split("d", "test", (*TASKS, "person"), pd.DataFrame({"image_id": ids, "path": ids, "labels": labels}))
    )
    frame = pd.DataFrame({"image_id": ids, "attribute": [NAMES[k] for k in a], "source": "drawn"})
    write_attributes(tmp_path / "attrs.parquet", Attributes("d", "test", file_digest(split), NAMES, ("person",), frame))
    preds = []
    for stage, scores in scores_by_stage.items():
        preds.append(tmp_path / f"{stage}.parquet")
        meta = {"split": "test", "split_sha256": file_digest(split), "stage": stage, "model": "m"}
        write_predictions(preds[-1], ids, TASKS, scores, meta)
    return split, tmp_path / "attrs.parquet", preds


def _summaries(tmp_path, stages):
    """ieat.csv, ieat_change.csv and amplification_terms.csv rows for the test t (person_a: surfboard vs car)."""
    ieat = pd.DataFrame(
        [
            {
                "analysis_set": "s",
                "model": "m",
                "stage": s,
                "test": "t",
                "effect_size": d,
                "ci_low": d - 0.3,
                "ci_high": d + 0.3,
            }
            for s, d in stages.items()
        ]
    )
    change = pd.DataFrame(
        [
            {
                "analysis_set": "s",
                "model": "m",
                "finetune_dataset": "d",
                "seed": float(k),
                "test": "t",
                "delta_d": 0.1 * k,
                "ci_low": -0.2,
                "ci_high": 0.3,
            }
            for k in range(3)
        ]
    )
    terms = pd.DataFrame(
        [
            {
                "network": "finetuned",
                "model": "m",
                "dataset": "d",
                "seed": "1",
                "measure": "directional",
                "threshold": "0.5",
                "attribute": "person_a",
                "task": "car",
                "term": 0.01,
                "ci_low": 0.0,
                "ci_high": 0.02,
                "shift": 0.5,
                "shift_low": 0.4,
                "shift_high": 0.6,
            }
        ]
    )
    paths = {}
    for name, frame in (("ieat", ieat), ("change", change), ("terms", terms)):
        paths[name] = str(tmp_path / f"{name}.csv")
        frame.to_csv(paths[name], index=False)
    return paths


@pytest.fixture(scope="module")
def linked(tmp_path_factory):
    """The link script's table and correlations for three finetuned seeds and a scratch network of model m."""
    tmp_path = tmp_path_factory.mktemp("link")
    a, A, T = _data(n=120)
    rng = np.random.default_rng(2)
    stages = {f"ft-d-seed{k}": 0.2 + 0.4 * k for k in range(3)} | {"scratch-d-seed0": -0.5, "pretrained": 0.9}
    # the predictions push surfboard towards person_a more the larger the network's d
    scores = {
        s: np.clip(T * 0.8 + 0.1 + np.outer(a == 0, [0, 0.3 * (1 + d), 0]) * (rng.random(len(a)) < 0.5)[:, None], 0, 1)
        for s, d in stages.items()
        if s != "pretrained"
    }
    split, attrs, preds = _files(tmp_path, a, T, scores)
    paths = _summaries(tmp_path, stages)
    tests = {
        "s": [
            {"name": "t", "X": "person_a", "Y": "person_b", "A": "surfboard", "B": "car", "role": "planted"},
            {"name": "other", "X": "person_a", "Y": "person_b", "A": "surfboard", "B": "refrigerator"},
        ]
    }
    out = {"table": str(tmp_path / "link.csv"), "correlation": str(tmp_path / "corr.csv")}
    settings = LinkSettings(tests=tests, threshold=0.5, bootstrap=200, ci_level=0.95, seed=0)
    inputs = (paths["ieat"], paths["change"], paths["terms"], [str(split)], [str(attrs)], [str(p) for p in preds])
    _script("link").main(*inputs, settings=settings, **out)
    return out


def test_the_link_script_puts_each_networks_levels_side_by_side(linked):
    out = linked
    table = pd.read_csv(out["table"], keep_default_na=False, na_values=[""])
    assert set(table["test"]) == {"t"}  # refrigerator is no task of d: not linked
    assert sorted(zip(table["network"], table["seed"].astype(str))) == [
        ("finetuned", "0"),
        ("finetuned", "1"),
        ("finetuned", "2"),
        ("finetuned", "pooled"),
        ("scratch", "0"),
    ]
    rows = table.set_index(["network", "seed"])
    assert rows.loc[("finetuned", "1"), "d"] == pytest.approx(0.6) and (table["d_pretrained"] == 0.9).all()
    assert rows.loc[("finetuned", "2"), "delta_d"] == pytest.approx(0.2) and np.isnan(
        rows.loc[("scratch", "0"), "delta_d"]
    )
    assert np.isnan(rows.loc[("finetuned", "pooled"), "d"])  # no per-seed d for the pooled predictions
    # the terms are read from the amplification terms; a term they lack is empty
    assert rows.loc[("finetuned", "1"), "shift_second"] == 0.5 and np.isnan(
        rows.loc[("finetuned", "0"), "shift_second"]
    )
    assert (table["contrast_low"] <= table["contrast"]).all() and (table["contrast"] <= table["contrast_high"]).all()
    corr = pd.read_csv(out["correlation"]).set_index("embedding")
    assert corr.loc["d", "n"] == 4 and corr.loc["delta_d", "n"] == 3
    assert corr["verdict"].str.startswith(TOO_FEW).all()
    assert corr.loc["d", "estimate"] == pytest.approx(
        spearman(
            rows.loc[[("finetuned", "0"), ("finetuned", "1"), ("finetuned", "2"), ("scratch", "0")], "d"],
            rows.loc[[("finetuned", "0"), ("finetuned", "1"), ("finetuned", "2"), ("scratch", "0")], "contrast"],
        )
    )


def test_the_correlation_table_reads_the_networks_not_the_pooled_rows():
    rows = pd.DataFrame(
        {
            "analysis_set": "s",
            "test": "t",
            "role": "planted",
            "dataset": "d",
            "network": "finetuned",
            "seed": [*map(str, range(7)), "pooled"],
            "d": [*range(7), 100.0],
            "delta_d": [*range(7), np.nan],
            "contrast": [*(0.1 * k for k in range(7)), -5.0],
        }
    )
    corr = correlation_table(rows).set_index("embedding")
    assert corr.loc["d", "n"] == 7 and corr.loc["d", "estimate"] == 1 and corr.loc["d", "verdict"] == TOGETHER


def test_the_report_shows_the_link_as_a_table_a_figure_and_in_words(linked, tmp_path):
    table = pd.read_csv(linked["table"], keep_default_na=False, na_values=[""])
    corr = pd.read_csv(linked["correlation"])
    frame = link_frame(table, "d", 0.01, "holm")
    assert len(frame) == 5 and link_frame(table, "other", 0.01, "holm").empty
    # the verdict and the adjusted p of the primary rows only (the pooled finetuned family, the one scratch seed)
    judged = frame[frame["verdict"] != ""]
    assert sorted(zip(judged["network"], judged["seed"].astype(str))) == [("finetuned", "pooled"), ("scratch", "0")]
    assert frame.loc[frame["verdict"] == "", "p_adjusted"].isna().all()
    assert (judged["p_adjusted"] == judged["p"]).all()  # one declared pair linked per family: nothing to adjust
    latex = link_latex(table, corr, "d", 0.01, "holm")
    assert "Spearman rho = " in latex and "too few networks to tell" in latex and "95\\% interval" in latex
    assert "Holm-adjusted over the declared pairs" in latex and "adj. $p$" in latex
    assert "no iEAT of this run" in link_latex(table, corr, "other", 0.01, "holm")
    main = _script("make_tables").main
    main(
        TableSettings(kind="link", significance=Significance(alpha=0.01, adjust="holm")),
        linked["table"],
        str(tmp_path / "t.tex"),
        dataset="d",
        correlation=linked["correlation"],
        csv=str(tmp_path / "t.csv"),
    )
    assert len(pd.read_csv(tmp_path / "t.csv")) == 5
    _script("plot_link").main(
        linked["table"], linked["correlation"], "d", str(tmp_path / "f.png"), str(tmp_path / "f.pdf")
    )
    assert (tmp_path / "f.png").stat().st_size > 0
    text = "\n".join(describe_link(table, corr, 0.01))
    fine = table[(table["network"] == "finetuned") & (table["seed"] == "pooled")].iloc[0]
    word = prediction_verdict(fine["contrast"], fine["contrast_pvalue_holm"], FormatSignificance(0.01))
    assert f"Finetuned m (d, 3 seeds pooled) {ACTS[word]} the t association" in text
    bound = adjusted_floor(fine["contrast_pvalue"], fine["contrast_pvalue_floor"], fine["contrast_pvalue_holm"])
    assert f"Holm-adjusted {p_text(fine['contrast_pvalue_holm'], bound)} over the network's 1 pair;" in text
    assert "Scratch m (d, seed 0)" in text and "d 0.20 to 1.00 over its seeds (pretrained d = 0.90)" in text
    assert text.count("too few networks to tell") == 2 and describe_link(None, None, 0.01) == []
    # a scratch network that amplifies the pair against its embedding's large d: the levels' disagreement explained
    scratch = table["network"] == "scratch"
    against = table.assign(
        d=np.where(scratch, -0.8, table["d"]),
        contrast=np.where(scratch, 0.1, table["contrast"]),
        contrast_pvalue_holm=np.where(scratch, 0.002, table["contrast_pvalue_holm"]),
    )
    explained = [line for line in describe_link(against, corr, 0.01) if "disagree in sign" in line]
    assert len(explained) == 1 and explained[0].startswith("- Scratch m (d, seed 0) amplifies the t association")
    # an adjusted p at alpha or above is no verdict, whatever the unadjusted interval
    near = against.assign(contrast_pvalue_holm=np.where(scratch, 0.02, against["contrast_pvalue_holm"]))
    assert not [line for line in describe_link(near, corr, 0.01) if "disagree in sign" in line]
    assert "disagree in sign" not in text
