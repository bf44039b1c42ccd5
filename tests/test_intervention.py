"""The intervention comparison (biastransfer.stats.intervention): planted moves found, null data not, and the
verdicts in words; the intervention's config checks."""

import numpy as np
import pytest

from biastransfer.config import intervention_problems
from biastransfer.embeddings import EmbeddingTable
from biastransfer.stats.ieat import ieat
from biastransfer.stats.intervention import direction, intervention_table

TEST = [{"name": "planted", "X": "x", "Y": "y", "A": "a", "B": "b", "role": "planted"}]
DIMS, N = 8, 30


def network(rng, pull: float) -> EmbeddingTable:
    """An analysis set's embeddings: x images ``pull`` towards a's direction, y towards b's."""
    e = np.eye(DIMS)
    means = {"x": 0.3 * e[2] + pull * e[0], "y": 0.3 * e[2] + pull * e[1], "a": e[0], "b": e[1]}
    ids, classes, rows = [], [], []
    for cls, mean in means.items():
        for i in range(N):
            ids.append(f"{cls}{i}")
            classes.append(cls)
            rows.append(mean + 0.5 * rng.normal(size=DIMS))
    return EmbeddingTable(np.array(ids), np.array(classes), np.array(rows, dtype=np.float32))


def tables(untouched_pull, intervened_pull, seeds=(0, 1, 2)):
    rng = np.random.default_rng(7)
    return ({s: network(rng, untouched_pull) for s in seeds}, {s: network(rng, intervened_pull) for s in seeds})


def test_a_planted_move_is_found_per_seed_and_over_seeds():
    u, i = tables(0.8, 0.0)
    out = intervention_table(u, i, TEST, bootstrap=400, seed=0, permutations=1000)
    per_seed = out[out["unit"] == "images"]
    assert len(per_seed) == 3 and (per_seed["ci_high"] < 0).all()
    first = u[0]
    d = ieat(*(first.of_class(c) for c in "xyab"), bootstrap=0).effect_size
    assert per_seed["d_untouched"].iloc[0] == pytest.approx(d, abs=1e-6)
    seeds = out[out["unit"] == "seeds"].iloc[0]
    assert seeds["n"] == 3 and seeds["ci_high"] < 0 and seeds["delta_d"] == pytest.approx(per_seed["delta_d"].mean())
    assert seeds["min_pvalue"] == 0.25  # 2 / 2^3, two-sided
    assert seeds["verdict"].startswith("the intervention lowered d")
    assert "cannot go below 0.25 with 3 seeds" in seeds["verdict"]


def test_no_move_on_null_data():
    u, i = tables(0.5, 0.5)
    out = intervention_table(u, i, TEST, bootstrap=400, seed=0, permutations=1000)
    assert (out["ci_low"] < 0).all() and (out["ci_high"] > 0).all()
    assert out["verdict"].str.startswith("no change of d shown").all()


def test_one_seed_is_not_tested_over_seeds_and_seeds_must_match():
    u, i = tables(0.8, 0.0, seeds=(4,))
    out = intervention_table(u, i, TEST, bootstrap=400)
    assert out[out["unit"] == "seeds"]["verdict"].iloc[0] == "not tested (fewer than 2 seeds)"
    with pytest.raises(ValueError, match=r"untouched seeds \[4\] and intervened seeds \[5\]"):
        intervention_table(u, {5: i[4]}, TEST, bootstrap=400)


@pytest.mark.parametrize("low, high, word", [(-0.3, -0.1, "lowered"), (0.1, 0.2, "raised"), (-0.1, 0.2, "unchanged"),
                                             (np.nan, np.nan, "untested")])  # fmt: skip
def test_direction(low, high, word):
    assert direction(low, high) == word


def config(**spec):
    return {
        "models": {},
        "datasets": {"syn": {"kind": "synthetic"}, "coco": {"kind": "coco"},
                     "fix": {"kind": "intervention", "objects": ["surfboard"], "method": "subsample"} | spec},
    }  # fmt: skip


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"from": "nowhere"}, "datasets.fix.from: unknown dataset 'nowhere'"),
        ({"from": "coco"}, "'coco' is a coco dataset, whose training split has no per-image attribute file"),
        ({"from": "syn", "objects": ["boat"]}, "datasets.fix.objects: 'boat' is not an object"),
    ],
)
def test_config_problems_are_named(spec, message):
    problems = intervention_problems(config(**spec))
    assert len(problems) == 1 and message in problems[0]
    assert intervention_problems(config(**{"from": "syn"})) == []
