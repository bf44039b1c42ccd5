"""Mitigation methods as finetuning arms, and the worst-group validation metric.

Groups are (attribute value x object class): the protected attribute of each image (its split's attribute
file, :mod:`biastransfer.data.attributes`) crossed with the classes the classifier predicts, less the
attribute's own classes (``attribute_classes``, e.g. ``person``).

Worst-group validation mAP: for each group (v, c), the average precision of class c among the validation
images whose attribute is v (the positives: those of them labelled c; the negatives: the rest of them);
the minimum over the groups with at least one positive. Images without an attribute value take no part.

Methods trained through the loop (:func:`biastransfer.train.loop.train_classifier`, its ``method`` hook):

- ``plain``: binary cross-entropy, as without a method;
- ``group_dro`` (Sagawa et al., ICLR 2020): online group weights q updated by an exponentiated-gradient step
  ``q_g <- q_g exp(step * L_g)`` (normalised) after each batch, the loss ``sum_g q_g L_g`` of the groups'
  mean losses; a group (v, c)'s loss is the mean BCE of class c over the batch's images with attribute v, and
  images without an attribute value form groups of their own, so that every training image counts;
- ``domain_independent`` (Wang et al., CVPR 2020): one linear head per attribute value (and one for images
  without one), each trained on its value's images; at inference the heads' logits are summed, which is one
  linear head (the heads are folded into it when training ends, so the saved network is a plain classifier);
- ``adversarial`` (Wang et al., ICCV 2019): an attribute head on the penultimate features behind a
  gradient-reversal layer, its cross-entropy on the images with an attribute value weighted by
  ``adversary_weight``; the head is dropped when training ends.

Methods on a finetuned network (the plain network of the same dataset, model and seed), its representation
frozen:

- ``dfr`` (Kirichenko et al., ICLR 2023): the last layer refitted on a group-balanced subset of the training
  split (:func:`balanced_subset`, seeded), the backbone's tensors unchanged;
- ``leace`` (Belrose et al., NeurIPS 2023; the ``concept-erasure`` package): the least-squares concept
  eraser of the attribute, fitted on the penultimate features of the training split, becomes an affine map
  after the backbone (:meth:`~biastransfer.models.extractors.FeatureExtractor.set_eraser`, so the network's
  embeddings are the erased features), and the last layer is refitted on the erased features.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from biastransfer.data.attributes import Attributes
from biastransfer.train.metrics import average_precision
from biastransfer.vocabulary import HEAD_ONLY_METHODS, SELECTIONS, TRAINING_METHODS


@dataclass(frozen=True)
class MethodConfig:
    """A finetuning arm's method, its model selection and the methods' options.

    ``dro_step_size``: group DRO's exponentiated-gradient step. ``adversary_weight``: the weight of the
    adversary's loss (and of the reversed gradient); nothing bounds the features the reversed gradient
    pushes, so a large weight can diverge (the loop then stops with its non-finite loss error). ``head_l2``: the L2 penalty of the last layer refitted by
    DFR and LEACE (on standardised features). ``head_steps``: its L-BFGS iterations.
    """

    method: str = "plain"
    selection: str = "map"
    dro_step_size: float = 0.01
    adversary_weight: float = 0.1
    head_l2: float = 1e-3
    head_steps: int = 200

    def __post_init__(self) -> None:
        if self.method not in TRAINING_METHODS:
            raise ValueError(f"method must be one of {', '.join(TRAINING_METHODS)}, got {self.method!r}")
        if self.selection not in SELECTIONS:
            raise ValueError(f"selection must be one of {', '.join(SELECTIONS)}, got {self.selection!r}")
        if self.method in HEAD_ONLY_METHODS and self.selection != "map":
            raise ValueError(f"method {self.method} trains no epochs to select from: its selection must be map")
        for name in ("dro_step_size", "adversary_weight", "head_l2"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if isinstance(self.head_steps, bool) or not isinstance(self.head_steps, int) or self.head_steps < 1:
            raise ValueError(f"head_steps must be an integer >= 1, got {self.head_steps!r}")

    @property
    def needs_attribute(self) -> bool:
        return self.method != "plain" or self.selection == "worst_group"


# --------------------------------------------------------------------------------------------
# Groups and the worst-group metric
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Groups:
    """Each image's attribute as a code (``codes[i]``: index into ``values``, -1 = none) and the object
    classes (indices into the classifier's classes) that the groups cross it with."""

    values: tuple[str, ...]
    codes: np.ndarray
    objects: tuple[int, ...]

    @classmethod
    def of(cls, attrs: Attributes, image_ids: Sequence[str], classes: Sequence[str], *, where: str) -> Groups:
        """The groups of a split's images (``image_ids``, in its order) from its attribute file."""
        given = attrs.of([str(i) for i in image_ids], where=where)
        index = {v: k for k, v in enumerate(attrs.attributes)}
        codes = np.asarray([-1 if v is None else index[v] for v in given], dtype=np.int64)
        objects = tuple(k for k, c in enumerate(classes) if c not in attrs.attribute_classes)
        if not objects:
            raise ValueError(f"{where}: every class is an attribute class ({', '.join(classes)}): no group to form")
        return cls(tuple(attrs.attributes), codes, objects)

    def group_ap(self, y_true: np.ndarray, scores: np.ndarray) -> dict[tuple[str, int], float]:
        """{(value, class index): AP of the class among the images with that value} (NaN: no positive)."""
        out = {}
        for k, value in enumerate(self.values):
            rows = self.codes == k
            if not rows.any():
                out.update({(value, c): float("nan") for c in self.objects})
                continue
            ap = average_precision(y_true[rows][:, self.objects], scores[rows][:, self.objects])
            out.update({(value, c): float(a) for c, a in zip(self.objects, ap)})
        return out

    def worst_group(self, y_true: np.ndarray, scores: np.ndarray) -> float:
        """Worst-group mAP: the least AP over the groups with a positive (NaN if none has one)."""
        ap = [a for a in self.group_ap(y_true, scores).values() if not np.isnan(a)]
        return float(min(ap)) if ap else float("nan")

    def empty(self, y_true: np.ndarray) -> list[tuple[str, int]]:
        """The groups without a positive image (value, class index)."""
        y = np.asarray(y_true, dtype=bool)
        return [
            (value, c) for k, value in enumerate(self.values) for c in self.objects if not y[self.codes == k, c].any()
        ]


def check_selection_groups(groups: Groups, y_true: np.ndarray, classes: Sequence[str], *, where: str) -> None:
    """ValueError naming ``where`` and the first group with no positive validation image: worst-group
    selection needs every group."""
    empty = groups.empty(y_true)
    if empty:
        value, c = empty[0]
        raise ValueError(
            f"{where}: selection worst_group needs every (attribute x object) group in validation, but no image "
            f"with attribute {value!r} is labelled {classes[c]!r} ({len(empty)} empty group(s)); "
            "use selection: map or a larger validation split"
        )


# --------------------------------------------------------------------------------------------
# Methods trained through the loop
# --------------------------------------------------------------------------------------------


class TrainingMethod:
    """The loop's hook: :meth:`prepare` adds the method's modules to the model (before the optimiser is
    made), :meth:`loss` is one batch's training loss, :meth:`finish` leaves a plain classifier. This base class
    is plain finetuning; ``uses_attribute``: whether :meth:`loss` reads the images' attribute codes (and calls
    the model's parts, so the loop gives it the uncompiled model)."""

    uses_attribute = False

    def __init__(self, cfg: MethodConfig, n_values: int = 0):
        self.cfg, self.n_values = cfg, n_values

    def prepare(self, model: nn.Module) -> None:
        """Add the method's modules to ``model`` (so the optimiser, the device move and the resume state hold them)."""

    def loss(self, model: nn.Module, x: torch.Tensor, y: torch.Tensor, codes: torch.Tensor | None) -> torch.Tensor:
        return F.binary_cross_entropy_with_logits(model(x).float(), y)

    def finish(self, model: nn.Module) -> None:
        """Fold or drop the method's modules once the best epoch's weights are loaded."""


def _domains(codes: torch.Tensor, n_values: int) -> torch.Tensor:
    """Codes with -1 (no attribute value) as domain ``n_values``."""
    return torch.where(codes < 0, torch.full_like(codes, n_values), codes)


class GroupDRO(TrainingMethod):
    """Group DRO over (attribute value or none) x class groups, the weights a buffer of the model."""

    uses_attribute = True

    def prepare(self, model):
        n_groups = (self.n_values + 1) * model.num_classes
        model.register_buffer("dro_weights", torch.full((n_groups,), 1.0 / n_groups))

    def loss(self, model, x, y, codes):
        per_cell = F.binary_cross_entropy_with_logits(model(x).float(), y, reduction="none")  # (B, C)
        onehot = F.one_hot(_domains(codes, self.n_values), self.n_values + 1).to(per_cell.dtype)  # (B, D)
        counts = onehot.sum(0)  # (D,)
        group_loss = (onehot.T @ per_cell) / counts.clamp(min=1)[:, None]  # (D, C): mean over the domain's images
        present = (counts > 0)[:, None].expand_as(group_loss).reshape(-1)
        flat = group_loss.reshape(-1)
        with torch.no_grad():
            q = model.dro_weights * torch.exp(self.cfg.dro_step_size * flat.detach() * present)
            model.dro_weights.copy_(q / q.sum())
        return (model.dro_weights * flat).sum()

    def finish(self, model):
        del model.dro_weights


class SummedHeads(nn.Module):
    """One linear head per domain; ``forward`` sums their logits (the inference rule)."""

    def __init__(self, head: nn.Linear, n: int):
        super().__init__()
        self.heads = nn.ModuleList(nn.Linear(head.in_features, head.out_features) for _ in range(n))
        for h in self.heads:
            h.load_state_dict(head.state_dict())

    @property
    def out_features(self) -> int:
        return self.heads[0].out_features

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return sum(h(features) for h in self.heads)

    def per_domain(self, features: torch.Tensor, domains: torch.Tensor) -> torch.Tensor:
        """Each image's logits from its own domain's head."""
        stacked = torch.stack([h(features) for h in self.heads], dim=1)  # (B, D, C)
        return stacked[torch.arange(len(domains), device=domains.device), domains]

    def folded(self) -> nn.Linear:
        """The one linear head whose logits are the sum of the heads'."""
        first = self.heads[0]
        out = nn.Linear(first.in_features, first.out_features).to(first.weight.device)
        with torch.no_grad():
            out.weight.copy_(sum(h.weight for h in self.heads))
            out.bias.copy_(sum(h.bias for h in self.heads))
        return out


class DomainIndependent(TrainingMethod):
    """One head per attribute value (and one for images without), summed at inference."""

    uses_attribute = True

    def prepare(self, model):
        model.head = SummedHeads(model.head, self.n_values + 1)

    def loss(self, model, x, y, codes):
        logits = model.head.per_domain(model.backbone(x), _domains(codes, self.n_values))
        return F.binary_cross_entropy_with_logits(logits.float(), y)

    def finish(self, model):
        model.head = model.head.folded()


class _ReverseGradient(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return -grad


class Adversarial(TrainingMethod):
    """An attribute head on the penultimate features behind gradient reversal."""

    uses_attribute = True

    def prepare(self, model):
        model.adversary = nn.Linear(model.backbone.embed_dim, self.n_values)

    def loss(self, model, x, y, codes):
        features = model.backbone(x)
        task = F.binary_cross_entropy_with_logits(model.head(features).float(), y)
        known = codes >= 0
        if not known.any():
            return task
        guess = model.adversary(_ReverseGradient.apply(features[known])).float()
        return task + self.cfg.adversary_weight * F.cross_entropy(guess, codes[known])

    def finish(self, model):
        del model.adversary


_LOOP_METHODS = {
    "plain": TrainingMethod,
    "group_dro": GroupDRO,
    "domain_independent": DomainIndependent,
    "adversarial": Adversarial,
}


def training_method(cfg: MethodConfig, n_values: int = 0) -> TrainingMethod:
    """The loop's hook for ``cfg.method`` (a head-only method has none: ValueError)."""
    if cfg.method not in _LOOP_METHODS:
        raise ValueError(f"method {cfg.method} refits a finetuned network's last layer; it has no training loop")
    if cfg.method != "plain" and n_values < 2:
        raise ValueError(f"method {cfg.method} needs an attribute with at least 2 values, got {n_values}")
    return _LOOP_METHODS[cfg.method](cfg, n_values)


# --------------------------------------------------------------------------------------------
# Head-only methods: on the frozen representation of a finetuned network
# --------------------------------------------------------------------------------------------


def balanced_subset(groups: Groups, y_true: np.ndarray, seed: int) -> np.ndarray:
    """Sorted indices of a group-balanced subset of a training split, for DFR.

    The groups are (attribute value or none) x object class, over the non-empty ones; each gives as many
    images as the smallest, drawn without replacement by ``seed`` (an image of several groups may be drawn
    by each: it is kept once).
    """
    y = np.asarray(y_true, dtype=bool)
    domains = np.where(groups.codes < 0, len(groups.values), groups.codes)
    members = [np.flatnonzero((domains == d) & y[:, c]) for d in range(len(groups.values) + 1) for c in groups.objects]
    members = [m for m in members if len(m)]
    if not members:
        raise ValueError("no (attribute x object) group has a training image: nothing to balance")
    n = min(len(m) for m in members)
    rng = np.random.default_rng(seed)
    return np.unique(np.concatenate([rng.choice(m, n, replace=False) for m in members]))


def fit_head(features: torch.Tensor, y: torch.Tensor, *, l2: float, steps: int) -> nn.Linear:
    """A linear multi-label head fitted by full-batch L-BFGS on BCE plus ``l2`` times the squared weights,
    on standardised features (the scaling folded into the returned head); deterministic, from zeros."""
    x = features.double()
    mean, scale = x.mean(0), x.std(0).clamp(min=1e-6)
    z, target = (x - mean) / scale, y.double()
    weight = torch.zeros(y.shape[1], x.shape[1], dtype=torch.float64, requires_grad=True)
    bias = torch.zeros(y.shape[1], dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.LBFGS([weight, bias], max_iter=steps, line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        loss = F.binary_cross_entropy_with_logits(z @ weight.T + bias, target) + l2 * (weight**2).sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    head = nn.Linear(x.shape[1], y.shape[1])
    with torch.no_grad():
        head.weight.copy_((weight / scale).float())
        head.bias.copy_((bias - (weight / scale) @ mean).float())
    return head


def fit_eraser(features: torch.Tensor, codes: np.ndarray, n_values: int) -> tuple[torch.Tensor, torch.Tensor]:
    """LEACE of the attribute (one-hot of ``codes``; images without a value left out of the fit) as an affine
    map ``x -> x @ weight.T + bias`` (``weight``: d x d)."""
    from concept_erasure import LeaceEraser

    known = torch.from_numpy(np.asarray(codes) >= 0)
    if int(known.sum()) < 2:
        raise ValueError("LEACE needs training images with an attribute value, got fewer than 2")
    x = features.double()
    z = F.one_hot(torch.as_tensor(np.asarray(codes))[known], n_values).double()
    eraser = LeaceEraser.fit(x[known], z)
    d = x.shape[1]
    with torch.no_grad():
        bias = eraser(torch.zeros(1, d, dtype=torch.float64))[0]
        weight = (eraser(torch.eye(d, dtype=torch.float64)) - bias).T
    return weight.float(), bias.float()
