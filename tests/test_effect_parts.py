"""d's numerator and pooled SD beside every d, and when a change of d is only a change of spread."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from biastransfer.embeddings import EmbeddingTable
from biastransfer.stats import change_from_spread, ieat, ieat_table
from biastransfer.stats.change_tables import ieat_change_table, spread_share


def test_numerator_and_sd_by_hand():
    """Scores in 2 dims with A = e1, B = e2 (two copies each: d needs two images a set): s(w) = cos(w, e1) -
    cos(w, e2), computed by hand."""
    X = np.array([[1.0, 0.0], [3.0, 4.0]])  # s = 1, (3 - 4) / 5 = -0.2
    Y = np.array([[0.0, 1.0], [4.0, 3.0]])  # s = -1, 0.2
    A, B = np.array([[1.0, 0.0]] * 2), np.array([[0.0, 1.0]] * 2)
    r = ieat(X, Y, A, B, bootstrap=0)
    s = np.array([1.0, -0.2, -1.0, 0.2])
    assert r.mean_difference == pytest.approx(0.4 - (-0.4), abs=1e-12)
    assert r.pooled_sd == pytest.approx(s.std(ddof=1), abs=1e-12)
    assert r.effect_size == pytest.approx(r.mean_difference / r.pooled_sd, abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), scale=st.floats(0.1, 10.0))
def test_d_is_numerator_over_sd_and_both_ignore_row_scale(seed, scale):
    rng = np.random.default_rng(seed)
    sets = [rng.normal(size=(n, 4)) for n in (3, 4, 3, 5)]
    r = ieat(*sets, bootstrap=0, permutations=200)
    assert r.effect_size == pytest.approx(r.mean_difference / r.pooled_sd, rel=1e-12)
    rescaled = ieat(*[scale * s for s in sets], bootstrap=0, permutations=200)
    assert (rescaled.mean_difference, rescaled.pooled_sd) == pytest.approx((r.mean_difference, r.pooled_sd), rel=1e-9)


def _table(embeddings, classes):
    return EmbeddingTable(np.array([f"i{k}" for k in range(len(classes))]), np.array(classes), embeddings)


def test_tables_carry_numerator_sd_and_their_change():
    """The per-stage table gives d = numerator / SD; the change table gives both networks' numerators and
    SDs and their changes, consistent with d of each network."""
    rng = np.random.default_rng(3)
    classes = np.repeat(list("xyab"), 8)
    pre = rng.normal(size=(32, 5)) + np.repeat(
        [[1, 0, 0, 0, 0], [0, 1, 0, 0, 0], [2, 0, 0, 0, 0], [0, 2, 0, 0, 0]], 8, 0
    )
    ft = pre + 0.5 * rng.normal(size=(32, 5))
    test = {"name": "t", "X": "x", "Y": "y", "A": "a", "B": "b"}
    row = ieat_table(_table(ft, classes), [test], bootstrap=0, permutations=200).iloc[0]
    assert row.effect_size == pytest.approx(row.mean_difference / row.pooled_sd, rel=1e-12)
    change = ieat_change_table({"pretrained": _table(pre, classes), 0: _table(ft, classes)}, [test], bootstrap=50)
    c = change.iloc[0]
    assert c.mean_difference_finetuned == pytest.approx(row.mean_difference, rel=1e-12)
    assert c.delta_mean_difference == pytest.approx(c.mean_difference_finetuned - c.mean_difference_pretrained)
    assert c.delta_pooled_sd == pytest.approx(c.pooled_sd_finetuned - c.pooled_sd_pretrained)
    assert c.d_pretrained == pytest.approx(c.mean_difference_pretrained / c.pooled_sd_pretrained, rel=1e-12)


def test_spread_share_known_answers():
    # numerator unchanged, SD doubled: d halves, all of it from the spread
    assert spread_share(0.2, 0.1, 0.2, 0.2) == pytest.approx(1.0)
    assert change_from_spread(0.2, 0.1, 0.2, 0.2)
    # SD unchanged, numerator halved: none of it from the spread
    assert spread_share(0.2, 0.1, 0.1, 0.1) == pytest.approx(0.0)
    assert not change_from_spread(0.2, 0.1, 0.1, 0.1)
    # d halves: numerator x 2 and SD x 4 -> log terms ln2 and -ln4 of a total -ln2: the SD's share is 2
    assert spread_share(0.1, 0.1, 0.2, 0.4) == pytest.approx(2.0)
    assert math.isnan(spread_share(0.2, 0.1, -0.2, 0.1))  # the association changed sign
    assert math.isnan(spread_share(0.2, 0.1, 0.4, 0.2))  # d unchanged
    assert not change_from_spread(0.2, 0.1, -0.2, 0.3)


@settings(max_examples=50, deadline=None)
@given(
    num=st.floats(0.01, 1.0),
    sd=st.floats(0.01, 1.0),
    f_num=st.floats(0.2, 5.0),
    f_sd=st.floats(0.2, 5.0),
    sign=st.sampled_from([-1.0, 1.0]),
)
def test_spread_share_splits_the_log_change_of_d(num, sd, f_num, f_sd, sign):
    """The SD's share and the numerator's share of the change of log |d| add up to 1, for either sign."""
    total = math.log(f_num) - math.log(f_sd)
    if abs(total) < 1e-6:
        return
    share = spread_share(sign * num, sd, sign * num * f_num, sd * f_sd)
    assert share == pytest.approx(-math.log(f_sd) / total, rel=1e-9, abs=1e-12)
    assert share + math.log(f_num) / total == pytest.approx(1.0)


def test_detectable_d_has_its_power_in_the_iEAT_permutation_test():
    """At the stated |d| the iEAT's exact permutation test (8 vs 8 scores, alpha 0.05, "greater") rejects in
    about 80% of 400 fresh data sets, at 0.6 times it far less often; the union d of the planted scores
    equals the stated one."""
    from biastransfer.stats.ieat import detectable_effect_size, partition_pvalues

    n = 8
    d = detectable_effect_size(n, n, 0.05, 0.8, "greater")
    shift = d / math.sqrt(1 - d**2 / 4)  # within-group SDs, inverting d = t / sqrt(1 + t^2 / 4)
    rng = np.random.default_rng(2024)
    big = np.concatenate([rng.normal(shift, 1, 200_000), rng.normal(0, 1, 200_000)])
    assert (big[:200_000].mean() - big[200_000:].mean()) / big.std() == pytest.approx(d, abs=0.01)

    def rejects(t):
        hits = 0
        for _ in range(400):
            s = np.concatenate([rng.normal(t, 1, n), rng.normal(0, 1, n)])
            hits += partition_pvalues([s], [n], 100_000, "greater", "auto", 0)["pvalue"] <= 0.05
        return hits / 400

    assert 0.74 <= rejects(shift) <= 0.86
    assert rejects(0.6 * shift) < 0.6


def test_detectable_d_known_answers_and_result_fields():
    from biastransfer.stats.ieat import detectable_effect_size

    assert math.isinf(detectable_effect_size(2, 2, 0.05, 0.8, "greater"))  # p >= 1/6 always
    sizes = [(6, 6), (12, 15), (40, 40)]
    values = [detectable_effect_size(a, b, 0.01, 0.8, "greater") for a, b in sizes]
    assert values == sorted(values, reverse=True) and all(0 < v < 2 for v in values)
    assert detectable_effect_size(12, 15, 0.01, 0.8, "two-sided") > values[1]  # two-sided needs more
    rng = np.random.default_rng(1)
    sets = [rng.normal(size=(k, 3)) for k in (12, 15, 5, 5)]
    r = ieat(*sets, bootstrap=0, permutations=500, alpha=0.01)
    assert (r.detectable_d, r.detectable_alpha, r.detectable_power) == (values[1], 0.01, 0.8)
    assert math.isnan(ieat(*sets, bootstrap=0, permutations=500, alpha=None).detectable_d)
