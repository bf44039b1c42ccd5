"""Linear CKA (Kornblith et al. 2019): known values, invariances, a brute-force HSIC, its jackknife interval, the
per-network table, the findings' words and bad input."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from biastransfer.embeddings import EmbeddingTable
from biastransfer.report.findings import describe_representation
from biastransfer.stats.cka import CKAGrams, CKAResult, linear_cka, paired_cka
from biastransfer.stats.results import cka_table


def _hsic(K, L):
    """HSIC up to its 1 / (n - 1)^2 factor, with the centring matrix H = I - 11^T / n written out."""
    n = len(K)
    H = np.eye(n) - np.ones((n, n)) / n
    return np.trace(K @ H @ L @ H)


def _brute_cka(x, y):
    K, L = x @ x.T, y @ y.T
    return _hsic(K, L) / math.sqrt(_hsic(K, K) * _hsic(L, L))


def _pair(seed, n=30, dx=12, dy=9, noise=1.0):
    """Two representations of the same n rows: y a noisy linear read-out of x."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, dx)) + 3.0  # off-centre on purpose: the CKA must centre
    y = x @ rng.standard_normal((dx, dy)) + noise * rng.standard_normal((n, dy))
    return x, y


def _orthogonal(d, rng):
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


seeds = st.integers(0, 2**32 - 1)


@settings(max_examples=40, deadline=None)
@given(seed=seeds, n=st.integers(4, 40), dx=st.integers(1, 50), dy=st.integers(1, 50))
def test_equals_brute_force_hsic_and_lies_in_unit_interval(seed, n, dx, dy):
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((n, dx)), rng.standard_normal((n, dy))
    r = linear_cka(x, y)
    assert r.estimate == pytest.approx(_brute_cka(x, y), rel=1e-9, abs=1e-12)
    assert 0 <= r.estimate <= 1


@settings(max_examples=30, deadline=None)
@given(seed=seeds, n=st.integers(3, 30), d=st.integers(1, 40))
def test_identical_embeddings_give_one(seed, n, d):
    x = np.random.default_rng(seed).standard_normal((n, d)) * 5 + 1
    assert linear_cka(x, x).estimate == pytest.approx(1.0, abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(seed=seeds, scale_x=st.floats(1e-3, 1e3), scale_y=st.floats(1e-3, 1e3))
def test_invariant_to_rotation_and_isotropic_scaling_of_either_side(seed, scale_x, scale_y):
    x, y = _pair(seed)
    rng = np.random.default_rng(seed + 1)
    base = linear_cka(x, y).estimate
    moved = linear_cka(scale_x * x @ _orthogonal(x.shape[1], rng), scale_y * y @ _orthogonal(y.shape[1], rng))
    assert moved.estimate == pytest.approx(base, rel=1e-9)
    # a shift of either side (centring) changes nothing either
    assert linear_cka(x + 7.0, y - 2.0).estimate == pytest.approx(base, rel=1e-9)


def test_not_invariant_to_a_general_invertible_linear_map():
    x, y = _pair(0, noise=0.5)
    stretch = np.diag([30.0] + [1.0] * (x.shape[1] - 1))  # invertible, not orthogonal times a scale
    base, stretched = linear_cka(x, y).estimate, linear_cka(x @ stretch, y).estimate
    assert np.linalg.matrix_rank(stretch) == x.shape[1]
    assert abs(stretched - base) > 0.05


def test_unrelated_embeddings_score_low_and_related_ones_high():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((200, 64))
    unrelated = linear_cka(x, rng.standard_normal((200, 64))).estimate
    related = linear_cka(x, x @ _orthogonal(64, rng) + 0.1 * rng.standard_normal((200, 64))).estimate
    assert unrelated < 0.35 < 0.95 < related


def test_gram_space_and_feature_space_agree_when_rows_outnumber_dims():
    x, y = _pair(4, n=300, dx=5, dy=3)
    assert linear_cka(x, y).estimate == pytest.approx(_brute_cka(x, y), rel=1e-9)


def test_each_left_out_value_is_the_cka_without_that_image():
    """The jackknife's values, in closed form from the Gram matrices, equal the CKA of the other n - 1 rows."""
    x, y = _pair(5, n=25)
    left_out = CKAGrams(x, {"y": y}).left_out()
    assert left_out.shape == (1, 25)
    explicit = [_brute_cka(np.delete(x, i, axis=0), np.delete(y, i, axis=0)) for i in range(25)]
    np.testing.assert_allclose(left_out[0], explicit, rtol=1e-9)


@settings(max_examples=15, deadline=None)
@given(seed=seeds, noise=st.floats(0.1, 3.0))
def test_interval_covers_the_estimate_and_stays_in_the_unit_interval(seed, noise):
    x, y = _pair(seed, n=60, noise=noise)
    r = linear_cka(x, y)
    assert isinstance(r, CKAResult)
    assert 0 <= r.ci_low <= r.estimate <= r.ci_high <= 1
    assert (r.n, r.level, r.method) == (60, 0.95, "jackknife normal")
    assert r.ci_high - r.ci_low > 0


def test_jackknife_se_estimates_the_spread_over_samples_of_images():
    """Known answer: the SD of the CKA over independent samples of 100 images from one population of paired
    representations, which the one-sample jackknife SE must match (a bootstrap with replacement does not)."""
    rng = np.random.default_rng(12)
    mix = rng.standard_normal((48, 48)) / 7
    scale = 1 / np.arange(1, 49) ** 0.4

    def sample():
        x = rng.standard_normal((100, 48)) * scale
        return x, x @ mix + 0.6 * rng.standard_normal((100, 48)) * scale

    results = [linear_cka(*sample()) for _ in range(150)]
    spread = np.std([r.estimate for r in results], ddof=1)
    assert np.median([r.se for r in results]) == pytest.approx(spread, rel=0.25)


def test_identical_embeddings_have_the_interval_one_to_one():
    x = np.random.default_rng(0).standard_normal((20, 6))
    r = linear_cka(x, x)
    assert (r.ci_low, r.ci_high, r.se) == pytest.approx((1.0, 1.0, 0.0), abs=1e-9)


def test_interval_narrows_with_more_images():
    small, large = linear_cka(*_pair(6, n=40)), linear_cka(*_pair(6, n=400))
    assert large.ci_high - large.ci_low < small.ci_high - small.ci_low


def test_paired_cka_leaves_out_the_same_image_everywhere_and_averages_the_networks():
    x, y1 = _pair(7, n=50)
    y2 = _pair(8, n=50)[1]
    results, mean = paired_cka(x, {"a": y1, "b": y2})
    for name, y in (("a", y1), ("b", y2)):
        assert results[name] == linear_cka(x, y)
    assert mean.estimate == pytest.approx((results["a"].estimate + results["b"].estimate) / 2)
    assert mean.ci_low <= mean.estimate <= mean.ci_high
    grams = CKAGrams(x, {"a": y1, "b": y2})
    paired = grams.left_out().mean(axis=0)
    assert mean.se == pytest.approx(np.sqrt(49 / 50 * np.sum((paired - paired.mean()) ** 2)))


@pytest.mark.parametrize(
    ("x", "y", "message"),
    [
        (np.arange(15.0).reshape(5, 3) ** 2, np.eye(4), "y must embed the same images as x: x has 5 rows, y has 4"),
        (np.zeros(5), np.ones((5, 2)), "x must be 2-D"),
        (np.ones((2, 3)), np.ones((2, 3)), "at least 3 images"),
        (np.array([[1.0, 0], [0, 1], [np.inf, 2]]), np.eye(3), "x contains NaN or inf"),
        (np.ones((4, 3)), np.eye(4), "x does not vary over the rows"),
        (np.array([["a"], ["b"], ["c"]]), np.eye(3), "x must hold numbers"),
    ],
)
def test_bad_input_is_named(x, y, message):
    with pytest.raises(ValueError, match=message):
        linear_cka(x, y)


def test_bad_level_and_no_network_are_named():
    x, y = _pair(10)
    with pytest.raises(ValueError, match="level"):
        linear_cka(x, y, level=1.5)
    with pytest.raises(ValueError, match="no other network"):
        paired_cka(x, {})


def _table(ids, embeddings):
    return EmbeddingTable(np.asarray(ids), np.asarray(["c"] * len(ids)), np.asarray(embeddings))


def test_cka_table_pools_each_family_and_aligns_images_by_id():
    x, y0 = _pair(20, n=40)
    rng = np.random.default_rng(21)
    y1 = x @ rng.standard_normal((12, 9)) + rng.standard_normal((40, 9))  # another read-out of x
    s0 = _pair(22, n=40)[1]  # a read-out of other images' x: unrelated to this x
    ids = [f"img{i}" for i in range(40)]
    order = np.random.default_rng(0).permutation(40)
    networks = {
        "ft-d-seed0": _table(ids, y0),
        "ft-d-seed1": _table(np.asarray(ids)[order], y1[order]),  # the same images, in another order
        "scratch-d-seed0": _table(ids, s0),
    }
    table = cka_table(_table(ids, x), networks, ci_level=0.9)
    assert table["stage"].tolist() == ["ft-d-seed0", "ft-d-seed1", "ft-d", "scratch-d-seed0", "scratch-d"]
    assert table["seed"].tolist() == [0, 1, "pooled", 0, "pooled"]
    assert table["network"].tolist() == ["finetuned"] * 3 + ["scratch"] * 2
    by_stage = table.set_index("stage")
    assert by_stage.loc["ft-d-seed1", "cka"] == pytest.approx(linear_cka(x, y1).estimate)
    assert by_stage.loc["ft-d", "cka"] == pytest.approx((linear_cka(x, y0).estimate + linear_cka(x, y1).estimate) / 2)
    assert (table["ci_level"] == 0.9).all() and (table["n_images"] == 40).all()
    assert (table["dims"] == 9).all() and (table["dims_pretrained"] == 12).all()
    # the finetuned networks read x, the scratch one does not: each finetuned row is above the scratch family's
    scratch = by_stage.loc["scratch-d", "cka"]
    assert by_stage.loc["ft-d", "scratch_difference"] == pytest.approx(by_stage.loc["ft-d", "cka"] - scratch)
    assert (table["representation"].tolist()) == ["kept"] * 3 + ["", ""]
    assert (table.loc[table["network"] == "finetuned", "scratch_difference_low"] > 0).all()
    assert table.loc[table["network"] == "scratch", "scratch_difference"].isna().all()
    # a "scratch" network that reads x as well as the finetuned ones do: the representation is not kept beyond it
    same = cka_table(_table(ids, x), {"ft-d-seed0": _table(ids, y0), "scratch-d-seed0": _table(ids, y0)})
    assert same.loc[0, "scratch_difference"] == 0 and same.loc[0, "representation"] == "replaced"


def test_cka_table_names_a_network_with_other_images_or_a_pretrained_stage():
    x, y = _pair(23, n=10)
    ids = [f"img{i}" for i in range(10)]
    with pytest.raises(
        ValueError, match=r"ft-d-seed0 does not embed the pretrained network's images: missing \['img9'\]"
    ):
        cka_table(_table(ids, x), {"ft-d-seed0": _table([*ids[:9], "other"], y)})
    with pytest.raises(ValueError, match="neither finetuned nor scratch"):
        cka_table(_table(ids, x), {"pretrained": _table(ids, y)})


def _summary(difference_low, scratch=True):
    rows = [
        dict(network="finetuned", seed=0, cka=0.9, ci_low=0.85, ci_high=0.95, representation=""),
        dict(network="finetuned", seed="pooled", cka=0.9, ci_low=0.85, ci_high=0.95, representation=""),
    ]
    if scratch:
        rows += [dict(network="scratch", seed="pooled", cka=0.7, ci_low=0.6, ci_high=0.8, representation="")]
        rows[1].update(
            scratch_difference=0.2,
            scratch_difference_low=difference_low,
            scratch_difference_high=0.3,
            representation="kept" if difference_low > 0 else "replaced",
        )
    return pd.DataFrame(rows).assign(analysis_set="s", model="m", finetune_dataset="d")


def test_the_findings_tell_a_kept_representation_from_a_replaced_one():
    bts = pd.DataFrame(
        {"analysis_set": "s", "model": "m", "finetune_dataset": "d", "seed": "pooled", "kind": ["intra", "inter"]}
    ).assign(statistic=[0.93, 0.81])
    kept = "\n".join(describe_representation(_summary(0.1), bts))
    assert (
        "- **m** on s, finetuned on d (1 seed averaged): the representation kept 0.90 [0.85, 0.95] of the pretrained "
        "one's linear structure; the network trained from scratch shares 0.70 [0.60, 0.80], so finetuning kept the "
        "representation (difference 0.20 [0.10, 0.30]). Beside it, the BTS (seeds pooled): intra rho = 0.93, "
        "inter rho = 0.81." in kept
    )
    replaced = "\n".join(describe_representation(_summary(-0.1), bts))
    assert "finetuning replaced the representation, and a BTS here shows what the target data give" in replaced
    alone = "\n".join(describe_representation(_summary(0, scratch=False)))
    assert "cannot tell a kept representation from what any network of the architecture shares" in alone
    assert describe_representation(None) == [] and describe_representation(pd.DataFrame()) == []
