"""Bias Transfer Score: the paper's Tables 3-4, key alignment, permutation p-values, bad input."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from biastransfer.stats.bts import BTSResult, bias_transfer_score
from biastransfer.stats.similarity import intra_class_similarity

# (model, rho, p) as printed in the paper; p = None stands for the printed "10^-4".
# n is the number of items that reproduces every row of a column (found by enumerating n = 4..29):
# Table 3 intra n = 7 (the COCO `indiv` list), Table 3 inter n = 9, Table 4 intra n = 8,
# Table 4 inter n = 12. The COCO `object` list (n = 13) reproduces none of Table 3's inter rows.
PAPER = {
    ("Table 3", "intra", 7): [
        ("ResNet18", "0.714", "0.071"),
        ("ResNet50", "0.857", "0.014"),
        ("BiT-M-R50x1", "0.893", "0.007"),
        ("CLIP-ViT-B/32", "0.929", "0.003"),
        ("SimCLR ResNet50", "0.893", "0.007"),
        ("MoCo ResNet50", "0.714", "0.071"),
    ],
    ("Table 3", "inter", 9): [
        ("ResNet18", "0.067", "0.865"),
        ("ResNet50", "0.867", "0.002"),
        ("BiT-M-R50x1", "0.8", "0.01"),
        ("CLIP-ViT-B/32", "0.867", "0.002"),
        ("SimCLR ResNet50", "0.817", "0.007"),
        ("MoCo ResNet50", "0.367", "0.332"),
    ],
    ("Table 4", "intra", 8): [
        ("ResNet18", "0.81", "0.015"),
        ("ResNet50", "0.667", "0.071"),
        ("BiT-M-R50x1", "0.952", None),
        ("CLIP-ViT-B/32", "0.429", "0.289"),
        ("SimCLR ResNet50", "0.714", "0.047"),
        ("MoCo ResNet50", "0.667", "0.071"),
    ],
    ("Table 4", "inter", 12): [
        ("ResNet18", "0.343", "0.276"),
        ("ResNet50", "0.545", "0.067"),
        ("BiT-M-R50x1", "0.748", "0.005"),
        ("CLIP-ViT-B/32", "0.65", "0.022"),
        ("SimCLR ResNet50", "0.671", "0.017"),
        ("MoCo ResNet50", "0.266", "0.404"),
    ],
}


def _decimals(text):
    return len(text.split(".")[1])


def _ordering_with_squared_rank_gap(n, target, rng):
    """A permutation `perm` of range(n) with sum_i (i - perm[i])**2 == target (seeded random search)."""
    perm = list(range(n))
    gap = 0
    for _ in range(100_000):
        if gap == target:
            return np.array(perm)
        i, j = (int(v) for v in rng.integers(0, n, size=2))
        change = 2 * (i - j) * (perm[i] - perm[j])  # how swapping perm[i], perm[j] changes the gap
        if i != j and (abs(gap + change - target) <= abs(gap - target) or rng.random() < 0.2):
            perm[i], perm[j] = perm[j], perm[i]
            gap += change
    raise AssertionError(f"no ordering of {n} items with squared rank gap {target}")


def _tables_with(n, rho_text, rng):
    """before/after similarity tables over n classes whose Spearman rho rounds to rho_text, one per rho."""
    denominator = n * (n * n - 1)
    for gap in range(0, denominator // 3 + 1, 2):
        if round(1 - 6 * gap / denominator, _decimals(rho_text)) == float(rho_text):
            perm = _ordering_with_squared_rank_gap(n, gap, rng)
            before_values = np.sort(rng.uniform(0.1, 0.9, n))
            after_values = np.sort(rng.uniform(0.1, 0.9, n))
            keys = [f"class{i}" for i in range(n)]
            yield (dict(zip(keys, before_values)), dict(zip(keys, after_values[perm])))


def _reproduces(result, rho_text, p_text):
    if round(result.statistic, _decimals(rho_text)) != float(rho_text):
        return False
    if p_text is None:  # printed as "10^-4": same order of magnitude
        return math.floor(math.log10(result.pvalue)) == -4
    return round(result.pvalue, _decimals(p_text)) == float(p_text)


@pytest.mark.parametrize("table, kind, n", list(PAPER))
def test_default_pvalue_reproduces_the_paper(table, kind, n):
    rng = np.random.default_rng(0)
    for model, rho_text, p_text in PAPER[(table, kind, n)]:
        results = [bias_transfer_score(b, a) for b, a in _tables_with(n, rho_text, rng)]
        assert results, (table, kind, model)
        assert all(r.n == n and r.pvalue_method == "asymptotic" for r in results)
        assert any(_reproduces(r, rho_text, p_text) for r in results), (table, kind, model)


@pytest.mark.parametrize("table, kind, n", list(PAPER))
def test_other_list_lengths_do_not_reproduce_the_paper(table, kind, n):
    rng = np.random.default_rng(1)
    for other in (n - 1, n + 1, 13):
        if other == n:
            continue
        rows_ok = [
            any(_reproduces(bias_transfer_score(b, a), rho, p) for b, a in _tables_with(other, rho, rng))
            for _, rho, p in PAPER[(table, kind, n)]
        ]
        assert not all(rows_ok), (table, kind, other)


def test_keys_are_aligned_and_pairs_allowed():
    before = {("car", "man"): 0.3, ("car", "woman"): 0.1, ("surfboard", "man"): 0.5, ("surfboard", "woman"): 0.2}
    after = {("surfboard", "woman"): 0.25, ("car", "man"): 0.2, ("surfboard", "man"): 0.6, ("car", "woman"): 0.15}
    res = bias_transfer_score(before, after)
    expected = stats.spearmanr([0.3, 0.1, 0.5, 0.2], [0.2, 0.15, 0.6, 0.25])
    assert res.statistic == pytest.approx(expected.statistic)
    assert res.pvalue == pytest.approx(expected.pvalue)
    assert res.keys == tuple(before) and res.n == 4


def test_accepts_similarity_results():
    rng = np.random.default_rng(3)
    classes = {c: rng.standard_normal((6, 4)) + i * 0.2 for i, c in enumerate("abcde")}
    before = {c: intra_class_similarity(Z) for c, Z in classes.items()}
    after = {c: intra_class_similarity(Z + 0.1) for c, Z in classes.items()}
    res = bias_transfer_score(before, after)
    assert res.statistic == pytest.approx(
        stats.spearmanr([before[c].value for c in "abcde"], [after[c].value for c in "abcde"]).statistic
    )


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_exact_permutation_pvalue_equals_enumeration(alternative):
    x = np.array([0.3, 0.1, 0.5, 0.2, 0.9, 0.4])
    y = np.array([0.2, 0.3, 0.6, 0.1, 0.7, 0.5])
    keys = list("abcdef")
    res = bias_transfer_score(dict(zip(keys, x)), dict(zip(keys, y)), pvalue="permutation", alternative=alternative)
    observed = stats.spearmanr(x, y).statistic
    null = np.array([stats.spearmanr(x, y[list(p)]).statistic for p in itertools.permutations(range(6))])
    tol = 1e-12
    count = {
        "greater": np.sum(null >= observed - tol),
        "less": np.sum(null <= observed + tol),
        "two-sided": 2 * min(np.sum(null >= observed - tol), np.sum(null <= observed + tol)),
    }[alternative]
    assert res.pvalue == pytest.approx(min(1.0, count / 720))
    assert (res.permutations, res.seed, res.pvalue_method) == (720, None, "permutation")


def test_monte_carlo_permutation_pvalue_is_seeded_and_close():
    rng = np.random.default_rng(4)
    keys = [f"k{i}" for i in range(9)]
    x = rng.random(9)
    y = x + rng.normal(0, 0.3, 9)
    before, after = dict(zip(keys, x)), dict(zip(keys, y))
    exact = bias_transfer_score(before, after, pvalue="permutation", permutations=math.factorial(9))
    mc = bias_transfer_score(before, after, pvalue="permutation", permutations=20_000, seed=5)
    assert exact.permutations == math.factorial(9) and mc.permutations == 20_000 and mc.seed == 5
    one_sided = exact.pvalue / 2  # the null of rho is symmetric; two-sided p doubles one tail
    se = 2 * math.sqrt(one_sided * (1 - one_sided) / 20_000)
    assert abs(mc.pvalue - exact.pvalue) < 4 * se
    assert mc == bias_transfer_score(before, after, pvalue="permutation", permutations=20_000, seed=5)


def test_as_dict():
    res = bias_transfer_score({"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 3, "c": 2})
    assert set(res.as_dict()) == set(BTSResult.__dataclass_fields__)


@pytest.mark.parametrize(
    "before, after, kwargs, message",
    [
        ({"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 2, "d": 3}, {}, r"only in before: \['c'\]; only in after: \['d'\]"),
        ({"a": 1, "b": 2}, {"a": 1, "b": 2}, {}, "at least 3 keys, got 2"),
        ({"a": 1, "b": np.nan, "c": 3}, {"a": 1, "b": 2, "c": 3}, {}, r"before\['b'\] is not finite"),
        ({"a": 1, "b": 2, "c": 3}, {"a": 1, "b": "x", "c": 3}, {}, r"after\['b'\] is not a number"),
        ({"a": 1, "b": 2, "c": 3}, {"a": 5, "b": 5, "c": 5}, {}, "all values in after are tied"),
        ({"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 3, "c": 2}, {"pvalue": "exact"}, "pvalue must be one of"),
        ({"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 3, "c": 2}, {"alternative": "up"}, "alternative must be one of"),
    ],
)
def test_bad_input_is_named(before, after, kwargs, message):
    with pytest.raises(ValueError, match=message):
        bias_transfer_score(before, after, **kwargs)
