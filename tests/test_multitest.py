"""Holm and Benjamini-Hochberg adjustment: hand-computed values, scipy agreement, NaN handling."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from biastransfer.stats.multitest import adjust_pvalues


def test_holm_hand_computed():
    # sorted 0.01, 0.02, 0.03, 0.5 -> 4*0.01, 3*0.02, 2*0.03, 1*0.5 then running max
    p = [0.03, 0.01, 0.5, 0.02]
    np.testing.assert_allclose(adjust_pvalues(p, "holm"), [0.06, 0.04, 0.5, 0.06])
    np.testing.assert_allclose(adjust_pvalues([0.4, 0.3], "holm"), [0.6, 0.6])  # monotone step-down


def test_bh_hand_computed():
    # sorted 0.01, 0.02, 0.03, 0.5 -> 0.04, 0.04, 0.04, 0.5 (step-up running min of m/i * p)
    np.testing.assert_allclose(adjust_pvalues([0.03, 0.01, 0.5, 0.02], "bh"), [0.04, 0.04, 0.5, 0.04])


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=40))
def test_bh_matches_scipy_and_holm_is_bounded(values):
    p = np.array(values)
    bh = adjust_pvalues(p, "bh")
    np.testing.assert_allclose(bh, stats.false_discovery_control(p, method="bh"), rtol=1e-12, atol=1e-15)
    holm = adjust_pvalues(p, "holm")
    assert np.all(holm >= p - 1e-15) and np.all(holm <= np.minimum(1, p * p.size) + 1e-15)
    assert np.all(bh <= holm + 1e-15)
    order = np.argsort(p, kind="stable")
    assert np.all(np.diff(holm[order]) >= 0) and np.all(np.diff(bh[order]) >= -1e-15)


def test_nan_entries_are_kept_and_not_counted_and_shape_is_kept():
    table = np.array([[0.01, np.nan], [0.04, 0.03]])
    out = adjust_pvalues(table, "holm")
    assert out.shape == (2, 2) and np.isnan(out[0, 1])
    np.testing.assert_allclose(out[~np.isnan(out)], adjust_pvalues([0.01, 0.04, 0.03], "holm"))
    assert np.isnan(adjust_pvalues([np.nan, np.nan], "bh")).all()
    assert np.isnan(table[0, 1]) and table[0, 0] == 0.01  # input not modified


@pytest.mark.parametrize(
    "p, method, message",
    [
        ([0.1, 1.5], "holm", r"entry 1 is 1.5"),
        ([-0.1], "bh", r"entry 0 is -0.1"),
        ([0.1], "bonferonni", "method must be one of"),
        (["a"], "holm", "pvalues must be numbers"),
    ],
)
def test_bad_input_is_named(p, method, message):
    with pytest.raises(ValueError, match=message):
        adjust_pvalues(p, method)
