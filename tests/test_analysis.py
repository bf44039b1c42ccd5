"""Result tables from embeddings: similarity, BTS (per seed and pooled), iEAT, adjusted p-values, findings."""

import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from biastransfer.embeddings import EmbeddingTable
from biastransfer.report.findings import describe_findings
from biastransfer.report.html import rst_to_html
from biastransfer.stats.results import (
    add_adjusted_pvalues,
    bts_table,
    ieat_table,
    pair_key,
    similarity_table,
    with_provenance,
)


def table(seed=0, shift=0.0):
    rng = np.random.default_rng(seed)
    names = ["a", "b", "c", "d"]
    centres = {n: rng.standard_normal(16) * (i + 1) for i, n in enumerate(names)}
    rows = [
        (f"{n}{i}", n, centres[n] + shift * rng.standard_normal(16) + rng.standard_normal(16))
        for n in names
        for i in range(6)
    ]
    ids, classes, emb = zip(*rows)
    return EmbeddingTable(np.array(ids), np.array(classes), np.array(emb, dtype=np.float32))


def test_similarity_table_has_every_class_and_pair_and_matches_brute_force():
    t = table()
    sims = similarity_table(t)
    assert (sims["kind"] == "intra").sum() == 4 and (sims["kind"] == "inter").sum() == 6
    U = t.embeddings / np.linalg.norm(t.embeddings, axis=1, keepdims=True)
    a, b = U[t.classes == "a"], U[t.classes == "b"]
    inter = sims.set_index("key").loc[pair_key("a", "b"), "value"]
    assert inter == pytest.approx((a @ b.T).mean(), abs=1e-6)
    intra = sims.set_index("key").loc["a", "value"]
    G = a @ a.T
    assert intra == pytest.approx((G.sum() - np.trace(G)) / (6 * 5), abs=1e-6)


def test_bts_pooled_is_spearman_of_the_seed_mean_and_pairs_match_either_way():
    pre = similarity_table(table(0))
    fts = {s: similarity_table(table(0, shift=0.5 + s)) for s in (0, 1)}
    lists = {"intra": ["a", "b", "c", "d"], "inter": [["b", "a"], ["c", "a"], ["d", "c"], ["d", "b"]]}
    out = bts_table(pre, fts, lists).set_index(["kind", "seed"])
    before = pre.set_index("key")["value"]
    mean_after = (fts[0].set_index("key")["value"] + fts[1].set_index("key")["value"]) / 2
    keys = ["a|b", "a|c", "c|d", "b|d"]
    expected = stats.spearmanr(before[keys], mean_after[keys])
    assert out.loc[("inter", "pooled"), "statistic"] == pytest.approx(expected.statistic)
    assert out.loc[("inter", "pooled"), "pvalue_t"] == pytest.approx(expected.pvalue)
    # the verdict's p is the exact permutation p: rho = 1 over 4 keys is 2 orderings of 24, not t's p = 0
    assert expected.statistic == pytest.approx(1.0) and expected.pvalue < 1e-6
    assert out.loc[("inter", "pooled"), "pvalue"] == pytest.approx(2 / 24)
    assert out.loc[("inter", "pooled"), "pvalue_floor"] == pytest.approx(2 / 24)
    assert out.loc[("intra", 1), "n"] == 4
    with pytest.raises(KeyError, match="'z'"):
        bts_table(pre, fts, {"intra": ["a", "b", "z"]})


def test_ieat_table_and_provenance_columns():
    t = table()
    res = ieat_table(t, [{"name": "t1", "X": "a", "Y": "b", "A": "c", "B": "d"}], permutations=1000, seed=1)
    assert res.loc[0, "test"] == "t1" and res.loc[0, "method"] == "exact" and res.loc[0, "n_x"] == 6
    tagged = with_provenance(res, analysis_set="s", model="m", stage="ft-ds-seed3")
    assert list(tagged.columns[:5]) == ["analysis_set", "model", "stage", "finetune_dataset", "seed"]
    assert (tagged.loc[0, "finetune_dataset"], tagged.loc[0, "seed"]) == ("ds", 3)
    with pytest.raises(KeyError, match="'nobody'"):
        ieat_table(t, [{"name": "t", "X": "nobody", "Y": "b", "A": "c", "B": "d"}])


def test_adjusted_pvalues_are_computed_within_groups():
    df = pd.DataFrame({"g": ["x", "x", "y", "y"], "pvalue": [0.01, 0.04, 0.01, np.nan]})
    out = add_adjusted_pvalues(df, by=["g"])
    assert out["pvalue_holm"].tolist()[:2] == pytest.approx([0.02, 0.04])
    assert out.loc[2, "pvalue_holm"] == pytest.approx(0.01) and np.isnan(out.loc[3, "pvalue_holm"])


def test_findings_state_the_verdicts_in_words():
    ieat = pd.DataFrame({
        "analysis_set": "s", "test": "planted", "model": ["m", "m", "m"], "alternative": "greater",
        "stage": ["pretrained", "ft-d-seed0", "ft-d-seed1"], "finetune_dataset": ["", "d", "d"], "seed": ["", "0", "1"],
        "effect_size": [1.2, 0.3, -0.77], "pvalue": [1e-5, 0.2, 1.0], "pvalue_holm": [3e-5, 0.4, 1.0],
        "pvalue_two_sided": [2e-5, 0.4, 1e-5], "pvalue_floor": 1e-5, "ci_low": [0.8, -0.1, -1.1], "ci_high": [1.6, 0.7, -0.4],
        "ci_level": 0.95,
    })  # fmt: skip
    bts = pd.DataFrame({"analysis_set": "s", "model": "m", "finetune_dataset": "d", "seed": ["0", "pooled"],
                        "kind": "intra", "statistic": [0.5, 1.0], "pvalue": [0.2, 2 / 5040], "pvalue_floor": 2 / 5040,
                        "pvalue_holm": [0.2, 0.003], "n": 7, "ci_low": 0.6, "ci_high": 1.0, "ci_level": 0.95})  # fmt: skip
    tests = {"s": [{"name": "planted", "X": "x", "Y": "y", "A": "a", "B": "b", "role": "planted"}]}
    text = describe_findings(ieat, bts, tests, alpha=0.01)
    # a p at the Monte Carlo floor is a bound; the verdict reads the adjusted p, as the tables' stars do
    assert "**m** pretrained: significant (d = 1.20, 95% CI [0.80, 1.60], p <= 1e-05, adjusted p <= 3e-05)" in text
    # seed 1's effect against the tested direction is said in words, with its two-sided p
    assert "seed 1: not significant (d = -0.77" in text
    assert "**Opposite direction:** d = -0.77" in text and "x closer to b, relative to a, than y is" in text
    assert "two-sided p <= 1e-05" in text and text.count("Opposite direction") == 1
    assert "intra rho = 1.00, 95% CI [0.60, 1.00] (p <= 0.0004, adjusted p <= 0.003, significant, n = 7)" in text
    assert not re.search(r"p = 0(?![.\d])", text)  # never a p of zero
    assert "planted association" in rst_to_html(text, part="whole")
    with pytest.raises(ValueError, match="alpha"):
        describe_findings(ieat, bts, tests, alpha=1.5)
