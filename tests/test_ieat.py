"""iEAT: reference golden values, brute-force enumeration, sampler uniformity, calibration, bad input."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from biastransfer.stats.ieat import IEATResult, _all_partition_sums, _random_partition_sums, ieat


def mk(offset, n):
    """anchors-mission.md §2.5: rows [cos k, sin k, k/10] for k = offset+1 .. offset+n."""
    k = np.arange(1, n + 1) + offset
    return np.column_stack([np.cos(k), np.sin(k), k / 10])


class BruteWeat:
    """Brute-force restatement of the reference Test semantics (ryansteed/weat), loops everywhere."""

    def __init__(self, X, Y, A, B):
        self.X, self.Y, self.A, self.B = X, Y, A, B

    @staticmethod
    def cos(u, v):
        return sum(a * b for a, b in zip(u, v)) / math.sqrt(sum(a * a for a in u) * sum(b * b for b in v))

    def s(self, w):
        return sum(self.cos(w, a) for a in self.A) / len(self.A) - sum(self.cos(w, b) for b in self.B) / len(self.B)

    def scores(self):
        return [self.s(w) for w in list(self.X) + list(self.Y)]

    def effect_size(self):
        s = self.scores()
        nx = len(self.X)
        return (np.mean(s[:nx]) - np.mean(s[nx:])) / np.std(s, ddof=1)

    def exact_p(self):
        """One-sided upper tail over all partitions, ties counted, as an exact fraction."""
        s = self.scores()
        nx = len(self.X)
        observed = sum(s[:nx])
        partitions = list(itertools.combinations(range(len(s)), nx))
        hits = sum(1 for part in partitions if sum(s[i] for i in part) >= observed)
        return Fraction(hits, len(partitions))


def test_golden_values_case_1():
    res = ieat(mk(0, 4), mk(0.5, 4), mk(2.0, 3), mk(3.3, 5))
    assert res.effect_size == pytest.approx(-0.261345261791, abs=1e-12)
    assert Fraction(res.pvalue).limit_denominator(1000) == Fraction(44, 70)
    assert (res.method, res.permutations, res.pvalue_se, res.seed) == ("exact", 70, 0.0, None)


def test_golden_values_case_2_and_swap():
    X, Y, A, B = mk(0, 7), mk(0.25, 7), mk(1, 6), mk(4, 6)
    res = ieat(X, Y, A, B)
    assert res.effect_size == pytest.approx(0.021489847849, abs=1e-12)
    assert res.pvalue == pytest.approx(1667 / 3432, abs=1e-15)
    swapped = ieat(Y, X, A, B)
    assert swapped.effect_size == pytest.approx(-0.021489847849, abs=1e-12)
    assert swapped.pvalue == pytest.approx(1766 / 3432, abs=1e-15)
    assert res.pvalue + swapped.pvalue == pytest.approx(1 + 1 / 3432)  # observed ties on both sides


def test_statistic_and_effect_size_match_brute_force():
    X, Y, A, B = mk(0, 4), mk(0.5, 4), mk(2.0, 3), mk(3.3, 5)
    brute = BruteWeat(X, Y, A, B)
    s = brute.scores()
    np.testing.assert_allclose(
        s,
        [-0.73015107, -0.15825371, 0.50828036, 0.64224359, -0.50114984, 0.20939733, 0.66454796, 0.45112544],
        atol=5e-9,
    )
    res = ieat(X, Y, A, B)
    assert res.statistic == pytest.approx(sum(s[:4]) - sum(s[4:]), abs=1e-12)
    assert res.effect_size == pytest.approx(brute.effect_size(), abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_exact_p_equals_brute_force_enumeration(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 6))
    d = 4
    X, Y = rng.standard_normal((n, d)), rng.standard_normal((n, d)) + 0.3 * seed
    A, B = rng.standard_normal((3, d)), rng.standard_normal((4, d))
    res = ieat(X, Y, A, B)
    assert res.method == "exact" and res.permutations == math.comb(2 * n, n)
    assert Fraction(res.pvalue).limit_denominator(res.permutations) == BruteWeat(X, Y, A, B).exact_p()


def test_unequal_sizes_use_the_full_statistic_without_truncation():
    rng = np.random.default_rng(7)
    X, Y = rng.standard_normal((3, 5)) + 0.4, rng.standard_normal((6, 5))
    A, B = rng.standard_normal((4, 5)) + 0.4, rng.standard_normal((2, 5))
    s = BruteWeat(X, Y, A, B).scores()
    observed = sum(s[:3]) - sum(s[3:])
    full = [
        sum(s[i] for i in part) - sum(s[j] for j in range(9) if j not in part)
        for part in itertools.combinations(range(9), 3)
    ]
    res = ieat(X, Y, A, B)
    assert (res.n_x, res.n_y, res.permutations) == (3, 6, 84)
    assert res.pvalue == pytest.approx(sum(f >= observed - 1e-12 for f in full) / 84)
    assert ieat(X, Y, A, B, alternative="less").pvalue == pytest.approx(sum(f <= observed + 1e-12 for f in full) / 84)
    centre = np.mean(full)
    two = sum(abs(f - centre) >= abs(observed - centre) - 1e-12 for f in full) / 84
    assert ieat(X, Y, A, B, alternative="two-sided").pvalue == pytest.approx(two)


def test_partition_sampler_is_uniform():
    # s_i = 2**i makes each subset's sum unique, so the sums identify the drawn subsets.
    s = 2.0 ** np.arange(6)
    sums = np.concatenate(list(_random_partition_sums(s, 3, 40_000, np.random.default_rng(5))))
    subsets = {sum(s[list(part)]) for part in itertools.combinations(range(6), 3)}
    values, counts = np.unique(sums, return_counts=True)
    assert set(values) == subsets
    assert stats.chisquare(counts).pvalue > 0.001


def test_normal_method_uses_the_exact_permutation_moments():
    rng = np.random.default_rng(8)
    s = rng.standard_normal(11)
    sums = np.concatenate(list(_all_partition_sums(s, 4)))
    assert sums.size == math.comb(11, 4)
    assert sums.mean() == pytest.approx(4 * s.mean())
    assert sums.var() == pytest.approx(4 * 7 / (11 * 10) * np.sum((s - s.mean()) ** 2))
    X, Y = rng.standard_normal((8, 6)) + 0.2, rng.standard_normal((8, 6))
    A, B = rng.standard_normal((5, 6)) + 0.2, rng.standard_normal((5, 6))
    normal = ieat(X, Y, A, B, method="normal")
    exact = ieat(X, Y, A, B, method="exact")
    assert (normal.method, normal.permutations, normal.seed) == ("normal", 0, None)
    assert normal.pvalue == pytest.approx(exact.pvalue, abs=0.03)


def test_monte_carlo_is_seeded_and_close_to_exact():
    rng = np.random.default_rng(9)
    X, Y = rng.standard_normal((8, 6)) + 0.1, rng.standard_normal((8, 6))
    A, B = rng.standard_normal((5, 6)) + 0.1, rng.standard_normal((5, 6))
    exact = ieat(X, Y, A, B)  # 12870 partitions <= 100000
    mc = ieat(X, Y, A, B, permutations=4000, seed=11)
    assert exact.method == "exact" and mc.method == "permutation"
    assert (mc.permutations, mc.seed) == (4000, 11)
    assert mc.pvalue_se == pytest.approx(math.sqrt(mc.pvalue * (1 - mc.pvalue) / 3999))
    assert abs(mc.pvalue - exact.pvalue) < 4 * mc.pvalue_se
    assert mc == ieat(X, Y, A, B, permutations=4000, seed=11)
    assert mc.pvalue != ieat(X, Y, A, B, permutations=4000, seed=12).pvalue
    assert ieat(X, Y, A, B, method="permutation", permutations=2, seed=0).pvalue in (0.5, 1.0)


def test_planted_association_is_found():
    rng = np.random.default_rng(10)
    a_dir, b_dir = rng.standard_normal(32), rng.standard_normal(32)
    X = rng.standard_normal((30, 32)) + 0.6 * a_dir
    Y = rng.standard_normal((30, 32)) + 0.6 * b_dir
    A = rng.standard_normal((20, 32)) + a_dir
    B = rng.standard_normal((20, 32)) + b_dir
    res = ieat(X, Y, A, B, permutations=20_000)
    assert res.method == "permutation" and res.effect_size > 1.0 and res.pvalue == 1 / 20_000
    assert ieat(X, Y, A, B, alternative="two-sided", permutations=20_000).pvalue < 0.001
    assert ieat(X, Y, A, B, alternative="less", permutations=1000).pvalue > 0.99
    assert ieat(X, Y, A, B, method="normal").pvalue < 1e-6


@pytest.mark.slow  # about 25 s of CPU (make test-fast leaves it out)
def test_null_rejection_rate_is_nominal():
    """All four sets from one distribution: rejection at alpha = 0.05 within [0.03, 0.07]."""
    rng = np.random.default_rng(2024)
    exact_rejections = {"greater": 0, "less": 0, "two-sided": 0}
    n_exact = 1500
    for _ in range(n_exact):  # 6 vs 6: 924 partitions, exact path
        X, Y, A, B = (rng.standard_normal((6, 5)) for _ in range(4))
        for alternative in exact_rejections:
            exact_rejections[alternative] += ieat(X, Y, A, B, alternative=alternative).pvalue <= 0.05
    for alternative, count in exact_rejections.items():
        assert 0.03 <= count / n_exact <= 0.07, (alternative, count / n_exact)
    mc_rejections = 0
    n_mc = 800
    for i in range(n_mc):  # unequal 9 vs 13: Monte Carlo path with 200 partitions
        X, Y = rng.standard_normal((9, 5)), rng.standard_normal((13, 5))
        A, B = rng.standard_normal((4, 5)), rng.standard_normal((7, 5))
        res = ieat(X, Y, A, B, permutations=200, seed=i)
        mc_rejections += res.pvalue <= 0.05
    assert res.method == "permutation"
    assert 0.03 <= mc_rejections / n_mc <= 0.07, mc_rejections / n_mc


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), nx=st.integers(2, 5), ny=st.integers(2, 5))
def test_properties_scaling_order_and_swap(seed, nx, ny):
    rng = np.random.default_rng(seed)
    X, Y = rng.standard_normal((nx, 4)), rng.standard_normal((ny, 4))
    A, B = rng.standard_normal((3, 4)), rng.standard_normal((4, 4))
    base = ieat(X, Y, A, B)

    def jiggle(M):
        return (M * rng.uniform(0.01, 100.0, size=(len(M), 1)))[rng.permutation(len(M))]

    moved = ieat(jiggle(X), jiggle(Y), jiggle(A), jiggle(B))
    assert moved.effect_size == pytest.approx(base.effect_size, abs=1e-9)
    assert moved.statistic == pytest.approx(base.statistic, abs=1e-9)
    assert moved.pvalue == base.pvalue
    swapped = ieat(Y, X, A, B)
    assert swapped.effect_size == pytest.approx(-base.effect_size, abs=1e-12)
    assert swapped.pvalue == pytest.approx(ieat(X, Y, A, B, alternative="less").pvalue)


def test_degenerate_scores_give_nan_effect_size():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((3, 4))
    res = ieat(rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), A, A * 2.0)
    assert np.isnan(res.effect_size) and res.pvalue == 1.0


def test_d_needs_two_images_in_each_set():
    """By hand in the plane, A = B's mirror: A = two copies of (1, 0), B = two of (0, 1), so s(w) = cos(w, (1, 0))
    - cos(w, (0, 1)). X = (1, 0), (1, 0): s = 1, 1; Y = (0, 1), (1, 1): s = -1, 0. d = (1 - (-1/2)) / SD(1, 1,
    -1, 0) = 1.5 / sqrt(2.75 / 3). With one image each of X and Y the same arithmetic gives d = +-sqrt(2) for any
    embeddings (two scores' SD is their gap over sqrt(2)): not estimable, NaN and why; so with one image of A."""
    a, b = np.array([[1.0, 0.0]] * 2), np.array([[0.0, 1.0]] * 2)
    x, y = np.array([[1.0, 0.0]] * 2), np.array([[0.0, 1.0], [1.0, 1.0]])
    full = ieat(x, y, a, b, bootstrap=0)
    assert full.effect_size == pytest.approx(1.5 / math.sqrt(2.75 / 3), abs=1e-12) and full.not_estimable == ""
    rng = np.random.default_rng(0)
    for _ in range(5):  # today's d of one image each of X and Y: always +-sqrt(2)
        one, other = rng.standard_normal((2, 1, 2))
        res = ieat(one, other, a, b, bootstrap=0)
        assert math.isnan(res.effect_size) and abs(res.mean_difference / res.pooled_sd) == pytest.approx(math.sqrt(2))
        assert res.not_estimable == (
            "d not estimable: X has 1, Y has 1 image(s); each of X, Y, A and B needs at least 2"
        )
        assert res.pvalue in (0.5, 1.0)  # the two partitions: the test is still defined, and powerless
    short = ieat(x, y, a[:1], b, bootstrap=0)
    assert math.isnan(short.effect_size) and short.not_estimable.startswith("d not estimable: A has 1 image(s)")


def test_d_below_two_images_is_nan_in_the_change_and_seed_tables():
    """The same rule wherever d is computed: the bootstrap blocks (the change of d between networks) and the
    combined seeds' mean d."""
    from biastransfer.stats.bootstrap import IEATBlocks, ieat_change
    from biastransfer.stats.seeds import combined_ieat

    rng = np.random.default_rng(1)
    sets = [rng.standard_normal((n, 3)) for n in (1, 1, 6, 6)]
    blocks = IEATBlocks(*sets)
    assert math.isnan(blocks.observed()) and blocks.not_estimable.startswith("d not estimable: X has 1, Y has 1")
    moved = [s + rng.normal(0, 0.1, s.shape) for s in sets]
    change = ieat_change(sets, moved, replicates=40)
    assert math.isnan(change.before) and math.isnan(change.after) and math.isnan(change.delta)
    seeds = combined_ieat([sets, moved])
    assert math.isnan(seeds.mean_d) and math.isnan(seeds.min_d) and seeds.pvalue in (0.5, 1.0)


def test_result_fields_and_as_dict():
    res = ieat(mk(0, 4), mk(0.5, 4), mk(2.0, 3), mk(3.3, 5))
    row = res.as_dict()
    assert set(row) == set(IEATResult.__dataclass_fields__)
    assert (row["n_x"], row["n_y"], row["n_a"], row["n_b"], row["alternative"]) == (4, 4, 3, 5, "greater")


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        ((np.empty((0, 3)), mk(0, 2), mk(1, 2), mk(2, 2)), {}, "X is empty"),
        ((mk(0, 2), mk(0, 2), mk(1, 2), np.ones(3)), {}, r"B must be 2-D \(rows x dims\), got shape \(3,\)"),
        ((mk(0, 2), np.array([[np.nan, 1, 1]]), mk(1, 2), mk(2, 2)), {}, "Y contains NaN"),
        ((mk(0, 2), mk(0, 2), mk(1, 2), np.vstack([mk(2, 3), np.zeros((1, 3))])), {}, "B row 3 is all zeros"),
        (
            (np.ones((2, 2048)), np.ones((2, 2048)), np.ones((2, 512)), np.ones((2, 2048))),
            {},
            "A has 512 dims but X has 2048",
        ),
        ((mk(0, 2), mk(0, 2), mk(1, 2), mk(2, 2)), {"alternative": "two_sided"}, "alternative must be one of"),
        ((mk(0, 2), mk(0, 2), mk(1, 2), mk(2, 2)), {"method": "bootstrap"}, "method must be one of"),
        ((mk(0, 2), mk(0, 2), mk(1, 2), mk(2, 2)), {"permutations": 0}, "permutations must be a positive int"),
        ((mk(0, 2), mk(0, 2), mk(1, 2), mk(2, 2)), {"method": "permutation", "permutations": 1}, "at least 2"),
        ((mk(0, 2), mk(0, 2), mk(1, 2), mk(2, 2)), {"method": "permutation", "seed": 1.5}, "seed must be"),
        ((mk(0, 40), mk(0, 40), mk(1, 2), mk(2, 2)), {"method": "exact"}, "would enumerate"),
    ],
)
def test_bad_input_is_named(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        ieat(*args, **kwargs)
