"""Bias amplification and leakage of every network's predictions on its finetuning dataset's test split.

Reads each dataset's test split (the ground-truth labels), its attribute file (the protected attribute of
each image; images without one are counted and left out) and the prediction files of every finetuned and
scratch network trained on it (matched to the dataset by their metadata). A prediction file of another
split (its recorded split digest is not the test split's), an image without a row in the attribute file or
a measured class the network lacks is an error naming the file. The measured tasks are the split's classes
less the attribute file's ``attribute_classes`` (the person labels).

Standalone: python workflow/scripts/amplification.py --splits results/splits/D/test.parquet
--attributes results/splits/D/test_attributes.parquet --predictions results/predictions/M/ft-D-seed0.parquet
results/predictions/M/ft-D-seed1.parquet --summary amplification.csv --terms amplification_terms.csv
[--settings '{"threshold": 0.5, "bootstrap": 1000, "ci_level": 0.95, "folds": 5, "seed": 0}']
"""

import logging

import numpy as np
import pandas as pd

from biastransfer.atomic import write_csv
from biastransfer.data.attributes import read_attributes
from biastransfer.data.splits import read_split
from biastransfer.hashing import file_digest
from biastransfer.predictions import read_predictions
from biastransfer.scripting import run
from biastransfer.stages import parse_stage, stage_kind
from biastransfer.stats.prediction_bias import COLUMNS, TERM_COLUMNS, Evaluation, Settings, prediction_bias

log = logging.getLogger(__name__)


def evaluation(split_path: str, attributes_path: str) -> tuple[Evaluation, np.ndarray, str]:
    """``(evaluation, image ids, split digest)`` of one dataset's test split and attribute file."""
    split, attrs = read_split(split_path), read_attributes(attributes_path)
    digest = file_digest(split_path)
    if attrs.split_sha256 != digest:
        raise ValueError(f"{attributes_path}: describes another version of the split than {split_path} (sha256 "
                         f"{attrs.split_sha256[:12]} recorded, {digest[:12]} now)")  # fmt: skip
    ids = split.frame["image_id"].astype(str).to_numpy()
    values = attrs.of(ids, where=split_path)
    keep = np.asarray([v is not None for v in values])
    tasks = tuple(c for c in split.classes if c not in attrs.attribute_classes)
    labels = split.frame["labels"].to_numpy()[keep]
    truth = np.asarray([[t in set(row) for t in tasks] for row in labels], dtype=np.int8)
    onehot = np.asarray([[v == a for a in attrs.attributes] for v in values[keep]], dtype=np.int8)
    ev = Evaluation(split.dataset, attrs.attributes, tasks, onehot, truth, int((~keep).sum()))
    return ev, ids[keep], digest


def network_scores(path: str, ev: Evaluation, ids: np.ndarray, digest: str) -> np.ndarray:
    """The scores of ``ev.tasks`` for the images ``ids`` (in that order) from one prediction file."""
    table = read_predictions(path)
    meta = table.metadata
    if meta.get("split_sha256") != digest or meta.get("split") != "test":
        raise ValueError(
            f"{path}: predictions of split {meta.get('dataset')}/{meta.get('split')} (sha256 "
            f"{str(meta.get('split_sha256'))[:12]}), not of the test split of {ev.dataset} ({digest[:12]})"
        )
    rows = {i: r for r, i in enumerate(table.image_ids)}
    missing = [i for i in ids if i not in rows]
    if missing:
        raise ValueError(f"{path}: no prediction for image {missing[0]!r} of {ev.dataset}/test")
    return table.columns(ev.tasks, where=path)[[rows[i] for i in ids]]


def main(
    splits: list, attributes: list, predictions: list, summary: str, terms: str, settings: dict | None = None
) -> None:
    splits = [splits] if isinstance(splits, str) else list(splits)
    attributes = [attributes] if isinstance(attributes, str) else list(attributes)
    predictions = [predictions] if isinstance(predictions, str) else list(predictions)
    if len(splits) != len(attributes):
        raise ValueError(f"{len(splits)} test splits but {len(attributes)} attribute files")
    options = Settings(**(settings or {}))
    datasets = {}
    for split_path, attributes_path in zip(splits, attributes):
        ev, ids, digest = evaluation(split_path, attributes_path)
        datasets[ev.dataset] = (ev, ids, digest, {})
        log.info("%s: %d images (%s), %d without an attribute left out; tasks %s", ev.dataset, len(ids),
                 ev.per_attribute, ev.n_excluded, ", ".join(ev.tasks))  # fmt: skip
    for path in predictions:
        meta = read_predictions(path).metadata
        stage = str(meta.get("stage", ""))
        dataset, seed = parse_stage(stage)
        if dataset not in datasets:
            raise ValueError(f"{path}: stage {stage!r} is of no dataset whose test split was given "
                             f"({', '.join(datasets)})")  # fmt: skip
        ev, ids, digest, networks = datasets[dataset]
        networks.setdefault((stage_kind(stage), str(meta.get("model", ""))), {})[seed] = network_scores(
            path, ev, ids, digest
        )
    tables = []
    for ev, _, _, networks in datasets.values():
        try:
            tables.append(prediction_bias(ev, networks, options))
        except ValueError as err:  # e.g. an attribute with fewer images than the attacker's folds
            raise ValueError(f"test split of {ev.dataset} ({ev.per_attribute}): {err}") from err
    write_csv(summary, pd.concat([t[0] for t in tables], ignore_index=True)[list(COLUMNS)])
    write_csv(terms, pd.concat([t[1] for t in tables], ignore_index=True)[list(TERM_COLUMNS)])
    log.info("bias amplification and leakage of %d prediction files -> %s", len(predictions), summary)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
