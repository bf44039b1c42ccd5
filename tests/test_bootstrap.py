"""Bootstrap intervals, paired changes, the combined test over seeds, exact BTS permutation p-values."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from biastransfer.stats.bootstrap import (
    IEATBlocks,
    bootstrap_pvalue,
    ieat_change,
    ieat_changes,
    ieat_ci,
    ieat_replicates,
    percentile_interval,
    resample_counts,
)
from biastransfer.stats.bts import bias_transfer_score
from biastransfer.stats.ieat import ieat
from biastransfer.stats.resampled_similarity import (
    rank_correlation_ci,
    similarity_changes,
    similarity_replicates,
)
from biastransfer.stats.seeds import combined_ieat

DIMS = 6
E1, E2 = np.eye(DIMS)[0], np.eye(DIMS)[1]
MEANS = {"X": 0.6 * E1, "Y": 0.6 * E2, "A": 1.5 * E1, "B": 1.5 * E2}


def draw(rng, n, means=MEANS):
    return [means[k] + rng.normal(size=(n, DIMS)) for k in "XYAB"]


def unit(Z):
    return Z / np.linalg.norm(Z, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def population_d():
    """d of the population behind ``draw``: the plug-in d of one very large sample."""
    rng = np.random.default_rng(12345)
    X, Y, A, B = draw(rng, 200_000)
    direction = unit(A).mean(0) - unit(B).mean(0)
    sx, sy = unit(X) @ direction, unit(Y) @ direction
    return (sx.mean() - sy.mean()) / np.concatenate([sx, sy]).std()


def test_counts_replicate_effect_size_of_the_resampled_rows():
    rng = np.random.default_rng(0)
    sets = [rng.normal(size=(n, 5)) for n in (6, 7, 5, 8)]
    blocks = IEATBlocks(*sets)
    assert blocks.observed() == pytest.approx(ieat(*sets, bootstrap=0).effect_size, abs=1e-12)
    for _ in range(5):
        rows = [rng.integers(0, len(s), len(s)) for s in sets]
        counts = [np.bincount(r, minlength=len(s))[None].astype(float) for r, s in zip(rows, sets)]
        brute = ieat(*[s[r] for s, r in zip(sets, rows)], bootstrap=0).effect_size
        assert blocks.effect_sizes(*counts)[0] == pytest.approx(brute, abs=1e-12)


def test_resample_counts_are_multinomial():
    counts = resample_counts(5, 20_000, np.random.default_rng(1))
    assert (counts.sum(axis=1) == 5).all()
    assert counts.mean(axis=0) == pytest.approx(np.ones(5), abs=0.03)
    assert counts.var(axis=0) == pytest.approx(np.full(5, 0.8), abs=0.03)  # n p (1 - p)


def test_ieat_interval_covers_the_population_d(population_d):
    """95% intervals cover the population d in 93-97% of 400 datasets of 30 rows per set (6 dims)."""
    assert population_d == pytest.approx(0.765, abs=0.01)
    hits = 0
    for i in range(400):
        res = ieat_ci(*draw(np.random.default_rng(1000 + i), 30), replicates=1000, seed=i)
        hits += res.ci_low <= population_d <= res.ci_high
    assert 0.93 <= hits / 400 <= 0.97


def test_ieat_interval_covers_a_large_d_in_many_dimensions():
    """256 dims, 30 rows per set: the resampled d sits below the observed one; the bias-corrected
    interval still covers the population d in 93-98% of 200 datasets (a plain percentile one: ~84%)."""
    dims = 256
    e1, e2 = np.eye(dims)[0], np.eye(dims)[1]
    means = {"X": 2.4 * e1, "Y": 2.4 * e2, "A": 6.0 * e1, "B": 6.0 * e2}

    def sets(rng, n):
        return [means[k] + rng.normal(size=(n, dims)) for k in "XYAB"]

    X, Y, A, B = sets(np.random.default_rng(5), 40_000)
    direction = unit(A).mean(0) - unit(B).mean(0)
    sx, sy = unit(X) @ direction, unit(Y) @ direction
    population_d = (sx.mean() - sy.mean()) / np.concatenate([sx, sy]).std()
    hits = sum(
        (lambda r: r.ci_low <= population_d <= r.ci_high)(
            ieat_ci(*sets(np.random.default_rng(100 + i), 30), replicates=1000, seed=i)
        )
        for i in range(200)
    )
    assert 0.93 <= hits / 200 <= 0.98


def test_ieat_result_carries_the_interval_and_is_seeded():
    sets = draw(np.random.default_rng(3), 20)
    a, b = ieat(*sets, permutations=2000, seed=7), ieat(*sets, permutations=2000, seed=7)
    assert a == b
    assert a.ci_low < a.effect_size < a.ci_high and (a.ci_level, a.bootstrap, a.ci_seed) == (0.95, 2000, 7)
    assert math.isnan(ieat(*sets, bootstrap=0).ci_low)
    with pytest.raises(ValueError, match="level"):
        ieat(*sets, ci_level=1.5)


def _paired(rng, n, shift):
    """The same images in two networks: shared content, independent noise dims; ``shift`` moves X toward B."""
    before, after = [], []
    for k, Z in zip("XYAB", draw(rng, n)):
        moved = Z + (shift * E2 if k == "X" else 0)
        before.append(np.hstack([Z, rng.normal(size=(n, 3))]))
        after.append(np.hstack([moved, rng.normal(size=(n, 3))]))
    return before, after


def test_paired_change_detects_a_planted_change_and_is_calibrated_without_one():
    rejections, deltas, ses, raw_sds = {0.0: 0, 1.0: 0}, [], [], []
    for shift in rejections:
        for i in range(200):
            before, after = _paired(np.random.default_rng(i), 25, shift)
            res = ieat_change(before, after, replicates=400, seed=i)
            assert res.delta == pytest.approx(res.after - res.before)
            assert res.ci_low < res.delta < res.ci_high and res.method == "corrected normal"
            rejections[shift] += res.pvalue < 0.05
            if shift == 0.0:
                pair = [IEATBlocks(*before), IEATBlocks(*after)]
                reps = ieat_replicates(pair, 400, i)  # the plain paired bootstrap: targets and attributes together
                deltas.append(res.delta), ses.append(res.se), raw_sds.append(np.std(reps[1] - reps[0], ddof=1))
    assert rejections[1.0] / 200 > 0.8
    # Without a change: near the level (the plain paired bootstrap rejected 0 of 150 such datasets).
    assert 0.01 <= rejections[0.0] / 200 <= 0.07
    # The corrected standard error tracks the sampling SD of the change; the plain bootstrap's SD is
    # inflated by the interactions it counts three times (docs/statistics.md, "The change").
    true_sd = np.std(deltas, ddof=1)
    assert 0.9 <= np.mean(ses) / true_sd <= 1.15
    assert np.mean(raw_sds) / true_sd > 1.3


def test_one_bootstrap_serves_every_seed():
    rng = np.random.default_rng(5)
    before, after = _paired(rng, 12, 0.5)
    _, other = _paired(rng, 12, 0.0)
    blocks = [IEATBlocks(*before), IEATBlocks(*after), IEATBlocks(*other)]
    both = ieat_changes(blocks, replicates=300, seed=3)
    assert both[0] == ieat_change(before, after, replicates=300, seed=3)
    assert both[1].before == both[0].before and both[1].after == pytest.approx(blocks[2].observed())
    with pytest.raises(ValueError, match="at least one more"):
        ieat_changes(blocks[:1])


def test_bootstrap_pvalue_is_never_below_its_floor():
    assert bootstrap_pvalue(np.full(99, 1.0)) == pytest.approx(2 / 100)
    assert bootstrap_pvalue(np.r_[np.full(50, -1.0), np.full(50, 1.0)]) == 1.0
    assert percentile_interval(np.arange(101.0), 0.9) == pytest.approx((5.0, 95.0))


def test_similarity_replicates_match_brute_force_on_resampled_images():
    rng = np.random.default_rng(4)
    pre = {c: rng.normal(size=(k, 4)) + 1 for c, k in zip("abc", (4, 5, 6))}
    post = {c: z + 0.5 * rng.normal(size=z.shape) for c, z in pre.items()}
    reps = similarity_replicates({"pre": pre, "post": post}, list("abc"), [("a", "c")], replicates=40, seed=9)
    counts_rng = np.random.default_rng(9)
    counts = {c: resample_counts(len(pre[c]), 40, counts_rng) for c in "abc"}
    for stage, groups in (("pre", pre), ("post", post)):
        for r in range(3):
            rows = {c: np.repeat(np.arange(len(z)), counts[c][r].astype(int)) for c, z in groups.items()}
            u = {c: unit(groups[c][rows[c]]) for c in groups}
            gram = u["b"] @ u["b"].T
            distinct = rows["b"][:, None] != rows["b"][None, :]  # pairs of different images
            assert reps.replicates[stage][r, 1] == pytest.approx(gram[distinct].mean(), abs=1e-12)
            assert reps.replicates[stage][r, 3] == pytest.approx((u["a"] @ u["c"].T).mean(), abs=1e-12)
    changes = similarity_changes(reps, "pre", "post")
    assert changes["a"].delta == pytest.approx(reps.observed["post"][0] - reps.observed["pre"][0])
    ci = rank_correlation_ci(reps, "pre", ["post"], list("abc"))
    rho = stats.spearmanr(reps.observed["pre"][:3], reps.observed["post"][:3]).statistic
    assert ci.estimate == pytest.approx(rho)


def test_combined_test_is_calibrated_on_null_data():
    """Rejection rate at 0.05 within [0.03, 0.07], for shared images (paired) and separate ones."""
    for paired in (True, False):
        rejections = 0
        for i in range(600):
            rng = np.random.default_rng(i)
            shared = draw(rng, 6, {k: E1 for k in "XYAB"})
            strata = [
                [z + 0.5 * rng.normal(size=z.shape) for z in shared]
                if paired
                else draw(rng, 6, {k: E1 for k in "XYAB"})
                for _ in range(3)
            ]
            res = combined_ieat(strata, paired=paired, permutations=300, seed=i)
            rejections += res.pvalue < 0.05
        assert 0.03 <= rejections / 600 <= 0.07, paired


def test_combined_test_summary_and_reduction_to_one_ieat():
    rng = np.random.default_rng(5)
    strata = [draw(rng, 5) for _ in range(3)]
    res = combined_ieat(strata, paired=True)
    ds = [ieat(*s, bootstrap=0).effect_size for s in strata]
    assert (res.mean_d, res.sd_d, res.min_d, res.max_d) == pytest.approx(
        (np.mean(ds), np.std(ds, ddof=1), min(ds), max(ds))
    )
    one = combined_ieat(strata[:1])
    assert (one.pvalue, one.pvalue_two_sided) == (ieat(*strata[0]).pvalue, ieat(*strata[0]).pvalue_two_sided)
    with pytest.raises(ValueError, match="same"):
        combined_ieat([strata[0], draw(rng, 4)], paired=True)


@pytest.mark.parametrize("n", [3, 4, 5, 6])
@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_exact_bts_pvalue_equals_brute_force_enumeration(n, alternative):
    rng = np.random.default_rng(n)
    before = dict(zip(range(n), rng.normal(size=n)))
    after = dict(zip(range(n), rng.normal(size=n)))
    res = bias_transfer_score(before, after, pvalue="permutation", alternative=alternative)
    x, y = np.array(list(before.values())), np.array(list(after.values()))
    rhos = np.array([stats.spearmanr(x, y[list(order)]).statistic for order in itertools.permutations(range(n))])
    observed = stats.spearmanr(x, y).statistic
    eps = 1e-12
    greater, less = np.mean(rhos >= observed - eps), np.mean(rhos <= observed + eps)
    expected = {"greater": greater, "less": less, "two-sided": min(1.0, 2 * min(greater, less))}[alternative]
    assert res.pvalue == pytest.approx(expected, abs=1e-12)
    assert res.permutations == math.factorial(n) and res.pvalue >= res.pvalue_floor


def test_bts_monte_carlo_p_at_its_floor():
    keys = range(12)  # 12! orderings: Monte Carlo
    res = bias_transfer_score(
        dict(zip(keys, range(12))), dict(zip(keys, range(12))), pvalue="permutation", permutations=1000
    )
    assert res.pvalue == pytest.approx(2 / 1000) and res.pvalue_floor == pytest.approx(2 / 1000)


def test_permuting_shared_images_independently_per_seed_would_be_anti_conservative():
    """Why the workflow's combined test re-partitions the images once for all seeds (paired=True)."""
    rejections = 0
    for i in range(300):
        rng = np.random.default_rng(i)
        shared = draw(rng, 6, {k: E1 for k in "XYAB"})
        strata = [[z + 0.5 * rng.normal(size=z.shape) for z in shared] for _ in range(3)]
        rejections += combined_ieat(strata, paired=False, permutations=300, seed=i).pvalue < 0.05
    assert rejections / 300 > 0.09


def _table(ids, classes, embeddings):
    from biastransfer.embeddings import EmbeddingTable

    return EmbeddingTable(np.array(ids), np.array(classes), np.asarray(embeddings, dtype=float))


def test_change_tables_pair_the_networks_by_image_id():
    from biastransfer.stats.change_tables import aligned_classes, ieat_change_table, ieat_seeds_table

    rng = np.random.default_rng(8)
    classes = np.repeat(list("xyab"), 5)
    ids = [f"i{k}" for k in range(20)]
    pre = _table(ids, classes, rng.normal(size=(20, 4)) + 1)
    ft = _table(ids, classes, pre.embeddings + 0.3 * rng.normal(size=(20, 4)))
    order = rng.permutation(20)  # the finetuned file lists the same images in another order
    shuffled = _table(np.array(ids)[order], classes[order], ft.embeddings[order])
    groups = aligned_classes({"pretrained": pre, 0: shuffled})
    assert np.array_equal(groups[0]["x"], ft.embeddings[:5])
    test = {"name": "t", "X": "x", "Y": "y", "A": "a", "B": "b"}
    row = ieat_change_table({"pretrained": pre, 0: shuffled}, [test], bootstrap=300, seed=2).iloc[0]
    direct = ieat_change([pre.of_class(c) for c in "xyab"], [ft.of_class(c) for c in "xyab"], replicates=300, seed=2)
    assert (row.delta_d, row.ci_low, row.ci_high, row.pvalue) == pytest.approx(
        (direct.delta, direct.ci_low, direct.ci_high, direct.pvalue)
    )
    seeds = ieat_seeds_table({0: shuffled, 1: ft}, [test], permutations=500).iloc[0]
    assert seeds.n_seeds == 2 and seeds.sd_d == pytest.approx(0.0, abs=1e-12)  # the same network twice
    other = _table(ids[:19] + ["new"], classes, ft.embeddings)
    with pytest.raises(ValueError, match="stage 0 class 'b'.*same images"):
        aligned_classes({"pretrained": pre, 0: other})


def test_jackknife_acceleration_equals_brute_force_deletion():
    """a = sum D^3 / (6 (sum D^2)^1.5) over every row of every set, each d from an iEAT without that row."""
    rng = np.random.default_rng(11)
    sets = [rng.normal(size=(n, 4)) + (1.0 if k in "XA" else 0.0) for n, k in zip((5, 6, 4, 7), "XYAB")]
    deviations = []
    for k in range(4):
        theta = np.array(
            [
                ieat(
                    *[np.delete(s, i, 0) if j == k else s for j, s in enumerate(sets)], bootstrap=0, alpha=None
                ).effect_size
                for i in range(len(sets[k]))
            ]
        )
        deviations.append(theta.mean() - theta)
    D = np.concatenate(deviations)
    assert IEATBlocks(*sets).acceleration() == pytest.approx(np.sum(D**3) / (6 * np.sum(D**2) ** 1.5), abs=1e-12)


def test_bca_reduces_to_bc_and_the_expanded_level_to_the_nominal_one():
    from biastransfer.stats.bootstrap import bias_corrected_interval, expanded_level

    reps = np.random.default_rng(2).gamma(2.0, size=4000)
    z = stats.norm.ppf(0.975)
    assert bias_corrected_interval(reps, 2.0, 0.95, 0.0) == bias_corrected_interval(reps, 2.0, 0.95)
    low, high = bias_corrected_interval(reps, float(np.median(reps)), 0.95, 0.1)  # z0 = 0
    assert (low, high) == pytest.approx(
        tuple(np.quantile(reps, stats.norm.cdf([-z / (1 + 0.1 * z), z / (1 - 0.1 * z)])))
    )
    assert expanded_level(0.95, 10) == pytest.approx(2 * stats.norm.cdf(np.sqrt(10 / 9) * stats.t.ppf(0.975, 9)) - 1)
    assert expanded_level(0.95, 6) > expanded_level(0.95, 40) > expanded_level(0.95, 10_000) > 0.95
    assert expanded_level(0.95, 10_000) == pytest.approx(0.95, abs=1e-3)


def _heavy_tailed(rng, sizes, separation=2.5, dims=24):
    """Anisotropic (scales 1/sqrt(k)) multivariate-t (3 df) embeddings; |d| near 1.7 at separation 2.5."""
    scales = 1 / np.sqrt(np.arange(1, dims + 1))
    e1, e2 = np.eye(dims)[0], np.eye(dims)[1]
    means = {"X": separation * e1, "Y": separation * e2, "A": 1.5 * e1, "B": 1.5 * e2}
    return [means[k] + rng.standard_t(3, size=(n, dims)) * scales for k, n in zip("XYAB", sizes)]


@pytest.fixture(scope="module")
def heavy_tailed_scores():
    """Scores s of X and Y rows of the population behind ``_heavy_tailed`` (one very large sample)."""
    big = _heavy_tailed(np.random.default_rng(99), (200_000,) * 4)
    direction = unit(big[2]).mean(0) - unit(big[3]).mean(0)
    return unit(big[0]) @ direction, unit(big[1]) @ direction


@pytest.mark.parametrize("sizes", [(6, 6, 6, 6), (12, 15, 12, 15), (40, 40, 40, 40), (150, 150, 150, 150)])
def test_interval_covers_a_large_d_with_heavy_tailed_anisotropic_embeddings(sizes, heavy_tailed_scores):
    """|d| near 1.7: the BCa interval at the expanded level covers the population d in >= 93% of 250 data
    sets, from 6 to 150 rows a set (the former BC interval: about 91-92% at 15 and 40 rows)."""
    sx, sy = heavy_tailed_scores
    p = sizes[0] / (sizes[0] + sizes[1])  # the union's mix of X and Y
    mean = p * sx.mean() + (1 - p) * sy.mean()
    population = (sx.mean() - sy.mean()) / np.sqrt(p * np.mean((sx - mean) ** 2) + (1 - p) * np.mean((sy - mean) ** 2))
    assert 1.6 < population < 1.75
    hits = sum(
        (lambda r: r.ci_low <= population <= r.ci_high)(
            ieat_ci(*_heavy_tailed(np.random.default_rng(5000 + i), sizes), replicates=600, seed=i)
        )
        for i in range(250)
    )
    assert hits / 250 >= 0.93


def test_bca_ends_past_the_pole_go_to_the_extreme_replicates():
    """When the expanded level rounds to 1, or 1 - a z is <= 0, the interval's ends become the extreme
    replicates instead of an error."""
    from biastransfer.stats.bootstrap import bias_corrected_interval, expanded_level

    reps = np.random.default_rng(3).normal(size=500)
    assert bias_corrected_interval(reps, 0.0, expanded_level(0.95, 2), 0.2) == (reps.min(), reps.max())
    assert bias_corrected_interval(reps, 0.0, 0.99, 0.9)[1] == reps.max()  # 1 - 0.9 * 2.58 < 0
    rng = np.random.default_rng(7)
    sets = [rng.standard_normal((n, 5)) for n in (5, 6, 5, 5)]
    r = ieat_ci(*sets, replicates=200)
    assert r.ci_low <= r.estimate <= r.ci_high
    # Below the resampling floor (5 images a set at 95%) the interval is not estimable, not a pole's guess.
    tiny = ieat_ci(*sets[:3], sets[3][:2], replicates=200)
    assert np.isnan(tiny.ci_low) and np.isnan(tiny.ci_high) and np.isfinite(tiny.estimate)
