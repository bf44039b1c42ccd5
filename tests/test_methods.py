"""Mitigation methods (biastransfer.train.methods) on a tiny planted problem, in process: their known answers.

The planted problem: a small MLP over raw vectors that show an object only when it is visible and always show
the figure (the protected attribute); surfboards stand beside person_a in 90% of the training images and cars
beside person_b (so each figure is half of the images), and objects are hidden (labelled, not shown) in 60%
of the images, so a plain network learns to guess a surfboard from the figure.
The prediction shift: the mean surfboard score of person_a images without a surfboard minus that of person_b
images without one, on a test split drawn without the co-occurrence.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats
from sklearn.linear_model import LogisticRegression
from torch import nn

from biastransfer.data.attributes import Attributes
from biastransfer.train.config import TrainConfig
from biastransfer.train.loop import train_classifier
from biastransfer.train.methods import (
    Groups,
    MethodConfig,
    balanced_subset,
    check_selection_groups,
    fit_eraser,
    fit_head,
    training_method,
)

CLASSES = ("surfboard", "car", "person")
VALUES = ("person_a", "person_b")
SEEDS = range(5)


def draw(n, p_a_given_surfboard, rng, p_hidden=0.6):
    """(inputs, multi-hot targets, attribute codes) of ``n`` planted scenes (each shows a figure)."""
    obj = rng.integers(0, 3, n)  # 0 surfboard, 1 car, 2 none
    p_a = np.select([obj == 0, obj == 1], [p_a_given_surfboard, 1 - p_a_given_surfboard], 0.5)
    code = np.where(rng.random(n) < p_a, 0, 1)
    hidden = rng.random(n) < p_hidden
    x = rng.normal(0, 0.5, (n, 8))
    x[:, 0] += (obj == 0) & ~hidden
    x[:, 1] += (obj == 1) & ~hidden
    x[:, 2] += np.where(code == 0, 1.5, -1.5)
    y = np.zeros((n, 3), dtype=np.float32)
    y[obj == 0, 0] = 1
    y[obj == 1, 1] = 1
    y[:, 2] = 1
    return x.astype(np.float32), y, code


class Vectors(torch.utils.data.Dataset):
    def __init__(self, x, y, codes=None):
        self.x, self.y = torch.from_numpy(x), torch.from_numpy(y)
        self.codes = None if codes is None else torch.from_numpy(codes.astype(np.int64))
        self.classes = CLASSES

    def __len__(self):
        return len(self.x)

    def __getitem__(self, key):
        i = key[0] if isinstance(key, tuple) else key
        return (self.x[i], self.y[i]) if self.codes is None else (self.x[i], self.y[i], self.codes[i])


class Backbone(nn.Module):
    embed_dim = 16

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU())

    def forward(self, x):
        return self.net(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone, self.head = Backbone(), nn.Linear(16, 3)

    @property
    def num_classes(self):
        return self.head.out_features

    def forward(self, x):
        return self.head(self.backbone(x))


def groups_of(codes):
    return Groups(VALUES, np.asarray(codes, dtype=np.int64), (0, 1))


def shift(scores, y, codes):
    """Mean surfboard score of person_a minus person_b images, among those without a surfboard."""
    free = y[:, 0] == 0
    return float(scores[free & (codes == 0), 0].mean() - scores[free & (codes == 1), 0].mean())


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    return {
        "train": draw(2000, 0.9, rng),
        "val": draw(600, 0.5, rng),
        "test": draw(2000, 0.5, rng),
        "held_out": draw(2000, 0.9, rng),  # more images of the training distribution
    }


def train(problem, method, seed, selection="map", **options):
    (xt, yt, ct), (xv, yv, cv) = problem["train"], problem["val"]
    torch.manual_seed(seed)
    model = Net()
    cfg = TrainConfig(epochs=12, lr=0.05, batch_size=64, seed=seed, precision="fp32", weight_decay=0)
    result = train_classifier(
        model,
        Vectors(xt, yt, ct),
        Vectors(xv, yv),
        cfg,
        log=lambda m: None,
        method=training_method(MethodConfig(method, selection, **options), 2),
        val_groups=groups_of(cv),
        selection=selection,
    )
    model.load_state_dict(result.best_state)
    return model.eval(), result


def scores_of(model, x):
    with torch.no_grad():
        return torch.sigmoid(model(torch.from_numpy(x))).numpy()


@pytest.fixture(scope="module")
def plain(problem):
    return [train(problem, "plain", s) for s in SEEDS]


def shifts(problem, models):
    x, y, codes = problem["test"]
    return np.array([shift(scores_of(m, x), y, codes) for m in models])


def below(treated, untreated):
    """Paired over seeds: the upper end of the one-sided 95% t interval of the mean difference, and the
    differences."""
    d = np.asarray(treated) - np.asarray(untreated)
    upper = d.mean() + stats.t.ppf(0.95, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    return upper, d


def test_a_plain_network_learns_the_planted_shift(problem, plain):
    assert (shifts(problem, [m for m, _ in plain]) > 0.05).all()


@pytest.mark.parametrize("method", ["adversarial", "domain_independent"])
def test_loop_methods_lower_the_prediction_shift_with_seeds_as_units(problem, plain, method):
    treated = shifts(problem, [train(problem, method, s)[0] for s in SEEDS])
    upper, d = below(treated, shifts(problem, [m for m, _ in plain]))
    assert upper < 0, (treated, d)


def test_group_dro_worst_group_val_map_is_at_least_plain_within_seed_noise(problem, plain):
    dro = [train(problem, "group_dro", s, dro_step_size=0.05)[1].best_worst_group for s in SEEDS]
    base = [r.best_worst_group for _, r in plain]
    d = np.array(dro) - np.array(base)
    lower = d.mean() - stats.t.ppf(0.95, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    assert lower > -0.02, (dro, base)


def test_worst_group_selection_keeps_the_epoch_with_the_best_worst_group(problem):
    _, result = train(problem, "plain", 0, selection="worst_group")
    chosen = max(result.history, key=lambda r: r.worst_group)
    assert result.best_epoch == chosen.epoch and result.best_worst_group == chosen.worst_group
    assert result.best_metric == chosen.metric


def test_domain_independent_network_is_a_plain_classifier_whose_logits_are_the_heads_sum(problem):
    model, _ = train(problem, "domain_independent", 0)
    assert isinstance(model.head, nn.Linear) and set(model.state_dict()) == set(Net().state_dict())


def penultimate(model, x):
    with torch.no_grad():
        return model.backbone(torch.from_numpy(x))


def test_dfr_lowers_the_shift_and_leaves_the_representation(problem, plain):
    (xt, yt, ct), (xs, ys, cs) = problem["train"], problem["test"]
    treated, untreated = [], []
    for seed, (model, _) in zip(SEEDS, plain):
        before = {k: v.clone() for k, v in model.backbone.state_dict().items()}
        rows = balanced_subset(groups_of(ct), yt, seed)
        head = fit_head(penultimate(model, xt)[rows], torch.from_numpy(yt[rows]), l2=1e-3, steps=200)
        with torch.no_grad():
            scores = torch.sigmoid(head(penultimate(model, xs))).numpy()
        treated.append(shift(scores, ys, cs))
        untreated.append(shift(scores_of(model, xs), ys, cs))
        assert all(torch.equal(before[k], v) for k, v in model.backbone.state_dict().items())
    upper, d = below(treated, untreated)
    assert upper < 0, d


def test_balanced_subset_gives_each_group_as_many_images():
    codes = np.array([0] * 90 + [1] * 10 + [0] * 50 + [1] * 50)
    y = np.zeros((200, 3))
    y[:100, 0] = 1
    y[100:, 1] = 1
    rows = balanced_subset(groups_of(codes), y, seed=0)
    picked = pd.Series([(codes[i], int(y[i, 1])) for i in rows]).value_counts()
    assert set(picked) == {10} and len(picked) == 4
    assert np.array_equal(rows, balanced_subset(groups_of(codes), y, seed=0))


def attacker_accuracy(features, codes, split=1000):
    model = LogisticRegression(max_iter=2000).fit(features[:split], codes[:split])
    hits = model.predict(features[split:]) == codes[split:]
    ci = stats.binomtest(int(hits.sum()), len(hits)).proportion_ci(0.95)
    return hits.mean(), ci


def test_leace_leaves_a_linear_attacker_at_chance(problem, plain):
    """LEACE's guarantee: on the distribution the eraser was fitted on (held-out images of it), no linear
    classifier of the erased features beats chance."""
    (xt, _, ct), (xs, _, cs) = problem["train"], problem["held_out"]
    model = plain[0][0]
    weight, bias = fit_eraser(penultimate(model, xt), ct, 2)
    test = penultimate(model, xs)
    accuracy, _ = attacker_accuracy(test.numpy(), cs)
    assert accuracy > 0.9
    erased = (test @ weight.T + bias).numpy()
    accuracy, ci = attacker_accuracy(erased, cs)
    assert ci.low <= 0.5 <= ci.high, accuracy


def test_worst_group_is_the_least_group_ap():
    codes = np.array([0, 0, 0, 1, 1, 1])
    y = np.array([[1, 0, 1], [0, 1, 1], [1, 0, 1], [1, 0, 1], [0, 1, 1], [0, 1, 1]])
    s = np.array([[0.9, 0.1, 1], [0.2, 0.8, 1], [0.7, 0.3, 1], [0.1, 0.9, 1], [0.8, 0.2, 1], [0.3, 0.7, 1]])
    g = groups_of(codes)
    ap = g.group_ap(y, s)
    assert ap[("person_a", 0)] == 1.0 and ap[("person_b", 0)] == pytest.approx(1 / 3)
    assert g.worst_group(y, s) == pytest.approx(1 / 3)


def test_groups_leave_out_the_attribute_classes_and_name_a_missing_image():
    attrs = Attributes(
        "d", "val", "x", VALUES, ("person",), pd.DataFrame({"image_id": ["a", "b"], "attribute": ["person_a", None]})
    )
    g = Groups.of(attrs, ["b", "a"], CLASSES, where="val")
    assert g.objects == (0, 1) and list(g.codes) == [-1, 0]
    with pytest.raises(ValueError, match="image 'c'"):
        Groups.of(attrs, ["c"], CLASSES, where="val")


def test_worst_group_selection_with_an_empty_validation_group_is_a_named_error():
    y = np.array([[1, 0, 1], [0, 1, 1], [0, 1, 1]])
    with pytest.raises(ValueError, match=r"v\.parquet: .*'person_b' is labelled 'surfboard'"):
        check_selection_groups(groups_of(np.array([0, 0, 1])), y, CLASSES, where="v.parquet")


@pytest.mark.parametrize(
    "options, message",
    [
        ({"method": "fairness"}, "method must be one of"),
        ({"selection": "best"}, "selection must be one of"),
        ({"method": "dfr", "selection": "worst_group"}, "selection must be map"),
        ({"dro_step_size": -1}, "dro_step_size"),
    ],
)
def test_bad_method_options_are_named_errors(options, message):
    with pytest.raises(ValueError, match=message):
        MethodConfig(**options)


def test_a_method_without_attribute_codes_fails_before_training(problem):
    (xt, yt, _), (xv, yv, _) = problem["train"], problem["val"]
    cfg = TrainConfig(epochs=1, lr=0.05, precision="fp32")
    with pytest.raises(ValueError, match="method adversarial needs each training image's attribute code"):
        train_classifier(
            Net(), Vectors(xt, yt), Vectors(xv, yv), cfg, method=training_method(MethodConfig("adversarial"), 2)
        )
