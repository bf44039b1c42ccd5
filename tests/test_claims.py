"""Claims about groups of models with models as units (biastransfer.stats.claims): exact sign flips against
brute force, the floors and the models a claim needs, planted and null groups, Holm over claims, bad input."""

import itertools
import re
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from test_tables import compile_latex, needs_latex

from biastransfer.stats.attribution import Design
from biastransfer.stats.claims import (
    claims_table,
    compare_paired,
    min_paired_pvalue,
    models_needed,
    paired_pvalues,
    sign_flips,
)

FAST = Design(simulations=300)


def test_sign_flip_pvalues_match_brute_force():
    assert paired_pvalues([1.0, 2.0, 3.0], sign_flips(3)[0], "greater")[0] == 1 / 8
    assert paired_pvalues([1.0, 2.0, 3.0], sign_flips(3)[0], "two-sided")[0] == 2 / 8
    assert paired_pvalues([1.0, 2.0, 3.0], sign_flips(3)[0], "less")[0] == 1.0
    d = np.random.default_rng(0).normal(0.3, 1, size=7)
    sums = [np.dot(d, s) for s in itertools.product((1, -1), repeat=7)]
    t, eps = d.sum(), 1e-9  # the observed flip's sum equals t up to rounding
    for alternative, extreme in (
        ("greater", lambda s: s >= t - eps),
        ("less", lambda s: s <= t + eps),
        ("two-sided", lambda s: abs(s) >= abs(t) - eps),
    ):
        brute = np.mean([extreme(s) for s in sums])
        assert paired_pvalues(d, sign_flips(7)[0], alternative)[0] == pytest.approx(brute)


def test_floors_and_the_models_a_claim_needs():
    assert min_paired_pvalue(3, "greater") == 1 / 8 and min_paired_pvalue(3, "two-sided") == 1 / 4
    assert models_needed(0.05, kind="paired", alternative="greater") == 5  # 1/16 = 0.0625, 1/32 < 0.05
    assert models_needed(0.05, kind="groups", alternative="greater") == 4  # 3 vs 3: 1/20 is not below 0.05
    assert models_needed(0.05, kind="groups", alternative="two-sided") == 4  # 3 vs 3: 2/20; 4 vs 4: 2/70
    flips, method = sign_flips(20, permutations=1000, seed=1)
    assert method == "permutation" and flips.shape == (1000, 20) and (flips[0] == 1).all()


def test_paired_interval_and_detectable_difference():
    x = np.array([1.0, 1.4, 0.9, 1.6, 1.2, 1.1])
    y = x - np.array([0.5, 0.7, 0.4, 0.9, 0.6, 0.5])
    r = compare_paired(x, y, replace(FAST, alternative="greater"))
    assert r.method == "exact" and r.permutations == 64 and r.pvalue == 1 / 64 == r.min_pvalue
    assert r.ci_low < r.mean_difference < r.ci_high and r.mean_difference == pytest.approx(0.6)
    assert 0 < r.detectable_difference < np.inf and r.detectable_shift > 0


def _claims(rng, shift, n=6, paired_shift=0.0, pairs=8):
    a, b = rng.normal(shift, 1, n), rng.normal(0, 1, n)
    x = rng.normal(0, 1, pairs)
    return [
        {"name": "retention", "kind": "groups", "direction": "greater", "x": a, "y": b, "measure": "bts"},
        {
            "name": "change",
            "kind": "paired",
            "direction": "greater",
            "x": x + paired_shift + rng.normal(0, 0.3, pairs),
            "y": x,
            "measure": "delta_d",
        },
    ]


def test_planted_differences_are_supported_and_reversed_ones_contradicted():
    rng = np.random.default_rng(3)
    table = claims_table(_claims(rng, shift=3.0, paired_shift=1.0), FAST).set_index("claim")
    assert list(table["verdict"]) == ["supported", "supported"]
    assert (table["p_adjusted"] >= table["p"]).all() and table.loc["retention", "method"] == "exact"
    reversed_claims = [{**c, "direction": "less"} for c in _claims(np.random.default_rng(3), 3.0, paired_shift=1.0)]
    assert list(claims_table(reversed_claims, FAST)["verdict"]) == ["contradicted", "contradicted"]
    # "x and y differ" is supported either way round, and has no opposite to contradict it
    two_sided = [{**c, "direction": "two-sided"} for c in reversed_claims]
    table = claims_table(two_sided, FAST)
    assert list(table["verdict"]) == ["supported", "supported"] and table["p_opposite"].isna().all()


def test_too_few_models_are_not_testable_whatever_the_data():
    claims = [
        {"name": "few", "kind": "groups", "direction": "greater", "x": [5.0, 6.0], "y": [0.0, 0.1]},
        {"name": "three", "kind": "groups", "direction": "greater", "x": [5.0, 6.0, 7.0], "y": [0.0, 0.1]},
        {"name": "pairs", "kind": "paired", "direction": "greater", "x": [5.0, 6.0, 7.0], "y": [0.0, 0.1, 0.2]},
        {"name": "one", "kind": "groups", "direction": "greater", "x": [5.0], "y": [0.0, 0.1]},  # no test at all
    ]
    verdicts = list(claims_table(claims, FAST)["verdict"])
    # four claims: each is judged at alpha / 4 = 0.0125, Holm's first step (4 vs 4: 1/70; 5 vs 5: 1/252)
    assert verdicts == [
        "not testable with 2 models per group; at least 5 are needed",
        "not testable with 3 and 2 models per group; at least 5 are needed",
        "not testable with 3 paired models; at least 7 are needed",
        "not testable with 1 and 2 models per group; at least 5 are needed",
    ]
    assert list(claims_table(claims[:1], FAST)["verdict"]) == [
        "not testable with 2 models per group; at least 4 are needed"  # alone, at alpha itself
    ]


def test_without_a_true_difference_a_claim_is_rarely_supported():
    """Groups drawn from one distribution: supported in at most 8% of 50 seeded runs at alpha 0.05, and
    contradicted as rarely; a testable claim that is not supported states its detectable difference."""
    tables = [claims_table(_claims(np.random.default_rng(100 + i), 0.0), Design(simulations=100)) for i in range(50)]
    verdicts = np.array([list(t["verdict"]) for t in tables])
    for column in range(2):
        assert np.mean(verdicts[:, column] == "supported") <= 0.08
        assert np.mean(verdicts[:, column] == "contradicted") <= 0.08
    quiet = next(v for v in verdicts[:, 0] if v.startswith("not supported"))
    assert "would be found with 80% power" in quiet


def test_bad_claims_are_named():
    good = {"name": "c", "kind": "groups", "direction": "greater", "x": [1.0, 2.0, 3.0], "y": [0.0, 1.0, 2.0]}
    with pytest.raises(ValueError, match="claim 'c': kind"):
        claims_table([{**good, "kind": "pairs"}])
    with pytest.raises(ValueError, match="claim 'c': direction"):
        claims_table([{**good, "direction": "bigger"}])
    with pytest.raises(ValueError, match="shapes"):
        compare_paired([1.0, 2.0, 3.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="non-finite"):
        compare_paired([1.0, np.nan, 3.0], [1.0, 2.0, 3.0])


def _ieat_rows(model, test, d, *, stage="pretrained", dataset=None, seed=None, ci=(0.5, 1.5)):
    return {
        "analysis_set": "s",
        "model": model,
        "stage": stage,
        "finetune_dataset": dataset,
        "seed": seed,
        "test": test,
        "effect_size": d,
        "ci_low": ci[0],
        "ci_high": ci[1],
    }


def _change_rows(model, test, delta, dataset, seed, p=0.5):
    return {
        "analysis_set": "s",
        "model": model,
        "finetune_dataset": dataset,
        "seed": seed,
        "test": test,
        "delta_d": delta,
        "pvalue_holm": p,
        "pvalue_bh": p,
    }


def _bts_rows(model, dataset, kind, values):
    return [
        {"analysis_set": "s", "model": model, "finetune_dataset": dataset, "seed": seed, "kind": kind, "statistic": v}
        for seed, v in zip(["0", "1", "pooled"], values)
    ]


def test_each_models_value_is_its_seeds_mean_with_their_range():
    from biastransfer.stats.claim_measures import model_value

    ieat = pd.DataFrame(
        [
            _ieat_rows("m", "t", 0.2, ci=(-0.3, 0.7)),
            _ieat_rows("m", "u", 1.0, ci=(0.4, 1.6)),
            _ieat_rows("m", "t", 0.9, stage="ft-c-seed0", dataset="c", seed=0.0, ci=(0.3, 1.5)),
            _ieat_rows("m", "t", 0.1, stage="ft-c-seed1", dataset="c", seed=1.0, ci=(-0.4, 0.6)),
            _ieat_rows("m", "u", 1.1, stage="ft-c-seed0", dataset="c", seed=0.0),
            _ieat_rows("m", "u", 1.2, stage="ft-c-seed1", dataset="c", seed=1.0),
        ]
    )
    change = pd.DataFrame(
        [
            _change_rows("m", "t", 0.7, "c", 0),
            _change_rows("m", "t", -0.1, "c", 1),
            _change_rows("m", "u", 0.1, "c", 0),
            _change_rows("m", "u", 0.2, "c", 1, p=0.001),
        ]
    )
    bts = pd.DataFrame(_bts_rows("m", "c", "intra", [0.8, 0.6, 0.75]))
    summaries = {"ieat": ieat, "change": change, "bts": bts}
    common = dict(analysis_set="s", model="m", dataset="c")
    d = model_value("d", summaries, test="t", **common)
    assert d == {"value": pytest.approx(0.5), "value_min": 0.1, "value_max": 0.9, "n_seeds": 2}
    assert model_value("d", summaries, test="t", stage="pretrained", **common)["value"] == 0.2
    # seed 0: (0.7 + 0.1) / 2; seed 1: (-0.1 + 0.2) / 2
    assert model_value("change_d", summaries, **common)["value"] == pytest.approx((0.4 + 0.05) / 2)
    assert model_value("abs_change_d", summaries, test="t", **common)["value"] == pytest.approx(0.4)
    # t gains an association in seed 0 (interval now excludes 0); u's change is significant in seed 1
    new = model_value("new_associations", summaries, alpha=0.05, **common)
    assert new == {"value": 0.5, "value_min": 0.5, "value_max": 0.5, "n_seeds": 2}
    assert model_value("bts_intra", summaries, **common) == {
        "value": 0.75,
        "value_min": 0.6,
        "value_max": 0.8,
        "n_seeds": 2,
    }
    with pytest.raises(ValueError, match="model 'other'.*no rows"):
        model_value("d", summaries, test="t", **{**common, "model": "other"})


def _arms_summaries(rng, n=5):
    """Pretrained iEATs of two arms of n networks: the planted pair's d mirrored between arms, the control
    pair's d alike in both (the controls overlay's planted and mirrored networks, simulated)."""
    rows = []
    for arm, sign in (("planted", 1), ("mirrored", -1)):
        for i in range(n):
            rows.append(_ieat_rows(f"{arm}{i}", "planted_pair", sign * 1.2 + rng.normal(0, 0.15)))
            rows.append(_ieat_rows(f"{arm}{i}", "control_pair", rng.normal(0, 0.3)))
    empty = pd.DataFrame(columns=["analysis_set", "model", "finetune_dataset", "seed", "kind", "statistic"])
    return {"ieat": pd.DataFrame(rows), "change": empty, "bts": empty}, {
        arm: [f"{arm}{i}" for i in range(n)] for arm in ("planted", "mirrored")
    }


#: A claim that the planted arm's pretrained d is greater than the mirrored arm's (a test adds its name and iEAT).
ARMS_CLAIM = {
    "measure": "d",
    "analysis_set": "s",
    "stage": "pretrained",
    "compare": "groups",
    "x": "planted",
    "y": "mirrored",
    "dataset": None,
    "models": [],
    "direction": "greater",
}


def _arms_claims(groups: dict, tests: list) -> dict:
    """The claims section over the arms' ``groups`` with these ``tests``."""
    return {
        "groups": groups,
        "alpha": 0.05,
        "permutations": 100_000,
        "level": 0.95,
        "power": 0.8,
        "simulations": 300,
        "seed": 0,
        "tests": tests,
    }


def test_groups_from_the_control_arms_support_the_planted_pair_only():
    from biastransfer.stats.claim_measures import claims_from_summaries

    summaries, groups = _arms_summaries(np.random.default_rng(0))
    tests = [
        {**ARMS_CLAIM, "name": "planted", "test": "planted_pair"},
        {**ARMS_CLAIM, "name": "control", "test": "control_pair"},
    ]
    claims = _arms_claims(groups, tests)
    table, values = claims_from_summaries(claims, summaries, datasets=[])
    verdicts = dict(zip(table["claim"], table["verdict"]))
    assert verdicts["planted"] == "supported" and not verdicts["control"].startswith(("supported", "contradicted"))
    assert table.loc[table["claim"] == "planted", "p"].item() == pytest.approx(1 / 252)  # the exact floor, 5 vs 5
    assert len(values) == 20 and set(values["side"]) == {"x", "y"}


def _paper(edit):
    import copy
    from pathlib import Path

    from biastransfer.workflow.config import check_config, read_configs

    config = copy.deepcopy(read_configs([Path(__file__).parents[1] / "config" / "paper.yaml"]))
    edit(config)
    check_config(config)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda c: c["claims"]["groups"]["self_supervised"].append("vit_huge"),
            "claims.groups.self_supervised: unknown model 'vit_huge'",
        ),
        (
            lambda c: c["claims"]["groups"]["supervised_in1k"].append("moco_r50_v1"),
            "claims.groups.self_supervised: model 'moco_r50_v1' is also in group 'supervised_in1k'",
        ),
        (
            lambda c: c["claims"]["tests"][0].update(x="supervised"),
            "claims.tests.in21k_retains_more_coco.x: unknown group 'supervised'",
        ),
        (
            lambda c: c["claims"]["tests"][0].update(dataset="imagenet"),
            "claims.tests.in21k_retains_more_coco.dataset: 'imagenet' is not in finetune.datasets",
        ),
        (
            lambda c: c["claims"]["tests"][0].update(measure="d"),
            "claims.tests.in21k_retains_more_coco.test: measure d needs one iEAT test",
        ),
        (
            lambda c: c["claims"]["tests"][0].update(test="sports_vs_car"),
            "claims.tests.in21k_retains_more_coco.test: 'sports_vs_car' is not an iEAT test of analysis_sets.coco",
        ),
        (
            lambda c: c["analysis"]["ieat"].update(bootstrap=0),
            "claims.tests.larger_dataset_more_new_associations.measure: new_associations needs the change of d",
        ),
        (lambda c: c["claims"]["tests"][4].update(x="coco"), "larger_dataset_more_new_associations: x and y are both"),
        (
            lambda c: c["claims"]["tests"][4].update(models=["vision"]),
            "claims.tests.larger_dataset_more_new_associations.models: unknown group 'vision'",
        ),
    ],
)
def test_a_bad_claim_is_named_before_any_job(edit, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        _paper(edit)


def test_the_papers_claims_check():
    _paper(lambda c: None)


def _arms_table():
    from biastransfer.stats.claim_measures import claims_from_summaries

    summaries, groups = _arms_summaries(np.random.default_rng(0))
    groups["few"] = ["planted0", "planted1"][:1]
    groups["planted"] = groups["planted"][1:]
    claim = {**ARMS_CLAIM, "test": "planted_pair"}
    tests = [
        {**claim, "name": "planted_pair_mirrored"},
        {**claim, "name": "one_model", "x": "few"},
        {**claim, "name": "control_pair_differs", "test": "control_pair", "direction": "two-sided"},
    ]
    claims = _arms_claims(groups, tests)
    return claims_from_summaries(claims, summaries, datasets=[])


@needs_latex
def test_the_claims_table_compiles_inside_its_page_and_the_figure_prints(tmp_path):
    from biastransfer.report.claims import claims_figure, claims_frame, claims_latex
    from biastransfer.report.style import print_size_problems

    table, values = _arms_table()
    compile_latex(claims_latex(table), tmp_path, "claims")
    assert list(claims_frame(table).columns[:2]) == ["verdict", "claim"]
    fig = claims_figure(values, table)
    assert print_size_problems(fig) == [] and len([a for a in fig.axes if a.has_data()]) == 3
    # six claims with the paper's long names and verdicts still print at full size on one page width
    long = {c: f"{c}_with_a_name_as_long_as_the_papers_{i}" for i, c in enumerate(table["claim"])}
    six = pd.concat([table, table.assign(claim=table["claim"] + "_again")]).replace({"claim": long})
    six_values = pd.concat([values, values.assign(claim=values["claim"] + "_again")]).replace({"claim": long})
    assert print_size_problems(claims_figure(six_values, six)) == []


def test_the_figure_joins_each_model_across_the_datasets_of_a_paired_claim():
    from biastransfer.report.claims import claims_figure

    models = ["m1", "m2", "m3"]
    values = pd.DataFrame(
        [
            {
                "claim": c,
                "side": side,
                "label": d,
                "model": m,
                "dataset": d,
                "value": v,
                "value_min": v - 0.1,
                "value_max": v + 0.1,
                "n_seeds": 2,
            }
            for c in ("paired", "grouped")
            for side, d in (("x", "coco"), ("y", "openimages"))
            for m, v in zip(models, (0.2, 0.5, 0.9))
        ]
    )
    table = pd.DataFrame(
        [
            {"claim": c, "kind": k, "x": "coco", "y": "openimages", "measure": "d", "verdict": "not supported"}
            for c, k in (("paired", "paired"), ("grouped", "groups"))
        ]
    )
    paired, grouped = claims_figure(values, table).axes[:2]
    joins = [
        line for line in paired.lines if len(line.get_xdata()) == 2 and line.get_xdata()[0] < 0.5 < line.get_xdata()[1]
    ]
    assert len(joins) == 3 and sorted(line.get_ydata()[0] for line in joins) == [0.2, 0.5, 0.9]
    assert not [
        line for line in grouped.lines if len(line.get_xdata()) == 2 and line.get_xdata()[0] < 0.5 < line.get_xdata()[1]
    ]
    # a pooled BTS outside its seeds' range (similarities averaged before the correlation) is drawn, not refused
    outside = values.assign(value=values["value_max"] + 0.05)
    ranges = claims_figure(outside, table).axes[0].collections[0].get_segments()
    assert [tuple(seg[:, 1].round(2)) for seg in ranges] == [(0.1, 0.3), (0.4, 0.6), (0.8, 1.0)]


def test_the_findings_word_every_claim_with_its_interval_and_floor():
    from biastransfer.report.findings import describe_claims

    table, _ = _arms_table()
    text = "\n".join(describe_claims(table))
    assert "**planted_pair_mirrored** (d: planted - mirrored > 0, on s; 4 and 5 models): supported." in text
    assert "**one_model** (d: few - mirrored > 0, on s; 1 and 5 models): not testable with 1 and 5 models" in text
    assert (
        "control_pair_differs** (d: planted - mirrored ≠ 0" in text and "smallest attainable p 0.0079" in text
    )  # 1 / C(9, 4)
    assert describe_claims(None) == [] and describe_claims(table.iloc[:0]) == []


def test_a_model_measured_in_no_table_is_left_out_of_its_group_and_named():
    """A zoo model that failed its check has no iEAT row: it is left out of every claim's groups, and the
    table, the findings and the LaTeX caption say which and why (no claim leaves one out silently)."""
    from biastransfer.report.claims import claims_latex
    from biastransfer.report.findings import describe_claims
    from biastransfer.stats.claim_measures import claims_from_summaries

    summaries, groups = _arms_summaries(np.random.default_rng(0))
    groups["planted"].append("planted_broken")
    claims = _arms_claims(groups, [{**ARMS_CLAIM, "test": "planted_pair", "name": "planted"}])
    with pytest.raises(ValueError, match="model 'planted_broken'.*no rows"):
        claims_from_summaries(claims, summaries, datasets=[])
    why = {"planted_broken": "failed its zoo check: no weights"}
    table, values = claims_from_summaries(claims, summaries, datasets=[], left_out=why)
    row = table.iloc[0]
    assert (row["n_x"], row["n_y"], row["left_out"]) == (5, 5, "planted_broken (failed its zoo check: no weights)")
    assert "planted_broken" not in set(values["model"]) and row["verdict"] == "supported"
    assert "Left out of its groups: planted_broken (failed its zoo check: no weights)." in "\n".join(
        describe_claims(table)
    )
    assert "Left out of the groups (measured in no table): planted: planted\\_broken" in claims_latex(table)
    untouched, _ = _arms_table()
    assert (untouched["left_out"] == "").all() and "Left out" not in "\n".join(describe_claims(untouched))
    assert "Left out" not in claims_latex(untouched)


def test_the_landing_page_counts_the_claims_verdicts():
    from biastransfer.report.findings import claims_sentence

    table, _ = _arms_table()
    assert claims_sentence(table) == (
        "Claims about groups of models, with models as units: of 3, 1 supported, 1 not testable with so few "
        "models, 1 not supported (see the findings)."
    )


def test_the_claims_overlay_has_enough_models_in_every_group_to_test_the_papers_claims():
    from pathlib import Path

    from biastransfer.workflow.config import read_configs

    root = Path(__file__).parents[1]
    config = read_configs([root / "config" / "paper.yaml", root / "config" / "claims.yaml"])
    groups = config["claims"]["groups"]
    assert len(config["models"]) >= 18 and all(len(members) >= 4 for members in groups.values())
    assert set(config["models"]) == {m for members in groups.values() for m in members}  # every model grouped
    assert config["finetune"]["seeds"] == {"coco": [0, 1, 2], "openimages": [0]}
    assert config["datasets"] == read_configs([root / "config" / "paper.yaml"])["datasets"]  # an overlay
    for test in config["claims"]["tests"]:
        sizes = (
            [len(groups[test["x"]]), len(groups[test["y"]])]
            if test["compare"] == "groups"
            else [sum(len(m) for m in groups.values())]
        )
        kind = "groups" if test["compare"] == "groups" else "paired"
        needed = models_needed(
            config["claims"]["alpha"] / len(config["claims"]["tests"]), kind=kind, alternative=test["direction"]
        )
        assert min(sizes) >= needed, (test["name"], sizes, needed)  # testable even at Holm's first step
    for model in config["models"]:
        for dataset in config["finetune"]["datasets"]:
            assert model in config["finetune"]["overrides"] and dataset in config["finetune"]["overrides"][model]
