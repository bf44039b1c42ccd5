"""Prediction-level bias: directional bias amplification, Zhao et al.'s measure, leakage, and their intervals."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from biastransfer.stats import bias_amplification, bias_amplifications, predict_at_base_rate, predict_at_threshold
from biastransfer.stats.amplification import ABSENT, attribute_shift, design, resample_indices
from biastransfer.stats.leakage import crossfit_predictions, leakage, leakage_amplification, matched_labels, mean_f1

# Six images: 0-2 are men (attribute 0), 3-5 women (attribute 1); three tasks.
A6 = np.array([[1, 0]] * 3 + [[0, 1]] * 3)
T6 = np.array([[1, 0, 1], [1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 1, 0], [0, 0, 0]])
P6 = np.array([[1, 0, 0], [1, 0, 0], [1, 0, 0], [0, 1, 0], [0, 1, 0], [0, 0, 0]])
# By hand. P(man) = P(woman) = 1/2; P(T0) = 3/6, P(T1) = 3/6, P(T2) = 1/6.
# y: man-T0: 2/6 > 1/4 -> 1; woman-T0: 1/6 > 1/4 -> 0; man-T1: 1/6 -> 0; woman-T1: 2/6 -> 1;
#    man-T2: 1/6 > 1/12 -> 1; woman-T2: 0 > 1/12 -> 0.
# delta = P(That | a) - P(T | a): man-T0 3/3 - 2/3 = 1/3; woman-T0 0 - 1/3 = -1/3; man-T1 0 - 1/3 = -1/3;
#    woman-T1 2/3 - 2/3 = 0; man-T2 0 - 1/3 = -1/3; woman-T2 0 - 0 = 0.
# term = delta if y else -delta: man [1/3, 1/3, -1/3], woman [1/3, 0, 0]; BiasAmp = (2/3) / 6 = 1/9.
# Zhao: b_train T0 = (2/3, 1/3), T1 = (1/3, 2/3), T2 = (1, 0); b_pred T0 = (1, 0), T1 = (0, 1), T2 = 0/0.
# T2 has no predicted positive: dropped (1). Selected: man-T0 (1 - 2/3 = 1/3), woman-T1 (1 - 2/3 = 1/3);
# amplification = (1/3 + 1/3) / 2 objects = 1/3. Terms b_pred - b_train: man [1/3, -1/3, nan], woman [-1/3, 1/3, nan].
DIRECTIONAL_TERMS = np.array([[1, 1, -1], [1, 0, 0]]) / 3
ZHAO_TERMS = np.array([[1, -1, np.nan], [-1, 1, np.nan]]) / 3


def test_the_six_image_example_by_hand():
    r = bias_amplifications(A6, T6, P6, attribute_names=["man", "woman"], replicates=40)
    d, z = r["directional"], r["zhao"]
    assert d.estimate == pytest.approx(1 / 9, abs=1e-15)
    np.testing.assert_allclose(d.terms, DIRECTIONAL_TERMS, atol=1e-15)
    np.testing.assert_array_equal(d.selected, [[1, 0, 1], [0, 1, 0]])
    assert z.estimate == pytest.approx(1 / 3, abs=1e-15) and z.dropped == 1
    np.testing.assert_allclose(z.terms, ZHAO_TERMS, atol=1e-15)
    np.testing.assert_array_equal(z.selected, [[1, 0, 1], [0, 1, 0]])
    # 3 images per attribute is below the resampling floor (5 at 95%): no interval
    assert np.isnan([d.ci_low, d.ci_high, z.ci_low, z.ci_high]).all() and np.isnan(d.terms_low).all()
    table = d.table()
    assert list(table.columns) == [
        "measure",
        "attribute",
        "task",
        "y_at",
        "term",
        "ci_low",
        "ci_high",
        "level",
        "excluded",
    ]
    assert table["attribute"].tolist() == ["man"] * 3 + ["woman"] * 3 and table["task"].tolist() == ["0", "1", "2"] * 2
    assert "selected" in z.table().columns and (table["excluded"] == "").all() and d.excluded == ()


@pytest.mark.parametrize("predicted", [0, 1])
def test_a_class_with_no_image_is_left_out_of_the_mean_with_its_reason(predicted):
    """The six images with a fourth task that no image has (predicted for no image, or for images 0 and 3):
    its terms have no direction, so they are NaN and the mean is over the other three tasks, 1/9 as by hand
    (with the absent task's 0 or -1/3 terms in the mean it would be 1/12 or 1/36); the table names why."""
    T = np.hstack([T6, np.zeros((6, 1), dtype=int)])
    P = np.hstack([P6, np.array([[predicted, 0, 0, predicted, 0, 0]]).T])
    r = bias_amplifications(
        A6, T, P, attribute_names=["man", "woman"], task_names=["a", "b", "c", "absent"], replicates=40
    )
    d, z = r["directional"], r["zhao"]
    assert d.estimate == pytest.approx(1 / 9, abs=1e-15) and d.excluded == z.excluded == ("absent",)
    np.testing.assert_allclose(d.terms, np.hstack([DIRECTIONAL_TERMS, [[np.nan], [np.nan]]]), atol=1e-15)
    table = d.table()
    assert table.loc[table["task"] == "absent", "excluded"].tolist() == [ABSENT] * 2
    assert (table.loc[table["task"] != "absent", "excluded"] == "").all()
    assert z.estimate == pytest.approx(1 / 3, abs=1e-15) and z.dropped == 2
    # twelve images (six per attribute) resample: the absent class has no interval, the others keep theirs
    both = bias_amplifications(np.vstack([A6, A6]), np.vstack([T, T]), np.vstack([P, P]), replicates=400, seed=1)
    d = both["directional"]
    assert d.estimate == pytest.approx(1 / 9, abs=1e-15) and np.isfinite([d.ci_low, d.ci_high]).all()
    assert np.isnan(d.terms_low[:, 3]).all() and np.isfinite(d.terms_low[:, :3]).all()
    shift, low, high = attribute_shift(d)
    assert np.isnan(shift[:, 3]).all() and np.isfinite(low[:, :3]).all() and np.isfinite(high[:, :3]).all()


def brute_force(A, T, seeds, indices):
    """Both measures for the observed images and each row of ``indices``, in plain Python loops."""
    n, G, K = len(A), len(A[0]), len(T[0])

    def counts(rows, P):
        nA = [sum(A[i][a] for i in rows) for a in range(G)]
        nT = [sum(T[i][t] for i in rows) for t in range(K)]
        nAT = [[sum(A[i][a] * T[i][t] for i in rows) for t in range(K)] for a in range(G)]
        nAP = [[sum(A[i][a] * P[i][t] for i in rows) for t in range(K)] for a in range(G)]
        return len(rows), nA, nT, nAT, nAP

    N, nA, nT, nAT, _ = counts(range(n), seeds[0])
    y = [[nAT[a][t] / N > (nA[a] / N) * (nT[t] / N) for t in range(K)] for a in range(G)]
    chosen = [
        [nAT[a][t] / sum(nAT[g][t] for g in range(G)) > 1 / G if nT[t] else False for t in range(K)] for a in range(G)
    ]

    def measures(rows):
        directional, zhao, d_terms, z_terms = [], [], np.zeros((G, K)), np.zeros((G, K))
        for P in seeds:
            N, nA, nT, nAT, nAP = counts(rows, P)
            terms = []
            for a in range(G):
                for t in range(K):
                    delta = (nAP[a][t] - nAT[a][t]) / nA[a] if nA[a] else np.nan
                    terms.append(delta if y[a][t] else -delta)
                    d_terms[a, t] += terms[-1] / len(seeds)
            directional.append(sum(terms) / len(terms))
            total, objects = 0.0, 0
            for t in range(K):
                true, pred = sum(nAT[g][t] for g in range(G)), sum(nAP[g][t] for g in range(G))
                for a in range(G):
                    term = nAP[a][t] / pred - nAT[a][t] / true if true and pred else np.nan
                    z_terms[a, t] += term / len(seeds)
                    if true and pred and chosen[a][t]:
                        total += term
                objects += bool(true and pred)
            zhao.append(total / objects if objects else np.nan)
        return np.mean(directional), np.mean(zhao), d_terms, z_terms

    return measures(range(n)), [measures(list(row)) for row in indices]


@pytest.mark.parametrize("n_seeds", [1, 2])
def test_the_fast_path_matches_plain_loops_over_images_and_replicates(n_seeds):
    rng = np.random.default_rng(n_seeds)
    n, K, R = 24, 3, 41
    A = np.eye(2)[np.r_[0, 1, rng.integers(0, 2, n - 2)]]
    T = (rng.random((n, K)) < np.where(A[:, :1] == 1, 0.6, 0.3)).astype(int)
    seeds = [(rng.random((n, K)) < 0.4).astype(int) for _ in range(n_seeds)]
    seeds[0][:, 2] = 0  # a task no image is predicted for: Zhao drops it
    r = bias_amplifications(A, T, seeds if n_seeds > 1 else seeds[0], replicates=R, seed=7)
    observed, replicated = brute_force(
        A.astype(int).tolist(), T.tolist(), [s.tolist() for s in seeds], resample_indices(n, R, 7)
    )
    d, z = r["directional"], r["zhao"]
    assert d.estimate == pytest.approx(observed[0], abs=1e-12) and z.estimate == pytest.approx(observed[1], abs=1e-12)
    np.testing.assert_allclose(d.terms, observed[2], atol=1e-12)
    np.testing.assert_allclose(z.terms, observed[3], atol=1e-12)
    np.testing.assert_allclose(d.replicate_estimates, [m[0] for m in replicated], atol=1e-12)
    np.testing.assert_allclose(z.replicate_estimates, [m[1] for m in replicated], atol=1e-12)
    np.testing.assert_allclose(d.replicate_terms, [m[2] for m in replicated], atol=1e-12)
    np.testing.assert_allclose(z.replicate_terms, [m[3] for m in replicated], atol=1e-12)
    assert z.dropped == 1 and d.n_seeds == z.n_seeds == n_seeds
    low, high = np.quantile(d.replicate_estimates[np.isfinite(d.replicate_estimates)], [0.025, 0.975])
    assert (d.ci_low, d.ci_high) == pytest.approx((low, high))


def test_the_design_holds_each_count_column_in_float32():
    """A, T, A*T by attribute then task, A*That by seed, attribute and task: 0/1 in float32, so that the
    resampled counts (integers below 2^24) are exact in half the memory of float64."""
    rng = np.random.default_rng(0)
    n, G, K, S = 50, 2, 3, 2
    A = np.eye(G)[rng.integers(0, G, n)]
    T = (rng.random((n, K)) < 0.5).astype(float)
    P = (rng.random((S, n, K)) < 0.5).astype(float)
    X = design(A, T, P)
    assert X.dtype == np.float32 and X.shape == (n, G + K + G * K + S * G * K)
    assert np.array_equal(X[:, :G], A) and np.array_equal(X[:, G : G + K], T)
    for g in range(G):
        for k in range(K):
            assert np.array_equal(X[:, G + K + g * K + k], A[:, g] * T[:, k])
            for s in range(S):
                assert np.array_equal(X[:, G + K + G * K + (s * G + g) * K + k], A[:, g] * P[s][:, k])


def test_one_measure_alone_and_pooled_seeds_agree_with_the_joint_call():
    rng = np.random.default_rng(0)
    A = np.eye(2)[rng.integers(0, 2, 60)]
    T = (rng.random((60, 4)) < 0.3).astype(int)
    P = (rng.random((60, 4)) < 0.3).astype(int)
    both = bias_amplifications(A, T, [P, P], replicates=100, seed=1)
    alone = bias_amplification(A, T, P, measure="zhao", replicates=100, seed=1)
    assert alone.estimate == both["zhao"].estimate and (alone.ci_low, alone.ci_high) == (
        both["zhao"].ci_low,
        both["zhao"].ci_high,
    )
    single = bias_amplifications(A, T, P, replicates=100, seed=1)  # two identical seeds pool to one
    assert all(single[m].estimate == pytest.approx(both[m].estimate, abs=1e-15) for m in single)
    np.testing.assert_allclose(single["zhao"].replicate_estimates, both["zhao"].replicate_estimates, atol=1e-15)
    assert bias_amplification(A, T, np.stack([P, P]), replicates=100, seed=1).ci_low == both["directional"].ci_low


def planted(rng, n=600, K=3, amplify=0.3):
    """Task 0 more common for attribute 0 (0.6 vs 0.2); predictions add false positives to attribute 0's images."""
    A = np.eye(2)[rng.integers(0, 2, n)]
    T = (rng.random((n, K)) < np.where(A[:, :1] == 1, [0.6, 0.3, 0.4], [0.2, 0.3, 0.4])).astype(int)
    P = T.copy()
    P[:, 0] |= (A[:, 0] == 1) & (rng.random(n) < amplify)
    return A, T, P


def test_a_planted_link_gives_a_positive_term_whose_interval_excludes_zero():
    A, T, P = planted(np.random.default_rng(5))
    r = bias_amplifications(A, T, P, replicates=400, seed=0)
    d, z = r["directional"], r["zhao"]
    assert d.selected[0, 0] and d.terms[0, 0] > 0 and d.terms_low[0, 0] > 0
    assert d.terms[1, 0] == 0 and not d.selected[1, 0]  # the other attribute's rate did not move
    assert d.ci_low > 0 and z.selected[0, 0] and z.terms_low[0, 0] > 0 and z.ci_low > 0


def test_predictions_equal_to_the_ground_truth_give_zero_terms():
    A, T, _ = planted(np.random.default_rng(6))
    for r in bias_amplifications(A, T, T, replicates=100).values():
        assert r.estimate == 0 and np.all(r.terms == 0) and r.ci_low == r.ci_high == 0


def test_the_interval_of_the_mean_covers_the_true_value_on_null_data():
    """That = T with symmetric flips (rate p) independent of the attribute: delta_at = p (1 - 2 q_at) with
    q_at = P(T=t | A=a), and y_at = 1[q_at > P(T=t)], so the population BiasAmp is known. (Checked over 300
    such datasets when written: coverage 0.95; the 20 from seeds 100-119 cover 17 times, a 7.5% event at 95%.)"""
    q = np.array([[0.3, 0.6, 0.15, 0.5, 0.1], [0.1, 0.35, 0.4, 0.25, 0.35]])
    p, n = 0.1, 1000
    truth_value = np.mean(np.where(q > q.mean(axis=0), 1, -1) * p * (1 - 2 * q))
    covered = 0
    for k in range(20):
        rng = np.random.default_rng(k)
        A = np.eye(2)[rng.integers(0, 2, n)]
        T = (rng.random((n, 5)) < A @ q).astype(int)
        P = T ^ (rng.random((n, 5)) < p)
        r = bias_amplification(A, T, P, replicates=400, seed=k)
        covered += r.ci_low <= truth_value <= r.ci_high
    assert covered >= 18


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31), st.integers(2, 30), st.integers(1, 4))
def test_base_rate_thresholds_predict_as_many_positives_as_the_truth_has(seed, n, K):
    rng = np.random.default_rng(seed)
    T = (rng.random((n, K)) < 0.4).astype(int)
    scores = rng.integers(0, 3, (n, K)) / 2  # many ties
    P = predict_at_base_rate(scores, T)
    np.testing.assert_array_equal(P.sum(axis=0), T.sum(axis=0))
    for t in range(K):  # every predicted positive scores at least every predicted negative
        if 0 < P[:, t].sum() < n:
            assert scores[P[:, t] == 1, t].min() >= scores[P[:, t] == 0, t].max()


def test_fixed_threshold_predictions():
    np.testing.assert_array_equal(predict_at_threshold([[0.2, 0.5], [0.7, 0.4]]), [[0, 1], [1, 0]])
    np.testing.assert_array_equal(predict_at_threshold([[0.2, 0.5], [0.7, 0.4]], [0.1, 0.9]), [[1, 0], [1, 0]])


@pytest.mark.parametrize(
    "attributes, truth, predictions, message",
    [
        (np.r_[A6[:5], [[0, 0]]], T6, P6, "attributes row 5 has no attribute"),
        (np.r_[A6[:5], [[1, 1]]], T6, P6, "attributes row 5 has 2 attributes"),
        (A6, T6[:5], P6[:5], "truth has 5 images but attributes has 6"),
        (A6, T6, P6[:, :2], r"predictions has shape \(6, 2\) but truth has \(6, 3\)"),
        (A6, T6, [P6, P6[:, :2]], r"predictions\[1\] has shape"),
        (A6, T6 * 2, P6, "truth must be binary .* row 0, column 0 is 2"),
        (A6, T6, P6 - 0.5, "predictions must be binary"),
        (A6, T6[:, 0], P6, "truth must be 2-D"),
        (A6[:, :1], T6, P6, "at least 2 attribute columns"),
        (np.c_[A6, np.zeros(6)], T6, P6, "attributes column 2 has no image"),
    ],
)
def test_bad_inputs_are_named(attributes, truth, predictions, message):
    with pytest.raises(ValueError, match=message):
        bias_amplifications(attributes, truth, predictions, replicates=40)


def test_too_few_replicates_for_the_level_are_refused():
    with pytest.raises(ValueError, match="at least 40"):
        bias_amplification(A6, T6, P6, replicates=39)
    with pytest.raises(ValueError, match="measure must be one of"):
        bias_amplification(A6, T6, P6, measure="kl")


def test_leakage_of_labels_without_attribute_information_is_at_chance():
    rng = np.random.default_rng(11)
    A = np.eye(2)[rng.integers(0, 2, 800)]
    T = (rng.random((800, 10)) < 0.3).astype(int)
    r = leakage(T, A, replicates=400, seed=2)
    assert r.ci_low <= 0.5 <= r.ci_high and r.chance == 0.5 and r.folds == 5 and r.correct.shape == (800,)


def test_leakage_interval_is_the_bootstrap_of_the_held_out_correctness():
    rng = np.random.default_rng(12)
    labels = np.r_[np.zeros(30, int), np.ones(50, int)]
    X = labels[:, None] + rng.normal(0, 1.0, (80, 2))
    r = leakage(X, labels, replicates=60, seed=4)
    held_out = crossfit_predictions(X, labels, folds=5, seed=4)
    correct = held_out == labels
    assert r.accuracy == correct.mean() and r.estimate == pytest.approx((correct[:30].mean() + correct[30:].mean()) / 2)
    loops = [
        np.mean([np.mean([correct[i] for i in row if labels[i] == g]) for g in (0, 1)])
        for row in resample_indices(80, 60, 4)
    ]
    np.testing.assert_allclose(r.replicate_estimates, loops, atol=1e-12)
    assert 0.5 < r.ci_low < r.estimate < r.ci_high


def test_matched_labels_have_the_models_per_class_f1():
    rng = np.random.default_rng(13)
    T = (rng.random((200, 6)) < 0.3).astype(int)
    P = T ^ (rng.random((200, 6)) < 0.2)
    perturbed = matched_labels(T, P, seed=1)
    for t in range(6):
        for a, b in ((1, 0), (0, 1)):  # false negatives, false positives
            assert np.sum((T[:, t] == a) & (perturbed[:, t] == b)) == np.sum((T[:, t] == a) & (P[:, t] == b))
    assert mean_f1(T, perturbed) == mean_f1(T, P)
    np.testing.assert_array_equal(matched_labels(T, P, seed=1), perturbed)


def test_a_model_that_encodes_the_attribute_amplifies_leakage():
    rng = np.random.default_rng(14)
    n = 600
    A = np.eye(2)[rng.integers(0, 2, n)]
    T = (rng.random((n, 4)) < 0.3).astype(int)
    P = T ^ (rng.random((n, 4)) < 0.1)
    P[:, 3] = np.where(rng.random(n) < 0.8, A[:, 0], P[:, 3])  # the model's class 3 tracks attribute 0
    r = leakage_amplification(A, T, P, replicates=400, seed=3)
    assert r.model_f1 == r.dataset_f1 and r.estimate > 0.2 and r.ci_low > 0
    assert r.dataset.ci_low <= 0.5 <= r.dataset.ci_high
    none = leakage_amplification(A, T, T, replicates=400, seed=3)  # a perfect model: its labels are the truth
    assert none.estimate == 0 and none.ci_low == none.ci_high == 0


def test_leakage_bad_inputs_are_named():
    labels = np.r_[np.zeros(3, int), np.ones(10, int)]
    with pytest.raises(ValueError, match="an attribute has 3 image"):
        leakage(np.zeros((13, 2)), labels)
    with pytest.raises(ValueError, match="features must be images x features with 13 images"):
        leakage(np.zeros((12, 2)), labels, folds=3)
    with pytest.raises(ValueError, match="attributes row 1 has no attribute"):
        leakage(np.zeros((2, 1)), [[1, 0], [0, 0]])


def _embedding(rng, n, d, signal):
    """n x d post-ReLU-like features of a few latent factors, the first shifted by ``signal`` for attribute 1."""
    a = rng.integers(0, 2, n)
    Z = rng.normal(size=(n, 8))
    Z[:, 0] += signal * a
    return np.maximum(Z @ rng.normal(size=(8, d)) + rng.normal(0, 0.5, (n, d)), 0), a


@pytest.mark.parametrize("components", [None, 16])
def test_an_embedding_that_carries_the_attribute_leaks_it_and_one_that_does_not_is_at_chance(components):
    rng = np.random.default_rng(15)
    carries, a = _embedding(rng, 400, 64, 1.5)
    r = leakage(carries, a, replicates=200, seed=1, components=components)
    assert r.estimate > 0.7 and r.ci_low > 0.5 and r.chance == 0.5
    blind, a = _embedding(rng, 400, 64, 0.0)
    r = leakage(blind, a, replicates=200, seed=1, components=components)
    assert r.ci_low <= 0.5 <= r.ci_high


@settings(max_examples=8, deadline=None)
@given(st.integers(2, 12), st.integers(0, 4), st.integers(0, 2**16))
def test_as_many_components_as_features_or_more_leave_the_attacker_as_it_is(d, extra, seed):
    rng = np.random.default_rng(seed)
    labels = np.r_[np.zeros(20, int), np.ones(20, int)]
    X = labels[:, None] * rng.normal(0, 1, d) + rng.normal(0, 1, (40, d))
    plain = crossfit_predictions(X, labels, folds=3, seed=seed % 7)
    np.testing.assert_array_equal(crossfit_predictions(X, labels, folds=3, seed=seed % 7, components=d + extra), plain)


def test_a_projection_on_no_component_is_refused():
    with pytest.raises(ValueError, match="components must be a positive int, got 0"):
        leakage(np.zeros((20, 3)), np.tile([0, 1], 10), components=0)
