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
from biastransfer.evaluation import evaluations_and_scores
from biastransfer.scripting import run
from biastransfer.stats.prediction_bias import COLUMNS, TERM_COLUMNS, Settings, prediction_bias

log = logging.getLogger(__name__)


def main(
    splits: list, attributes: list, predictions: list, summary: str, terms: str, settings: dict | None = None
) -> None:
    options = Settings(**(settings or {}))
    datasets = evaluations_and_scores(splits, attributes, predictions)
    tables = []
    for ev, networks in datasets.values():
        try:
            tables.append(prediction_bias(ev, networks, options))
        except ValueError as err:  # e.g. an attribute with fewer images than the attacker's folds
            raise ValueError(f"test split of {ev.dataset} ({ev.per_attribute}): {err}") from err
    write_csv(summary, pd.concat([t[0] for t in tables], ignore_index=True)[list(COLUMNS)])
    write_csv(terms, pd.concat([t[1] for t in tables], ignore_index=True)[list(TERM_COLUMNS)])
    files = sum(len(seeds) for _, networks in datasets.values() for seeds in networks.values())
    log.info("bias amplification and leakage of %d prediction files -> %s", files, summary)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
