"""Result tables from embeddings: similarity, BTS (per seed and pooled), iEAT, adjusted p-values, findings."""

import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from biastransfer.embeddings import EmbeddingTable
from biastransfer.report.findings import describe_findings
from biastransfer.report.findings.ieat import describe_ieat
from biastransfer.report.formatting import Significance
from biastransfer.report.html import rst_to_html
from biastransfer.report.records import ieat_records, table_records
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
    ieat = pd.DataFrame(
        {
            "analysis_set": "s",
            "test": "planted",
            "model": ["m", "m", "m"],
            **dict(X="x", Y="y", A="a", B="b"),
            "alternative": "greater",
            "stage": ["pretrained", "ft-d-seed0", "ft-d-seed1"],
            "finetune_dataset": ["", "d", "d"],
            "seed": ["", "0", "1"],
            "effect_size": [1.2, 0.3, -0.77],
            "pvalue": [1e-5, 0.2, 1.0],
            "pvalue_holm": [3e-5, 0.4, 1.0],
            "pvalue_two_sided": [2e-5, 0.4, 1e-5],
            "pvalue_floor": 1e-5,
            "ci_low": [0.8, -0.1, -1.1],
            "ci_high": [1.6, 0.7, -0.4],
            "ci_level": 0.95,
        }
    )
    bts = pd.DataFrame(
        {
            "analysis_set": "s",
            "model": "m",
            "finetune_dataset": "d",
            "seed": ["0", "pooled"],
            "kind": "intra",
            "statistic": [0.5, 1.0],
            "pvalue": [0.2, 2 / 5040],
            "pvalue_floor": 2 / 5040,
            "pvalue_holm": [0.2, 0.003],
            "n": 7,
            "ci_low": 0.6,
            "ci_high": 1.0,
            "ci_level": 0.95,
        }
    )
    tests = {"s": [{"name": "planted", "X": "x", "Y": "y", "A": "a", "B": "b", "role": "planted"}]}
    text = describe_findings(ieat, bts, tests, alpha=0.01)
    # a p at the Monte Carlo floor is a bound; the verdict reads the adjusted p, as the tables' stars do
    assert "**m** pretrained: significant (d = 1.20, 95% CI [0.80, 1.60], p < 0.001, adjusted p < 0.001)" in text
    # seed 1's effect against the tested direction is said in words, with its two-sided p
    assert "seed 1: not significant (d = -0.77" in text
    assert "**Opposite direction:** d = -0.77" in text and "x closer to b, relative to a, than y is" in text
    assert "two-sided p < 0.001" in text and text.count("Opposite direction") == 1
    assert "intra rho = 1.00, 95% CI [0.60, 1.00] (p < 0.001, adjusted p <= 0.003, significant, n = 7)" in text
    assert not re.search(r"p = 0(?![.\d])", text)  # never a p of zero
    assert "planted association" in rst_to_html(text, part="whole")
    with pytest.raises(ValueError, match="alpha"):
        describe_findings(ieat, bts, tests, alpha=1.5)


def findings_inputs():
    """One pretrained and one finetuned iEAT of a test that is not significant at alpha = 0.01, with d's
    numerator and SD, the detectable |d| at its set sizes, and a scratch reference row."""
    ieat = pd.DataFrame(
        {
            "analysis_set": "s",
            "test": "t",
            "model": "m",
            **dict(X="x", Y="y", A="a", B="b"),
            "alternative": "greater",
            "stage": ["pretrained", "ft-d-seed0"],
            "finetune_dataset": ["", "d"],
            "seed": ["", "0"],
            "effect_size": [0.5, 1.0],
            "mean_difference": 0.02,
            "pooled_sd": [0.04, 0.02],
            "pvalue": [0.03, 0.004],
            "pvalue_holm": [0.03, 0.008],
            "pvalue_two_sided": 0.06,
            "pvalue_floor": 1e-4,
            "ci_low": [-0.2, 0.3],
            "ci_high": [1.2, 1.7],
            "ci_level": 0.95,
            "n_x": 6,
            "n_y": 6,
            "detectable_d": 1.45,
            "detectable_power": 0.8,
        }
    )
    # the numerator stays at 0.02 while the SD halves: d doubles through the spread of the scores alone
    change = pd.DataFrame(
        {
            "analysis_set": "s",
            "model": "m",
            "finetune_dataset": "d",
            "test": "t",
            "seed": [0],
            "delta_d": 0.5,
            "ci_low": 0.1,
            "ci_high": 0.9,
            "ci_level": 0.95,
            "pvalue": 0.01,
            "pvalue_floor": 1e-3,
            "d_pretrained": 0.5,
            "d_finetuned": 1.0,
            "mean_difference_pretrained": 0.02,
            "mean_difference_finetuned": 0.02,
            "pooled_sd_pretrained": 0.04,
            "pooled_sd_finetuned": 0.02,
        }
    )
    scratch = ieat.iloc[[1]].assign(stage="scratch-d-seed0", effect_size=0.1, pvalue_holm=0.6, mean_difference=0.004)
    tests = {"s": [{"name": "t", "X": "x", "Y": "y", "A": "a", "B": "b"}]}
    return ieat, change, scratch, tests


NO_BTS = pd.DataFrame(columns=["analysis_set", "model", "finetune_dataset", "seed", "kind", "statistic", "pvalue"])


def test_findings_say_when_d_changed_through_the_spread_alone():
    ieat, change, _, tests = findings_inputs()
    text = describe_findings(ieat, NO_BTS, tests, alpha=0.01, change=change)
    assert "raw association 0.02 / pooled SD 0.04" in text and "raw association 0.02 / pooled SD 0.02" in text
    assert "Raw association 0.02 to 0.02, pooled SD 0.04 to 0.02: **d changed through the spread" in text
    assert "the raw association changed by a factor of 1.00, the SD by 0.50" in text
    grown = change.assign(mean_difference_finetuned=0.04, pooled_sd_finetuned=0.04)  # the association itself doubled
    text = describe_findings(ieat, NO_BTS, tests, alpha=0.01, change=grown)
    assert "Raw association 0.02 to 0.04, pooled SD 0.04 to 0.04." in text and "through the spread" not in text


def test_a_result_that_is_not_significant_carries_the_effect_its_test_could_detect():
    ieat, _, _, tests = findings_inputs()
    text = describe_findings(ieat, NO_BTS, tests, alpha=0.01)
    pretrained = next(line for line in text.splitlines() if line.startswith("- **m** pretrained"))
    assert pretrained.startswith("- **m** pretrained: not significant (d = 0.50")  # adjusted p 0.03 at alpha 0.01
    assert "With 6 images of X and 6 of Y only an effect of size 1.45 or more" in pretrained
    seed = next(line for line in text.splitlines() if line.startswith("  - seed 0"))
    assert seed.startswith("  - seed 0: significant") and "only an effect of size" not in seed
    cannot = describe_findings(ieat.assign(detectable_d=float("inf")), NO_BTS, tests, alpha=0.01)
    assert "the test cannot reach significance at all" in cannot


def test_findings_give_the_scratch_reference_beside_the_finetuned_seeds():
    ieat, _, scratch, tests = findings_inputs()
    text = describe_findings(ieat, NO_BTS, tests, alpha=0.01, scratch=scratch)
    line = next(line for line in text.splitlines() if "target data alone" in line)
    assert line.startswith("  - target data alone (trained from scratch on d, seed 0;")
    assert "not significant (d = 0.10" in line and "only an effect of size 1.45 or more" in line


def test_the_ieat_findings_are_written_from_the_results_models_records():
    """describe_findings reads the iEAT summary through report.records.ieat_records, the records results.json
    holds: each sentence says its record's verdict and numbers; a summary without a column a record needs is
    named."""
    ieat, change, scratch, tests = findings_inputs()
    rule = Significance(0.01)
    records = ieat_records(ieat, scratch, {("s", "t"): "exploratory"}, rule)
    assert [r["verdict"] for r in records] == ["not significant", "significant", "not significant"]
    lines = describe_ieat(records, tests, 0.01, change=table_records(change))
    assert lines == describe_ieat(ieat_records(ieat, scratch, {}, rule), tests, 0.01, change=table_records(change))
    text = describe_findings(ieat, NO_BTS, tests, alpha=0.01, change=change, scratch=scratch)
    assert "\n".join(lines) in text
    flipped = [{**r, "verdict": "significant"} if r["network"] == "pretrained" else r for r in records]
    assert "- **m** pretrained: significant (d = 0.50" in "\n".join(describe_ieat(flipped, tests, 0.01))
    with pytest.raises(ValueError, match=r"iEAT summary: missing column\(s\) X"):
        describe_findings(ieat.drop(columns="X"), NO_BTS, tests, alpha=0.01)
