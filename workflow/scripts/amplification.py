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

import pandas as pd

from biastransfer.atomic import write_csv
from biastransfer.predictions import network_scores, read_evaluation, read_predictions
from biastransfer.scripting import run
from biastransfer.stages import parse_stage, stage_kind
from biastransfer.stats.prediction_bias import COLUMNS, TERM_COLUMNS, Settings, prediction_bias

log = logging.getLogger(__name__)


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
        ev, ids, digest = read_evaluation(split_path, attributes_path)
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
