"""Interventions on a training split: rebalance the protected attribute beside a list of objects.

The input is generic, so that every dataset kind plugs in: the labels as the training loader holds them
(CSR: ``index`` of class ids, ``start`` of each image's run, :class:`Labels`) and one attribute code per
image (``-1``: the image shows no one). For each listed object, the images that hold it and have an
attribute are counted by attribute; the *target* is a share per attribute value:

- ``independent``: the split's overall shares (over every image with an attribute), so the object and
  the attribute are independent;
- ``reversed`` (two attribute values): the object's observed shares swapped, the skew mirrored;
- a number ``r`` in [0, 1] (two attribute values): ``r`` for the first value, ``1 - r`` for the second.

``subsample`` drops images (seeded; an image holding fewer other listed objects goes first, so that one
object's drops move the others least; each pass leaves an object whose counts are within one image of its
target and otherwise keeps the most of its images whose counts do not exceed the target's (rounded
down); passes repeat until one drops nothing, so every object ends within one image of its target). ``reweight`` keeps every image and gives each a sampling weight (iterative proportional fitting
over the objects; the weights sum to the image count). Images without an attribute or without a listed
object are never dropped and keep weight 1 before that normalisation. A target the data cannot reach
(an attribute value with a share to keep but no image of the object, or a subsample that would keep none
of them) is refused with a ValueError naming the object and the attribute.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from biastransfer.data.attributes import Attributes
from biastransfer.data.splits import Split, read_tagged, write_tagged

METHODS = ("subsample", "reweight")
TARGETS = ("independent", "reversed")
TABLE_COLUMNS = ("object", "attribute", "when", "images", "share", "target")
_PASSES = 50  # subsample passes / proportional-fitting sweeps before giving up
_FIT_TOL = 1e-9  # largest share error of a converged reweighting


@dataclass(frozen=True)
class Labels:
    """Multi-label targets in CSR form: image ``i`` holds classes ``index[start[i]:start[i + 1]]``."""

    classes: tuple[str, ...]
    index: np.ndarray
    start: np.ndarray

    @property
    def n_images(self) -> int:
        return len(self.start) - 1

    @classmethod
    def from_lists(cls, label_lists: Sequence[Sequence[str]], classes: Sequence[str]) -> Labels:
        """CSR labels of per-image label lists; ValueError naming an image (row) whose label is no class."""
        position = {c: i for i, c in enumerate(classes)}
        flat, counts = [], []
        for row, labels in enumerate(label_lists):
            for label in labels:
                if label not in position:
                    raise ValueError(f"image {row}: label {label!r} is not one of the split's classes")
                flat.append(position[label])
            counts.append(len(labels))
        start = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
        return cls(tuple(classes), np.asarray(flat, dtype=np.int32), start)


@dataclass(frozen=True)
class Rebalanced:
    """The outcome: ``keep`` (subsample: which images stay) and ``weights`` (reweight: per image, summing
    to the image count; all 1 for a subsample), and the co-occurrence ``table`` before and after
    (:data:`TABLE_COLUMNS`: images per object and attribute, its share and the targeted share)."""

    method: str
    keep: np.ndarray
    weights: np.ndarray
    table: pd.DataFrame

    @property
    def changed(self) -> bool:
        """Whether the split changed: an image dropped, or one weighted other than 1 (data already at its
        targets leaves every image in, at weight 1: the intervention's networks learn from the same data)."""
        return bool((~self.keep).any() or np.abs(self.weights - 1).max(initial=0.0) > _FIT_TOL)


def parse_target(target: str | float) -> str | float:
    """``independent``, ``reversed`` or a ratio in [0, 1]; ValueError naming the value otherwise."""
    if isinstance(target, str) and target in TARGETS:
        return target
    if isinstance(target, (int, float)) and not isinstance(target, bool) and 0.0 <= float(target) <= 1.0:
        return float(target)
    raise ValueError(f"target {target!r}: expected independent, reversed or a ratio in [0, 1]")


def attribute_codes(values: Sequence, attributes: Sequence[str]) -> np.ndarray:
    """Codes (position in ``attributes``; -1 for None / NaN) of per-image attribute values; ValueError naming
    a value that is not one of ``attributes``."""
    position = {a: i for i, a in enumerate(attributes)}
    codes = np.full(len(values), -1, dtype=np.int8)
    for i, v in enumerate(values):
        if v is None or (isinstance(v, float) and np.isnan(v)):
            continue
        if v not in position:
            raise ValueError(f"image {i}: attribute {v!r} is not one of {', '.join(attributes)}")
        codes[i] = position[v]
    return codes


def _object_rows(labels: Labels, objects: Sequence[str]) -> dict[str, np.ndarray]:
    """``{object: rows holding it}``; ValueError naming an object that is not a class of the split."""
    unknown = [o for o in objects if o not in labels.classes]
    if unknown:
        raise ValueError(f"object {unknown[0]!r} is not a class of the split (classes: {', '.join(labels.classes)})")
    row_of_entry = np.repeat(np.arange(labels.n_images, dtype=np.int64), np.diff(labels.start))
    order = np.argsort(labels.index, kind="stable")
    sorted_ids = labels.index[order]
    out = {}
    for obj in objects:
        cid = labels.classes.index(obj)
        lo, hi = np.searchsorted(sorted_ids, [cid, cid + 1])
        out[obj] = np.unique(row_of_entry[order[lo:hi]])
    return out


def _targets(rows: Mapping[str, np.ndarray], codes: np.ndarray, k: int, target: str | float) -> dict[str, np.ndarray]:
    """The targeted share per attribute value of each object."""
    if target != "independent" and k != 2:
        raise ValueError(f"target {target!r} needs two attribute values, the split has {k}")
    overall = np.bincount(codes[codes >= 0], minlength=k).astype(np.float64)
    out = {}
    for obj, r in rows.items():
        if target == "independent":
            out[obj] = overall / overall.sum()
        elif target == "reversed":
            counts = np.bincount(codes[r][codes[r] >= 0], minlength=k).astype(np.float64)
            out[obj] = (counts / counts.sum())[::-1] if counts.sum() else counts
        else:
            out[obj] = np.array([target, 1.0 - target])
    return out


def _check_reachable(rows, codes, targets, attributes) -> None:
    for obj, r in rows.items():
        counts = np.bincount(codes[r][codes[r] >= 0], minlength=len(attributes))
        if counts.sum() == 0:
            raise ValueError(
                f"object {obj!r}: no image of the split shows it with an attribute, so no target is reachable"
            )
        for a, (n, t) in enumerate(zip(counts, targets[obj])):
            if t > 0 and n == 0:
                raise ValueError(
                    f"object {obj!r}, attribute {attributes[a]!r}: the target share {t:.3f} cannot be reached, "
                    f"no image of the split shows {obj!r} with {attributes[a]!r}"
                )


def _subsample(rows, codes, targets, attributes, n, listed, seed) -> np.ndarray:
    rank = np.random.default_rng(seed).permutation(n)
    keep = np.ones(n, dtype=bool)
    for _ in range(_PASSES):
        done = True
        for obj, r in rows.items():
            r = r[keep[r] & (codes[r] >= 0)]
            counts = np.bincount(codes[r], minlength=len(attributes))
            t = targets[obj]
            if np.all(np.abs(counts - t * counts.sum()) <= 1 + 1e-9):
                continue
            live = t > 0
            total = np.min(counts[live] / t[live])  # the most images of the object the target can keep
            want = np.minimum(counts, np.floor(t * total + 1e-9).astype(np.int64))
            bad = live & (want == 0)
            if bad.any():
                a = int(np.flatnonzero(bad)[0])
                raise ValueError(
                    f"object {obj!r}, attribute {attributes[a]!r}: the target share {t[a]:.3f} cannot be reached, "
                    f"a subsample would keep no image of {obj!r} with {attributes[a]!r} ({counts.tolist()} images "
                    f"by attribute)"
                )
            for a in np.flatnonzero(counts > want):
                done = False
                candidates = r[codes[r] == a]
                first = candidates[np.lexsort((rank[candidates], listed[candidates]))]
                keep[first[: counts[a] - want[a]]] = False
        if done:
            return keep
    raise ValueError(f"subsample: the objects' targets did not settle in {_PASSES} passes")


def _reweight(rows, codes, targets, attributes, n) -> np.ndarray:
    weights = np.ones(n, dtype=np.float64)
    for _ in range(_PASSES):
        worst, worst_obj = 0.0, None
        for obj, r in rows.items():
            r = r[codes[r] >= 0]
            sums = np.bincount(codes[r], weights=weights[r], minlength=len(attributes))
            total = sums.sum()
            if total <= 0:
                continue
            error = float(np.abs(sums / total - targets[obj]).max())
            if error > worst:
                worst, worst_obj = error, obj
            factor = np.divide(targets[obj] * total, sums, out=np.zeros_like(sums), where=sums > 0)
            weights[r] *= factor[codes[r]]
        if worst <= _FIT_TOL:
            return weights * (n / weights.sum())
    raise ValueError(
        f"object {worst_obj!r}: reweighting did not reach the targets together with the other objects' "
        f"(share off by {worst:.2g} after {_PASSES} sweeps); the objects' images overlap too much for them"
    )


def _table(rows, codes, targets, attributes, amount: np.ndarray, when: str) -> pd.DataFrame:
    out = []
    for obj, r in rows.items():
        r = r[codes[r] >= 0]
        sums = np.bincount(codes[r], weights=amount[r], minlength=len(attributes))
        total = sums.sum()
        for a, name in enumerate(attributes):
            out.append(
                {
                    "object": obj,
                    "attribute": name,
                    "when": when,
                    "images": float(sums[a]),
                    "share": float(sums[a] / total) if total else float("nan"),
                    "target": float(targets[obj][a]),
                }
            )
    return pd.DataFrame(out, columns=list(TABLE_COLUMNS))


def rebalance(
    labels: Labels,
    codes: np.ndarray,
    attributes: Sequence[str],
    objects: Sequence[str],
    *,
    target: str | float,
    method: str,
    seed: int = 0,
) -> Rebalanced:
    """Rebalance ``objects`` of a split (``labels``, per-image attribute ``codes`` into ``attributes``) to
    ``target`` by ``method`` (module docstring); the achieved shares are in the returned table."""
    if method not in METHODS:
        raise ValueError(f"method {method!r}: expected one of {', '.join(METHODS)}")
    if not objects or len(set(objects)) != len(objects):
        raise ValueError(f"objects {list(objects)}: give at least one object, each once")
    codes = np.asarray(codes, dtype=np.int8)
    if codes.shape != (labels.n_images,):
        raise ValueError(f"{codes.shape[0]} attribute codes for {labels.n_images} images")
    k = len(attributes)
    if codes.max(initial=-1) >= k or codes.min(initial=0) < -1:
        raise ValueError(f"attribute codes must lie in -1..{k - 1}")
    target = parse_target(target)
    rows = _object_rows(labels, objects)
    targets = _targets(rows, codes, k, target)
    _check_reachable(rows, codes, targets, attributes)
    n = labels.n_images
    ones = np.ones(n, dtype=np.float64)
    if method == "subsample":
        listed = np.zeros(n, dtype=np.int64)
        for r in rows.values():
            listed[r] += 1
        keep = _subsample(rows, codes, targets, attributes, n, listed, seed)
        weights, after = ones, keep.astype(np.float64)
    else:
        keep, weights = np.ones(n, dtype=bool), _reweight(rows, codes, targets, attributes, n)
        after = weights
    table = pd.concat(
        [
            _table(rows, codes, targets, attributes, ones, "before"),
            _table(rows, codes, targets, attributes, after, "after"),
        ],
        ignore_index=True,
    )
    return Rebalanced(method, keep, weights, table)


WEIGHT_COLUMNS = ("image_id", "weight")


def intervene(split: Split, attrs: Attributes, spec: Mapping, name: str) -> tuple[Split, pd.DataFrame, pd.DataFrame]:
    """The intervention ``name`` (a ``kind: intervention`` entry ``spec``) on a training ``split`` with its
    attribute file: ``(the new training split, its sample weights (image_id, weight), the co-occurrence
    table)``; a subsample's split holds the images kept, each of weight 1. The table's every row also holds
    the split's images (``split_images``), those kept (``split_kept``) and whether anything changed
    (``changed``, :attr:`Rebalanced.changed`)."""
    ids = split.frame["image_id"].astype(str).tolist()
    codes = attribute_codes(list(attrs.of(ids, where=f"training split of {split.dataset}")), attrs.attributes)
    labels = Labels.from_lists(split.frame["labels"], split.classes)
    try:
        out = rebalance(
            labels,
            codes,
            attrs.attributes,
            spec["objects"],
            target=spec["target"],
            method=spec["method"],
            seed=spec["seed"],
        )
    except ValueError as err:
        raise ValueError(f"intervention {name!r} on the training split of {split.dataset!r}: {err}") from err
    frame = split.frame.loc[out.keep, ["image_id", "path", "labels"]].reset_index(drop=True)
    weights = pd.DataFrame({"image_id": frame["image_id"].astype(str), "weight": out.weights[out.keep]})
    table = out.table.assign(
        dataset=name,
        source=split.dataset,
        method=spec["method"],
        split_images=len(ids),
        split_kept=len(frame),
        changed=out.changed,
    )
    return Split(name, split.name, split.classes, frame), weights, table


def write_weights(path: str | os.PathLike, weights: pd.DataFrame, *, dataset: str, split_sha256: str) -> None:
    """Write sample weights (image_id, weight) of a training split atomically, tagged with its digest."""
    if (weights["weight"] < 0).any() or not np.isfinite(weights["weight"]).all():
        raise ValueError(f"{path}: sample weights must be finite and non-negative")
    table = pa.table(
        {
            "image_id": pa.array(weights["image_id"].tolist(), pa.string()),
            "weight": pa.array(weights["weight"].to_numpy(np.float64), pa.float64()),
        }
    )
    write_tagged(path, table, {"dataset": dataset, "split": "train", "split_sha256": split_sha256})


def read_weights(path: str | os.PathLike, image_ids: Sequence[str], split_sha256: str) -> np.ndarray:
    """The weight of each of ``image_ids`` from a weights file of the split with digest ``split_sha256``;
    ValueError naming the file when it is of another split or misses an image."""
    frame, meta = read_tagged(path, WEIGHT_COLUMNS, what="sample weights file", holding="the split digest")
    if meta.get("split_sha256") != split_sha256:
        raise ValueError(
            f"{path}: the weights of another version of the training split (sha256 "
            f"{str(meta.get('split_sha256'))[:12]} recorded, {split_sha256[:12]} now)"
        )
    known = dict(zip(frame["image_id"], frame["weight"]))
    missing = [i for i in image_ids if i not in known]
    if missing:
        raise ValueError(f"{path}: no weight for image {missing[0]!r} ({len(missing)} image(s) without one)")
    return np.asarray([known[i] for i in image_ids], dtype=np.float64)
