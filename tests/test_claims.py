"""Claims about groups of models with models as units (biastransfer.stats.claims): exact sign flips against
brute force, the floors and the models a claim needs, planted and null groups, Holm over claims, bad input."""

import itertools

import numpy as np
import pytest

from biastransfer.stats.claims import (
    claims_table,
    compare_paired,
    min_paired_pvalue,
    models_needed,
    paired_pvalues,
    sign_flips,
)

FAST = dict(simulations=300)


def test_sign_flip_pvalues_match_brute_force():
    assert paired_pvalues([1.0, 2.0, 3.0], sign_flips(3)[0], "greater")[0] == 1 / 8
    assert paired_pvalues([1.0, 2.0, 3.0], sign_flips(3)[0], "two-sided")[0] == 2 / 8
    assert paired_pvalues([1.0, 2.0, 3.0], sign_flips(3)[0], "less")[0] == 1.0
    d = np.random.default_rng(0).normal(0.3, 1, size=7)
    sums = [np.dot(d, s) for s in itertools.product((1, -1), repeat=7)]
    t, eps = d.sum(), 1e-9  # the observed flip's sum equals t up to rounding
    for alternative, extreme in (("greater", lambda s: s >= t - eps), ("less", lambda s: s <= t + eps),
                                 ("two-sided", lambda s: abs(s) >= abs(t) - eps)):  # fmt: skip
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
    r = compare_paired(x, y, alternative="greater", **FAST)
    assert r.method == "exact" and r.permutations == 64 and r.pvalue == 1 / 64 == r.min_pvalue
    assert r.ci_low < r.mean_difference < r.ci_high and r.mean_difference == pytest.approx(0.6)
    assert 0 < r.detectable_difference < np.inf and r.detectable_shift > 0


def _claims(rng, shift, n=6, paired_shift=0.0, pairs=8):
    a, b = rng.normal(shift, 1, n), rng.normal(0, 1, n)
    x = rng.normal(0, 1, pairs)
    return [
        {"name": "retention", "kind": "groups", "direction": "greater", "x": a, "y": b, "measure": "bts"},
        {"name": "change", "kind": "paired", "direction": "greater", "x": x + paired_shift + rng.normal(0, 0.3, pairs),
         "y": x, "measure": "delta_d"},
    ]  # fmt: skip


def test_planted_differences_are_supported_and_reversed_ones_contradicted():
    rng = np.random.default_rng(3)
    table = claims_table(_claims(rng, shift=3.0, paired_shift=1.0), alpha=0.05, **FAST).set_index("claim")
    assert list(table["verdict"]) == ["supported", "supported"]
    assert (table["p_adjusted"] >= table["p"]).all() and table.loc["retention", "method"] == "exact"
    reversed_claims = [{**c, "direction": "less"} for c in _claims(np.random.default_rng(3), 3.0, paired_shift=1.0)]
    assert list(claims_table(reversed_claims, alpha=0.05, **FAST)["verdict"]) == ["contradicted", "contradicted"]


def test_too_few_models_are_not_testable_whatever_the_data():
    claims = [
        {"name": "few", "kind": "groups", "direction": "greater", "x": [5.0, 6.0], "y": [0.0, 0.1]},
        {"name": "three", "kind": "groups", "direction": "greater", "x": [5.0, 6.0, 7.0], "y": [0.0, 0.1]},
        {"name": "pairs", "kind": "paired", "direction": "greater", "x": [5.0, 6.0, 7.0], "y": [0.0, 0.1, 0.2]},
    ]
    verdicts = list(claims_table(claims, alpha=0.05, **FAST)["verdict"])
    assert verdicts == [
        "not testable with 2 models per group; at least 4 are needed",
        "not testable with 3 and 2 models per group; at least 4 are needed",
        "not testable with 3 paired models; at least 5 are needed",
    ]


def test_without_a_true_difference_a_claim_is_rarely_supported():
    """Groups drawn from one distribution: supported in at most 8% of 50 seeded runs at alpha 0.05, and
    contradicted as rarely; a testable claim that is not supported states its detectable difference."""
    tables = [
        claims_table(_claims(np.random.default_rng(100 + i), 0.0), alpha=0.05, simulations=100) for i in range(50)
    ]
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
        claims_table([{**good, "direction": "two-sided"}])
    with pytest.raises(ValueError, match="shapes"):
        compare_paired([1.0, 2.0, 3.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="non-finite"):
        compare_paired([1.0, np.nan, 3.0], [1.0, 2.0, 3.0])
