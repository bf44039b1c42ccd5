"""Bias amplification and leakage of every network's predictions on its finetuning dataset's test split.

Reads each dataset's test split (the ground-truth labels), its attribute file (the protected attribute of
each image; images without one are counted and left out) and the prediction files of every finetuned and
scratch network trained on it (matched to the dataset by their metadata). A prediction file of another
split (its recorded split digest is not the test split's), an image without a row in the attribute file or
a measured class the network lacks is an error naming the file. The measured tasks are the split's classes
less the attribute file's ``attribute_classes`` (the person labels); a class with no image among them is
left out of the amplification means, with a warning here and its reason in the terms' ``excluded``. Each network's embedding of the same
images (written by predict beside its predictions, in the same order) gives its embedding leakage; an
embedding file of another network or split, or with other images or another order than its predictions,
is an error naming it, raised before any attacker runs. The pretrained network's embedding of each test split
(rule predict's ``pretrained_embeddings``) gives its embedding leakage, the finetuned networks' baseline.

Standalone: python workflow/scripts/amplification.py --splits results/splits/D/test.parquet
--attributes results/splits/D/test_attributes.parquet --predictions results/predictions/M/ft-D-seed0.parquet
results/predictions/M/ft-D-seed1.parquet --embeddings results/predictions/M/ft-D-seed0.embedding.parquet
results/predictions/M/ft-D-seed1.embedding.parquet --pretrained_embeddings
results/predictions/M/pretrained-D.embedding.parquet --summary amplification.csv --terms amplification_terms.csv
--settings '{"threshold": 0.5, "bootstrap": 1000, "ci_level": 0.95, "folds": 5, "seed": 0,
"embedding_components": 256}' (analysis.predictions, config/README.md)
"""

import logging

import pandas as pd

from biastransfer.atomic import write_csv
from biastransfer.evaluation import (
    check_embeddings,
    check_pretrained_embeddings,
    embedding_rows,
    read_evaluations,
    scores_by_network,
)
from biastransfer.scripting import run
from biastransfer.stats.amplification import SUMMARY_COLUMNS, TERM_COLUMNS
from biastransfer.stats.prediction_bias import Settings, embedding_leakage, prediction_bias
from biastransfer.workflow.rules.predictions import AmplificationSettings

log = logging.getLogger(__name__)


def main(
    splits: list,
    attributes: list,
    predictions: list,
    embeddings: list,
    pretrained_embeddings: list,
    summary: str,
    terms: str,
    settings: AmplificationSettings,
) -> None:
    options = Settings(**settings.as_dict())
    datasets = read_evaluations(splits, attributes)
    scores = scores_by_network(datasets, predictions)
    checked = check_embeddings(datasets, predictions, embeddings)
    baselines = check_pretrained_embeddings(datasets, pretrained_embeddings)
    embedded = {name: {} for name in datasets}
    for dataset, key, seed, path in checked:
        ev, ids, _ = datasets[dataset]
        embedded[dataset].setdefault(key, {})[seed] = _attacked(ev, embedding_rows(path, ids), options, path)
    pretrained = {name: {} for name in datasets}
    for dataset, model, path in baselines:
        ev, ids, _ = datasets[dataset]
        pretrained[dataset][model] = _attacked(ev, embedding_rows(path, ids), options, path)
    tables = []
    for name, (ev, _, _) in datasets.items():
        try:
            tables.append(prediction_bias(ev, scores[name], options, embedded[name], pretrained[name]))
        except ValueError as err:  # e.g. an attribute with fewer images than the attacker's folds
            raise ValueError(f"test split of {ev.dataset} ({ev.per_attribute}): {err}") from err
    term_table = pd.concat([t[1] for t in tables], ignore_index=True)[list(TERM_COLUMNS)]
    left_out = term_table[term_table["excluded"] != ""].drop_duplicates(["dataset", "task"])
    for row in left_out.itertuples():
        log.warning(
            "test split of %s: class %r is left out of the bias amplification means: %s",
            row.dataset,
            row.task,
            row.excluded,
        )
    write_csv(summary, pd.concat([t[0] for t in tables], ignore_index=True)[list(SUMMARY_COLUMNS)])
    write_csv(terms, term_table)
    log.info("bias amplification and leakage of %d prediction and embedding files -> %s", len(predictions), summary)


def _attacked(ev, features, options: Settings, path: str):
    """The embedding leakage of one file; its errors (e.g. an attribute with fewer images than the attacker's
    folds) name the file and the split."""
    try:
        return embedding_leakage(ev, features, options)
    except ValueError as err:
        raise ValueError(f"{path} (test split of {ev.dataset}: {ev.per_attribute}): {err}") from err


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
