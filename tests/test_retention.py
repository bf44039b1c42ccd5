"""The retention verdict: a paired interval of rho(pretrained, finetuned) - rho(scratch, finetuned)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from biastransfer.stats.bts import bias_transfer_score, retention_difference
from biastransfer.stats.results import scratch_columns

KEYS = [f"c{i}" for i in range(10)]


def test_known_answers():
    ranks = dict(zip(KEYS, range(10)))
    reverse = dict(zip(KEYS, range(10, 0, -1)))
    r = retention_difference(ranks, reverse, ranks, replicates=500)
    assert r.difference == pytest.approx(2.0)  # rho 1 minus rho -1
    assert r.verdict == "retained" and r.ci_low > 0 and r.ci_high == pytest.approx(2.0)
    same = retention_difference(ranks, ranks, ranks, replicates=200)
    assert (same.difference, same.ci_low, same.ci_high, same.verdict) == (0.0, 0.0, 0.0, "undecided")
    with pytest.raises(ValueError, match="missing in scratch"):
        retention_difference(ranks, {k: ranks[k] for k in KEYS[:9]}, ranks)
    with pytest.raises(ValueError, match="at least 3 keys"):
        retention_difference({"a": 1, "b": 2}, {"a": 1, "b": 2}, {"a": 1, "b": 2})


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), noise=st.floats(0.05, 2.0))
def test_swapping_pretrained_and_scratch_mirrors_the_interval(seed, noise):
    rng = np.random.default_rng(seed)
    pre = dict(zip(KEYS, rng.normal(size=10)))
    scratch = dict(zip(KEYS, rng.normal(size=10)))
    ft = {k: v + noise * rng.normal() for k, v in pre.items()}
    a = retention_difference(pre, scratch, ft, replicates=300, seed=seed % 1000)
    b = retention_difference(scratch, pre, ft, replicates=300, seed=seed % 1000)
    assert b.difference == pytest.approx(-a.difference)
    assert (b.ci_low, b.ci_high) == pytest.approx((-a.ci_high, -a.ci_low))
    assert {a.verdict, b.verdict} in ({"undecided"}, {"retained", "target data alone"})


def test_planted_retention_is_found_and_the_null_rarely_decides():
    """13 keys, finetuned = pretrained + noise, scratch unrelated: "retained" in >= 85 of 100 data sets (and,
    with the roles swapped, "target data alone"). Pretrained and scratch equally related to the finetuned
    ranking (one latent ranking plus noise for all three): a verdict other than "undecided" in at most 6 of
    150 data sets of 10 keys (the interval is conservative there: about 1%)."""
    keys = [f"c{i}" for i in range(13)]
    retained = target = 0
    for i in range(100):
        rng = np.random.default_rng(i)
        pre, other = (dict(zip(keys, rng.normal(size=13))) for _ in range(2))
        ft = {k: v + 0.3 * rng.normal() for k, v in pre.items()}
        retained += retention_difference(pre, other, ft, replicates=400, seed=i).verdict == "retained"
        target += retention_difference(other, pre, ft, replicates=400, seed=i).verdict == "target data alone"
    assert retained >= 85 and target >= 85
    decided = 0
    for i in range(150):
        rng = np.random.default_rng(1000 + i)
        latent = rng.normal(size=10)
        a, b, f = (dict(zip(KEYS, latent + 0.5 * rng.normal(size=10))) for _ in range(3))
        decided += retention_difference(a, b, f, replicates=400, seed=i).verdict != "undecided"
    assert decided <= 6


PAIRS = [(KEYS[i], KEYS[(i + 1) % 10]) for i in range(10)]


def _sim(stage, values):
    """A similarity table: ``values[:10]`` intra-class of KEYS, ``values[10:]`` inter-class of PAIRS."""
    return pd.DataFrame(
        {
            "stage": stage,
            "kind": ["intra"] * 10 + ["inter"] * 10,
            "key": KEYS + [f"{p}|{q}" for p, q in PAIRS],
            "class_p": KEYS + [p for p, _ in PAIRS],
            "class_q": [""] * 10 + [q for _, q in PAIRS],
            "value": values,
        }
    )


def test_scratch_columns_carry_the_verdict_per_seed_and_pooled():
    rng = np.random.default_rng(4)
    pre = rng.normal(size=20)
    ft = {s: _sim(f"ft-d-seed{s}", pre + 0.1 * rng.normal(size=20)) for s in (0, 1)}
    ref = [_sim("scratch-d-seed0", rng.normal(size=20))]
    lists = {"intra": KEYS, "inter": PAIRS}
    cols = scratch_columns(_sim("pretrained", pre), ft, ref, lists, bootstrap=300)
    assert len(cols) == 6 and set(cols["retention_verdict"]) == {"retained"}  # (seed 0, 1, pooled) x 2 kinds
    pooled = cols.iloc[2]  # intra, pooled
    mean_ft = (ft[0]["value"] + ft[1]["value"]).to_numpy()[:10] / 2
    direct = retention_difference(
        dict(zip(KEYS, pre[:10])), dict(zip(KEYS, ref[0]["value"][:10])), dict(zip(KEYS, mean_ft)), replicates=300
    )
    assert (pooled.retention_difference, pooled.retention_ci_low) == pytest.approx((direct.difference, direct.ci_low))
    bts = bias_transfer_score(dict(zip(KEYS, pre[:10])), dict(zip(KEYS, mean_ft))).statistic
    assert pooled.retention_difference == pytest.approx(bts - pooled.scratch_statistic)  # the two rhos of the row
    with pytest.raises(ValueError, match="must be scratch stages"):
        scratch_columns(_sim("pretrained", pre), ft, [ft[0]], lists)
