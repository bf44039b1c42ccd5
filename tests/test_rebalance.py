"""The rebalancer of interventions (biastransfer.data.rebalance) on hand-made tables with known answers."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from biastransfer.data.rebalance import Labels, attribute_codes, rebalance

CLASSES = ("car", "person", "surfboard")
ATTRS = ("person_a", "person_b")


def table(cells):
    """Labels and attribute codes of ``[(labels, attribute, count), ...]``."""
    lists, values = [], []
    for labels, attribute, count in cells:
        lists += [list(labels)] * count
        values += [attribute] * count
    return Labels.from_lists(lists, CLASSES), attribute_codes(values, ATTRS)


# surfboard 6 a / 2 b, car 2 a / 6 b, no object 4 a / 4 b (overall 12 / 12), two images without a figure
SKEWED = [
    (["surfboard", "person"], "person_a", 6),
    (["surfboard", "person"], "person_b", 2),
    (["car", "person"], "person_a", 2),
    (["car", "person"], "person_b", 6),
    (["person"], "person_a", 4),
    (["person"], "person_b", 4),
    (["surfboard"], None, 1),
    ([], None, 1),
]


def after(result, obj):
    rows = result.table[(result.table["object"] == obj) & (result.table["when"] == "after")]
    return dict(zip(rows["attribute"], rows["images"])), dict(zip(rows["attribute"], rows["share"]))


def test_independent_subsample_keeps_the_most_images_at_the_overall_ratio():
    labels, codes = table(SKEWED)
    out = rebalance(labels, codes, ATTRS, ["surfboard", "car"], target="independent", method="subsample", seed=0)
    assert after(out, "surfboard")[0] == {"person_a": 2, "person_b": 2}
    assert after(out, "car")[0] == {"person_a": 2, "person_b": 2}
    assert out.keep.sum() == len(codes) - 8
    assert out.keep[codes == -1].all() and out.keep[16:24].all()  # no figure, or no listed object: kept
    assert (out.weights == 1).all()
    before = out.table[(out.table["when"] == "before") & (out.table["object"] == "surfboard")]
    assert before["images"].tolist() == [6, 2] and before["share"].tolist() == [0.75, 0.25]
    assert (out.table["target"] == 0.5).all()


def test_reversed_subsample_mirrors_the_skew_exactly():
    labels, codes = table([(["surfboard"], "person_a", 6), (["surfboard"], "person_b", 3), (["car"], "person_b", 4)])
    out = rebalance(labels, codes, ATTRS, ["surfboard"], target="reversed", method="subsample", seed=3)
    counts, shares = after(out, "surfboard")
    assert counts == {"person_a": 1, "person_b": 3} and shares["person_a"] == 0.25  # target 1/3: one image off


def test_given_ratio_reweight_is_exact_and_weights_sum_to_the_image_count():
    labels, codes = table(SKEWED)
    out = rebalance(labels, codes, ATTRS, ["surfboard", "car"], target=0.3, method="reweight")
    assert out.keep.all()
    assert out.weights.sum() == pytest.approx(len(codes))
    for obj in ("surfboard", "car"):
        assert after(out, obj)[1]["person_a"] == pytest.approx(0.3, abs=1e-9)
    plain = out.weights[16:24]  # images without a listed object share one weight
    assert np.allclose(plain, plain[0])


@pytest.mark.parametrize("method", ["subsample", "reweight"])
def test_data_already_at_its_target_is_not_changed_and_says_so(method):
    """Surfboards 4 : 4 beside an overall 8 : 8: independent keeps every image at weight 1 (changed False);
    the skewed table is changed by either method."""
    balanced = [
        (["surfboard"], "person_a", 4),
        (["surfboard"], "person_b", 4),
        (["car"], "person_a", 4),
        (["car"], "person_b", 4),
    ]
    out = rebalance(*table(balanced), ATTRS, ["surfboard"], target="independent", method=method)
    assert out.keep.all() and np.allclose(out.weights, 1) and out.changed is False
    assert rebalance(*table(SKEWED), ATTRS, ["surfboard"], target="independent", method=method).changed is True


def test_seeded_and_reproducible():
    labels, codes = table(SKEWED)
    runs = [
        rebalance(labels, codes, ATTRS, ["surfboard"], target="independent", method="subsample", seed=s).keep
        for s in (5, 5, 6)
    ]
    assert (runs[0] == runs[1]).all()
    assert not (runs[0] == runs[2]).all()


@pytest.mark.parametrize(
    "cells, target, method, message",
    [
        (
            [(["surfboard"], "person_a", 5), (["car"], "person_b", 5)],
            "independent",
            "subsample",
            "object 'surfboard', attribute 'person_b'",
        ),
        (
            [(["surfboard"], "person_a", 5), (["car"], "person_b", 5)],
            0.5,
            "reweight",
            "object 'surfboard', attribute 'person_b'",
        ),
        (
            [(["surfboard"], "person_a", 6), (["surfboard"], "person_b", 2)],
            "reversed",
            "subsample",
            "object 'surfboard', attribute 'person_a'",
        ),
        (
            [(["surfboard"], None, 3), (["car"], "person_b", 5)],
            "independent",
            "reweight",
            "object 'surfboard': no image",
        ),
    ],
)
def test_an_unreachable_target_is_refused_naming_object_and_attribute(cells, target, method, message):
    labels, codes = table(cells)
    with pytest.raises(ValueError, match=message):
        rebalance(labels, codes, ATTRS, ["surfboard"], target=target, method=method)


def test_bad_input_is_named():
    labels, codes = table(SKEWED)
    with pytest.raises(ValueError, match="object 'boat' is not a class"):
        rebalance(labels, codes, ATTRS, ["boat"], target="independent", method="subsample")
    with pytest.raises(ValueError, match="target 1.5"):
        rebalance(labels, codes, ATTRS, ["car"], target=1.5, method="subsample")
    with pytest.raises(ValueError, match="method 'drop'"):
        rebalance(labels, codes, ATTRS, ["car"], target="independent", method="drop")
    with pytest.raises(ValueError, match="attribute 'person_c'"):
        attribute_codes(["person_a", "person_c"], ATTRS)


counts = st.integers(min_value=1, max_value=40)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(counts, counts), min_size=1, max_size=3),
    st.integers(0, 5),
    st.integers(0, 5),
    st.sampled_from(["independent", "reversed", 0.4]),
    st.integers(0, 2**31),
)
def test_property_achieved_shares(per_object, plain_a, plain_b, target, seed):
    """One object per image: a reweighting hits the target exactly; a subsample is within one image of it,
    keeps at least one image of each attribute and drops only images of listed objects."""
    classes = tuple(f"o{i}" for i in range(len(per_object)))
    lists, values = [], []
    for i, (a, b) in enumerate(per_object):
        lists += [[classes[i]]] * (a + b)
        values += ["person_a"] * a + ["person_b"] * b
    lists += [[]] * (plain_a + plain_b)
    values += ["person_a"] * plain_a + ["person_b"] * plain_b
    labels, codes = Labels.from_lists(lists, classes), attribute_codes(values, ATTRS)
    weighted = rebalance(labels, codes, ATTRS, list(classes), target=target, method="reweight")
    assert weighted.weights.sum() == pytest.approx(len(codes))
    shown = weighted.table[weighted.table["when"] == "after"]
    assert np.allclose(shown["share"], shown["target"], atol=1e-8)
    try:
        sub = rebalance(labels, codes, ATTRS, list(classes), target=target, method="subsample", seed=seed)
    except ValueError as err:  # refused only when a share to keep would round to no image
        assert "would keep no image" in str(err)
        return
    kept = sub.table[sub.table["when"] == "after"]
    totals = kept.groupby("object")["images"].transform("sum")
    assert (np.abs(kept["images"] - kept["target"] * totals) <= 1 + 1e-9).all()
    assert (kept.loc[kept["target"] > 0, "images"] >= 1).all()
    assert sub.keep[len(codes) - plain_a - plain_b :].all()
