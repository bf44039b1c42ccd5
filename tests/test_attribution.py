"""Attribution across networks: the between-network permutation test, its power and its table."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from biastransfer.stats.attribution import (
    Design,
    attribution_table,
    compare_networks,
    detectable_shift,
    min_pvalue,
    partitions,
    permutation_pvalues,
    power,
)


def brute_force_p(a, b, alternative):
    """Every relabelling of the networks, with the difference of means written out directly."""
    pooled = np.concatenate([a, b])
    observed = a.mean() - b.mean()
    hits = total = 0
    for idx in itertools.combinations(range(pooled.size), a.size):
        mask = np.zeros(pooled.size, bool)
        mask[list(idx)] = True
        diff = pooled[mask].mean() - pooled[~mask].mean()
        total += 1
        if alternative == "greater":
            hits += diff >= observed - 1e-9
        elif alternative == "less":
            hits += diff <= observed + 1e-9
        else:
            hits += abs(diff) >= abs(observed) - 1e-9
    return hits / total


@pytest.mark.parametrize("sizes", [(2, 2), (3, 2), (4, 5), (5, 5), (6, 3)])
@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_exact_pvalue_equals_brute_force(sizes, alternative):
    rng = np.random.default_rng(sum(sizes))
    for rep in range(4):
        a, b = rng.normal(0.7, 1, sizes[0]), rng.normal(0, 1, sizes[1])
        if rep == 3:  # ties: integer values
            a, b = np.round(a), np.round(b)
        result = compare_networks(a, b, Design(alternative=alternative, simulations=50))
        assert result.method == "exact" and result.permutations == math.comb(sum(sizes), sizes[0])
        assert result.pvalue == pytest.approx(brute_force_p(a, b, alternative), abs=1e-12)


def test_monte_carlo_pvalue_agrees_with_exact_and_counts_the_observed_relabelling():
    rng = np.random.default_rng(3)
    a, b = rng.normal(1, 1, 7), rng.normal(0, 1, 7)
    exact = compare_networks(a, b, Design(simulations=50)).pvalue
    mc = compare_networks(a, b, Design(permutations=2000, simulations=50))
    assert mc.method == "permutation" and mc.permutations == 2000
    assert mc.pvalue == pytest.approx(exact, abs=4 * math.sqrt(exact * (1 - exact) / 2000) + 1e-3)
    separated = compare_networks(np.arange(7) + 100.0, np.arange(7.0), Design(permutations=500, simulations=50))
    assert separated.pvalue >= 1 / 500 and separated.min_pvalue == 1 / 500


@pytest.mark.parametrize("n_a,n_b,expected", [(2, 2, 1 / 3), (4, 4, 2 / 70), (5, 5, 2 / 252), (3, 5, 1 / 56)])
def test_the_smallest_attainable_pvalue_is_that_of_separated_groups(n_a, n_b, expected):
    assert min_pvalue(n_a, n_b) == pytest.approx(expected)
    assert compare_networks(
        np.arange(n_a) + 50.0, np.arange(float(n_b)), Design(simulations=50)
    ).pvalue == pytest.approx(expected)
    assert min_pvalue(n_a, n_b, "greater") == pytest.approx(1 / math.comb(n_a + n_b, n_a))


def test_calibrated_on_null_data():
    rng = np.random.default_rng(0)
    parts, _ = partitions(5, 5)
    for alternative in ("two-sided", "greater"):
        p = permutation_pvalues(rng.standard_normal((2000, 10)), 5, parts, alternative)
        assert 0.03 <= np.mean(p <= 0.05) <= 0.07  # exact size: 12/252 = 0.048 two-sided
        assert np.mean(p <= 0.05) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 2000)


def test_detects_a_planted_difference_and_states_its_power():
    rng = np.random.default_rng(1)
    planted = compare_networks(rng.normal(3, 1, 5), rng.normal(0, 1, 5))
    assert planted.pvalue < 0.05 and planted.difference > 0 and planted.ci_low > 0
    assert planted.pvalue >= planted.min_pvalue
    shift = planted.detectable_shift
    assert 1 < shift < 4
    assert power(5, 5, shift) >= 0.8 > power(5, 5, shift - 0.05)
    assert power(5, 5, 0.0) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 2000)
    pooled_sd = math.sqrt((planted.sd_a**2 + planted.sd_b**2) / 2)
    assert planted.detectable_difference == pytest.approx(shift * pooled_sd)


def test_two_networks_per_group_cannot_reject():
    result = compare_networks([1.27, 0.78], [-1.74, -1.68], Design(simulations=50))
    assert result.min_pvalue == pytest.approx(1 / 3) and result.pvalue == pytest.approx(1 / 3)
    assert result.detectable_shift == math.inf == detectable_shift(2, 2)


def test_welch_interval_and_pvalue_are_scipys():
    a, b = np.array([1.2, 0.8, 1.5, 0.9]), np.array([-0.7, -0.9, -0.2, -1.1, -0.5])
    result = compare_networks(a, b, Design(level=0.9, simulations=50))
    welch = stats.ttest_ind(a, b, equal_var=False)
    ci = welch.confidence_interval(0.9)
    assert (result.ci_low, result.ci_high) == pytest.approx((ci.low, ci.high))
    assert result.pvalue_welch == pytest.approx(welch.pvalue)


@pytest.mark.parametrize("bad,match", [([1.0], "at least 2"), ([1.0, np.nan], "non-finite"), ([[1.0, 2.0]], "1-D")])
def test_bad_input_names_the_group(bad, match):
    with pytest.raises(ValueError, match=f"a .*{match}|a {match}|{match}"):
        compare_networks(bad, [0.0, 1.0])


def ieat_summary(values: dict) -> pd.DataFrame:
    rows = []
    for model, d in values.items():
        rows.append(
            {
                "analysis_set": "s",
                "model": model,
                "stage": "pretrained",
                "finetune_dataset": "",
                "test": "t",
                "effect_size": d,
            }
        )
        for seed in (0, 1):
            rows.append(
                {
                    "analysis_set": "s",
                    "model": model,
                    "stage": f"ft-x-seed{seed}",
                    "finetune_dataset": "x",
                    "test": "t",
                    "effect_size": d + seed,
                }
            )
    return pd.DataFrame(rows)


def test_attribution_table_compares_every_pair_of_groups():
    ieat = ieat_summary(
        {"p0": 1.3, "p1": 0.8, "p2": 1.1, "n0": -0.8, "n1": -0.7, "n2": -0.9, "m0": -1.7, "m1": -1.6, "m2": -1.5}
    )
    spec = {
        "name": "planted",
        "analysis_set": "s",
        "test": "t",
        "groups": {"planted": ["p0", "p1", "p2"], "none": ["n0", "n1", "n2"], "mirrored": ["m0", "m1", "m2"]},
    }
    table = attribution_table(ieat, [spec, {**spec, "name": "after", "stage": "ft-x"}], Design(simulations=50))
    assert list(zip(table["group_a"], table["group_b"]))[:3] == [
        ("planted", "none"),
        ("planted", "mirrored"),
        ("none", "mirrored"),
    ]
    first = table.iloc[0]
    assert first["mean_a"] == pytest.approx(np.mean([1.3, 0.8, 1.1])) and first["pvalue"] == pytest.approx(2 / 20)
    assert first["networks_a"] == "p0 1.300; p1 0.800; p2 1.100"
    after = table[table["name"] == "after"].iloc[0]
    assert after["mean_a"] == pytest.approx(np.mean([1.3, 0.8, 1.1]) + 0.5)  # mean over the two seeds
    assert (table["pvalue_holm"] >= table["pvalue"]).all()
    with pytest.raises(ValueError, match="model 'q'"):
        attribution_table(ieat, [{**spec, "groups": {"a": ["p0", "q"], "b": ["n0", "n1"]}}])


def link_summary(contrasts: dict, dataset: str = "x", seeds=(0, 1)) -> pd.DataFrame:
    """A link summary with one finetuned network per model on ``dataset``: each seed's contrast and the pooled one
    (``contrasts``), plus a scratch network's row that the attribution must not read."""
    rows = []
    for model, value in contrasts.items():
        for seed in [*seeds, "pooled"]:
            shift = 0.0 if seed == "pooled" else (0.01 if seed == 0 else -0.01)
            rows.append(dict(model=model, network="finetuned", seed=seed, contrast=value + shift))
        rows.append(dict(model=model, network="scratch", seed="pooled", contrast=9.0))
    return pd.DataFrame(rows).assign(analysis_set="s", test="t", dataset=dataset)


ARMS = {
    "planted": [f"p{i}" for i in range(5)],
    "none": [f"n{i}" for i in range(5)],
    "mirrored": [f"m{i}" for i in range(5)],
}
PREDICTION_SPEC = {
    "name": "amplify",
    "analysis_set": "s",
    "test": "t",
    "stage": "ft-x",
    "measure": "contrast",
    "groups": ARMS,
}


def test_networks_are_the_units_of_the_prediction_contrast_and_a_planted_arm_is_found():
    rng = np.random.default_rng(4)
    contrasts = {m: 0.08 + 0.01 * rng.standard_normal() for m in ARMS["planted"]}
    contrasts |= {m: 0.01 * rng.standard_normal() for m in ARMS["none"]}
    contrasts |= {m: -0.08 + 0.01 * rng.standard_normal() for m in ARMS["mirrored"]}
    table = attribution_table(pd.DataFrame(), [PREDICTION_SPEC], Design(simulations=50), link=link_summary(contrasts))
    assert (table["measure"] == "contrast").all()
    planted_mirrored = table[(table["group_a"] == "planted") & (table["group_b"] == "mirrored")].iloc[0]
    assert planted_mirrored["mean_a"] == pytest.approx(np.mean([contrasts[m] for m in ARMS["planted"]]))  # pooled rows
    assert planted_mirrored["pvalue"] == pytest.approx(2 / math.comb(10, 5))  # separated: the exact test's floor
    assert (table["pvalue_holm"] < 0.05).all() and planted_mirrored["difference"] > 0.1
    assert planted_mirrored["networks_a"].startswith("p0 ")


def test_a_null_table_of_prediction_contrasts_is_not_called():
    called = 0
    for seed in range(20):
        rng = np.random.default_rng(100 + seed)
        contrasts = {m: 0.02 * rng.standard_normal() for arm in ARMS.values() for m in arm}
        table = attribution_table(
            pd.DataFrame(), [PREDICTION_SPEC], Design(simulations=50), link=link_summary(contrasts)
        )
        called += int((table["pvalue_holm"] < 0.05).any())
    assert called <= 2  # Holm over three pairs at 0.05: at most about one null table in twenty


def test_a_model_with_one_seed_reads_that_seed_and_bad_prediction_specs_are_named():
    contrasts = {m: 0.01 * i for i, m in enumerate(m for arm in ARMS.values() for m in arm)}
    link = link_summary(contrasts, seeds=(0,))
    one_seed = link[link["seed"].astype(str) != "pooled"]
    table = attribution_table(pd.DataFrame(), [PREDICTION_SPEC], Design(simulations=50), link=one_seed)
    assert table.iloc[0]["mean_a"] == pytest.approx(0.02 + 0.01)  # seed 0's contrast: the pooled one + 0.01
    with pytest.raises(ValueError, match="needs the link summary"):
        attribution_table(pd.DataFrame(), [PREDICTION_SPEC])
    with pytest.raises(ValueError, match="finetuned networks.*not 'pretrained'"):
        attribution_table(pd.DataFrame(), [{**PREDICTION_SPEC, "stage": "pretrained"}], link=link)
    with pytest.raises(ValueError, match="no prediction contrast of 't' on 's' at stage 'ft-y' for model 'p0'"):
        attribution_table(pd.DataFrame(), [{**PREDICTION_SPEC, "stage": "ft-y"}], link=link)
    with pytest.raises(ValueError, match="measure must be one of 'd', 'contrast'"):
        attribution_table(pd.DataFrame(), [{**PREDICTION_SPEC, "measure": "shift"}], link=link)
