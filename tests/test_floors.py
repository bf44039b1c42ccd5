"""What a bootstrap interval needs (biastransfer.stats.floors): replicates for its level, images per set.

Known answers: 2 / (1 - level) replicates (40 at 95%, 200 at 99%); the fewest images whose distinct
resamples (multisets, counted here by brute force) reach that many (5 at 95%, 6 at 99%). A bootstrap
count below the floor is refused, at config time naming the key; a class or set too small to resample
gives a NaN ("not estimable") interval instead of one that may exclude its own estimate.
"""

import copy
import itertools
import math

import numpy as np
import pytest
import yaml
from conftest import ROOT
from snakemake.utils import validate

from biastransfer.stats.bootstrap import IEATBlocks, ieat_changes
from biastransfer.stats.floors import min_replicates, min_resampled_size
from biastransfer.stats.ieat import ieat
from biastransfer.stats.resampled_similarity import rank_correlation_ci, similarity_changes, similarity_replicates
from biastransfer.workflow import config as cfg

SCHEMA = str(ROOT / "workflow" / "schemas" / "config.schema.yaml")


def distinct_resamples(k: int) -> int:
    return len({tuple(sorted(draw)) for draw in itertools.product(range(k), repeat=k)})


def test_the_floors_have_their_known_values():
    assert [min_replicates(level) for level in (0.9, 0.95, 0.99)] == [20, 40, 200]
    assert [distinct_resamples(k) for k in (2, 3, 4, 5, 6)] == [3, 10, 35, 126, 462]
    assert [min_resampled_size(level) for level in (0.9, 0.95, 0.99)] == [4, 5, 6]


def test_too_few_replicates_for_the_level_are_refused():
    rng = np.random.default_rng(0)
    X, Y, A, B = (rng.normal(size=(6, 4)) for _ in range(4))
    with pytest.raises(ValueError, match="1 bootstrap replicate.* cannot give a 0.95 interval: it needs at least 40"):
        ieat(X, Y, A, B, permutations=100, bootstrap=1)
    with pytest.raises(ValueError, match="at least 200"):
        ieat(X, Y, A, B, permutations=100, bootstrap=100, ci_level=0.99)
    assert np.isfinite(ieat(X, Y, A, B, permutations=100, bootstrap=40).ci_low)
    groups = {c: rng.normal(size=(6, 4)) + 1 for c in "abc"}
    reps = similarity_replicates({"pre": groups, "post": groups}, list("abc"), [], replicates=39)
    with pytest.raises(ValueError, match="39 bootstrap replicate"):
        rank_correlation_ci(reps, "pre", ["post"], list("abc"))
    with pytest.raises(ValueError, match="39 bootstrap replicate"):
        similarity_changes(reps, "pre", "post")


def filled(config):
    config = copy.deepcopy(config)
    validate(config, schema=SCHEMA, set_default=True)
    return config


@pytest.mark.parametrize(
    "edit, key",
    [
        ({"ieat": {"bootstrap": 1}}, "analysis.ieat.bootstrap: 1 replicate"),
        ({"bts": {"bootstrap": 39}}, "analysis.bts.bootstrap: 39 replicate"),
        ({"bts": {"ci_level": 0.9999}}, "analysis.bts.bootstrap: 2000 replicate"),
        ({"trajectory": {"bootstrap": 100}, "ieat": {"ci_level": 0.99}}, "analysis.trajectory.bootstrap: 100"),
    ],
)
def test_the_config_check_names_a_bootstrap_count_below_the_floor(edit, key):
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    assert cfg.bootstrap_problems(filled(config)) == []
    for section, values in edit.items():
        config.setdefault("analysis", {}).setdefault(section, {}).update(values)
    problems = cfg.bootstrap_problems(filled(config))
    assert any(p.startswith(key) for p in problems), problems
    section = key.split(".")[1]
    config["analysis"].setdefault(section, {})["bootstrap"] = 0
    assert not any(p.startswith(key) for p in cfg.bootstrap_problems(filled(config))), "0 (no intervals) is allowed"


def test_a_class_too_small_to_resample_has_no_interval():
    rng = np.random.default_rng(1)
    sizes = {"a": 2, "b": 8, "c": 8, "d": 8}
    pre = {c: rng.normal(size=(k, 6)) + 0.5 for c, k in sizes.items()}
    post = {c: z + 0.3 * rng.normal(size=z.shape) for c, z in pre.items()}
    reps = similarity_replicates({"pre": pre, "post": post}, list("abcd"), [("a", "b"), ("b", "c")], replicates=200)
    rho = rank_correlation_ci(reps, "pre", ["post"], list("abcd"))
    assert np.isfinite(rho.estimate) and math.isnan(rho.ci_low) and math.isnan(rho.ci_high)
    assert np.isfinite(rank_correlation_ci(reps, "pre", ["post"], list("bcd")).ci_low)
    changes = similarity_changes(reps, "pre", "post")
    for key in ("a", ("a", "b")):
        assert np.isfinite(changes[key].delta) and math.isnan(changes[key].ci_low) and math.isnan(changes[key].pvalue)
    assert all(np.isfinite([changes[key].ci_low, changes[key].pvalue]).all() for key in ("b", ("b", "c")))


def test_an_ieat_set_too_small_to_resample_has_no_interval():
    rng = np.random.default_rng(2)
    X, Y, A, B = rng.normal(size=(4, 6)), rng.normal(size=(6, 6)), rng.normal(size=(6, 6)), rng.normal(size=(6, 6))
    small = ieat(X, Y, A, B, permutations=100, bootstrap=200)
    assert np.isfinite(small.effect_size) and math.isnan(small.ci_low) and math.isnan(small.ci_high)
    assert np.isfinite(ieat(rng.normal(size=(5, 6)), Y, A, B, permutations=100, bootstrap=200).ci_low)
    change = ieat_changes([IEATBlocks(X, Y, A, B), IEATBlocks(X + 0.1, Y, A, B)], replicates=200)[0]
    assert np.isfinite(change.delta) and math.isnan(change.ci_low) and math.isnan(change.pvalue)
