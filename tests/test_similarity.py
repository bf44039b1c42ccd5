"""Intra/inter-class similarity: exact equals brute force, sampled converges, jackknife SE, bad input."""

import dataclasses
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from biastransfer.stats.similarity import (
    SimilarityResult,
    class_similarities,
    inter_class_similarity,
    intra_class_similarity,
)


def _cos(a, b):
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _brute_intra(Z):
    return np.mean([_cos(Z[i], Z[j]) for i, j in itertools.combinations(range(len(Z)), 2)])


def _brute_inter(P, Q):
    return np.mean([_cos(p, q) for p in P for q in Q])


def _jackknife_se(Z, estimator):
    k = len(Z)
    loo = np.array([estimator(np.delete(Z, i, axis=0)) for i in range(k)])
    return np.sqrt((k - 1) / k * np.sum((loo - loo.mean()) ** 2))


def test_hand_computed_intra_and_inter():
    # Unit vectors at 0, 90 and 45 degrees: pair cosines 0, 1/sqrt2, 1/sqrt2.
    Z = np.array([[1.0, 0.0], [0.0, 3.0], [2.0, 2.0]])
    res = intra_class_similarity(Z)
    assert res.value == pytest.approx(np.sqrt(2) / 3)
    assert (res.n, res.method, res.kind, res.size_p, res.size_q) == (3, "exact", "intra", 3, None)
    inter = inter_class_similarity([[1.0, 0.0]], [[0.0, 1.0], [5.0, 0.0]])
    assert inter.value == pytest.approx(0.5)
    assert (inter.n, inter.kind, inter.size_p, inter.size_q) == (2, "inter", 1, 2)
    assert np.isnan(inter.se)  # one row in Zp: no jackknife over Zp


def test_exact_equals_brute_force_and_jackknife():
    rng = np.random.default_rng(1)
    P = rng.standard_normal((9, 6)) + 0.5
    Q = rng.standard_normal((7, 6)) - 0.2
    intra = intra_class_similarity(P)
    assert intra.value == pytest.approx(_brute_intra(P), abs=1e-12)
    assert intra.se == pytest.approx(_jackknife_se(P, _brute_intra), rel=1e-9)
    inter = inter_class_similarity(P, Q)
    assert inter.value == pytest.approx(_brute_inter(P, Q), abs=1e-12)
    var_p = _jackknife_se(P, lambda sub: _brute_inter(sub, Q)) ** 2
    var_q = _jackknife_se(Q, lambda sub: _brute_inter(P, sub)) ** 2
    assert inter.se == pytest.approx(np.sqrt(var_p + var_q), rel=1e-9)


def test_sampled_converges_to_exact_and_is_seeded():
    rng = np.random.default_rng(2)
    Z = rng.standard_normal((11, 5)) + 0.3  # odd k: halves of 5 and 6 rows
    W = rng.standard_normal((4, 5))
    for exact, sampled in [
        (intra_class_similarity(Z), intra_class_similarity(Z, "sampled", iterations=200_000, seed=3)),
        (inter_class_similarity(Z, W), inter_class_similarity(Z, W, "sampled", iterations=200_000, seed=3)),
    ]:
        assert sampled.method == "sampled" and sampled.n == 200_000 and sampled.seed == 3
        assert abs(sampled.value - exact.value) < 4 * sampled.se
        assert sampled.se < 0.003
    again = intra_class_similarity(Z, "sampled", iterations=5000, seed=3)
    assert again == intra_class_similarity(Z, "sampled", iterations=5000, seed=3)
    assert again.value != intra_class_similarity(Z, "sampled", iterations=5000, seed=4).value


def test_algorithm1_never_pairs_a_row_with_itself():
    # Orthogonal rows: any i == j draw would contribute a cosine of 1.
    res = intra_class_similarity(np.eye(5), "sampled", iterations=2000, seed=0)
    assert res.value == 0.0


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    k=st.integers(2, 9),
    d=st.integers(1, 6),
)
def test_invariant_to_row_scaling_and_order(seed, k, d):
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((k, d)) + rng.standard_normal(d)
    W = rng.standard_normal((3, d))
    scales = rng.uniform(0.01, 100.0, size=(k, 1))
    order = rng.permutation(k)
    base = intra_class_similarity(Z)
    moved = intra_class_similarity((Z * scales)[order])
    assert moved.value == pytest.approx(base.value, abs=1e-12)
    assert moved.se == pytest.approx(base.se, abs=1e-12, nan_ok=True)
    assert inter_class_similarity((Z * scales)[order], W).value == pytest.approx(
        inter_class_similarity(Z, W).value, abs=1e-12
    )


def test_extreme_magnitudes_are_rescaled_not_overflowed():
    # cosines: rows 0-1 and 0-2 are 1/sqrt2, rows 1-2 are 1
    res = intra_class_similarity([[1e200, 1e200], [1e-200, 0.0], [3.0, 0.0]])
    assert res.value == pytest.approx((np.sqrt(2) + 1) / 3)


def _assert_same(a: SimilarityResult, b: SimilarityResult) -> None:
    """Equal fields, with value and se equal to rounding (one matrix product vs per-class products)."""
    assert (a.value, a.se) == pytest.approx((b.value, b.se), rel=1e-12, abs=1e-15)
    assert dataclasses.replace(a, value=0.0, se=0.0) == dataclasses.replace(b, value=0.0, se=0.0)


def test_class_similarities_equals_single_calls():
    rng = np.random.default_rng(5)
    classes = {name: rng.standard_normal((4 + i, 6)) + i for i, name in enumerate(["man", "woman", "car"])}
    intra, inter = class_similarities(classes)
    assert list(inter) == [("man", "woman"), ("man", "car"), ("woman", "car")]
    for name, Z in classes.items():
        _assert_same(intra[name], intra_class_similarity(Z))
    for (p, q), res in inter.items():
        _assert_same(res, inter_class_similarity(classes[p], classes[q]))
    _, chosen = class_similarities(classes, pairs=[("car", "man")])
    assert list(chosen) == [("car", "man")]


@pytest.mark.parametrize(
    "classes, pairs, message",
    [
        ({}, None, "classes is empty"),
        ({"man": np.eye(3), "car": np.array([[1.0, 0, 0], [0, 0, 0]])}, None, r"classes\['car'\] row 1 is all zeros"),
        ({"man": np.eye(3), "car": np.ones((3, 4))}, None, r"classes\['car'\] has 4 dims but classes\['man'\] has 3"),
        ({"man": np.eye(3), "car": np.eye(3)}, [("man", "bus")], "not in classes: 'bus'"),
    ],
)
def test_class_similarities_bad_input(classes, pairs, message):
    with pytest.raises(ValueError, match=message):
        class_similarities(classes, pairs)


def test_as_dict_has_named_fields():
    row = intra_class_similarity(np.eye(3) + 1).as_dict()
    assert set(row) == {f for f in SimilarityResult.__dataclass_fields__}
    assert row["method"] == "exact"


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: intra_class_similarity(np.empty((0, 4))), "Z is empty"),
        (lambda: intra_class_similarity(np.ones((1, 4))), "Z has 1 row"),
        (lambda: intra_class_similarity(np.ones(4)), r"Z must be 2-D \(rows x dims\), got shape \(4,\)"),
        (lambda: intra_class_similarity([[1.0, np.nan], [1.0, 2.0]]), "Z contains NaN"),
        (lambda: intra_class_similarity([[1.0, 2.0], [np.inf, 2.0]]), "Z contains inf"),
        (lambda: intra_class_similarity([[1.0, 2.0], [1.0, 2.0], [0.0, 0.0]]), "Z row 2 is all zeros"),
        (lambda: intra_class_similarity([["a", "b"], ["c", "d"]]), "Z must hold numbers"),
        (lambda: inter_class_similarity(np.ones((3, 4)), np.ones((3, 5))), "Zq has 5 dims but Zp has 4"),
        (lambda: inter_class_similarity(np.ones((3, 4)), np.empty((0, 4))), "Zq is empty"),
        (lambda: intra_class_similarity(np.ones((3, 4)), method="split"), "method must be one of"),
        (lambda: intra_class_similarity(np.eye(3), "sampled", iterations=0), "iterations must be a positive int"),
        (lambda: intra_class_similarity(np.eye(3), "sampled", seed=-1), "seed must be non-negative"),
    ],
)
def test_bad_input_is_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()
