"""The link across levels: each linked iEAT's embedding-level d beside the prediction-level bias of the same
objects, per network, and the rank correlation between the two over the networks (biastransfer.stats.link).

Reads every stage's iEATs (--ieat, and the scratch networks' --ieat_scratch), their change (--change), the
amplification terms (--terms) and, for the contrast's interval, the test splits, attribute files and prediction
files (checked as rule amplification checks them). Writes --table (one row per linked iEAT and network, and
per network family pooled over seeds) and --correlation (docs/formats.md).

Standalone: python workflow/scripts/link.py --ieat results/summary/ieat.csv --change results/summary/ieat_change.csv
--terms results/summary/amplification_terms.csv --splits results/splits/D/test.parquet
--attributes results/splits/D/test_attributes.parquet --predictions results/predictions/M/ft-D-seed0.parquet
--settings '{"tests": {"A": [{"name": "t", "X": "person_a", "Y": "person_b", "A": "car", "B": "surfboard"}]},
"threshold": 0.5, "bootstrap": 1000, "ci_level": 0.95, "seed": 0}' --table link.csv --correlation link_correlation.csv
[--ieat_scratch results/summary/ieat_scratch.csv]
"""

import logging

import pandas as pd

from biastransfer.atomic import write_csv
from biastransfer.evaluation import evaluations_and_scores
from biastransfer.report.formatting import read_summary
from biastransfer.scripting import run
from biastransfer.stats.amplification import TERM_COLUMNS, predict_at_threshold
from biastransfer.stats.link import association_contrast, correlation_table, link_table, linked_test
from biastransfer.workflow.rules.predictions import LinkSettings

log = logging.getLogger(__name__)

IEAT_NEEDS = ("analysis_set", "model", "stage", "test", "effect_size", "ci_low", "ci_high")
CHANGE_NEEDS = ("analysis_set", "model", "finetune_dataset", "seed", "test", "delta_d", "ci_low", "ci_high")
TERMS_NEEDS = tuple(c for c in TERM_COLUMNS if c not in ("n_attribute", "selected", "level", "excluded"))


def main(
    ieat: str,
    change: str,
    terms: str,
    splits: list,
    attributes: list,
    predictions: list,
    settings: LinkSettings,
    table: str,
    correlation: str,
    ieat_scratch: list | str | None = None,
) -> None:
    tests = settings.tests
    scratch = [ieat_scratch] if isinstance(ieat_scratch, str) else list(ieat_scratch or [])
    stages = pd.concat([read_summary(p, IEAT_NEEDS) for p in [ieat, *scratch]], ignore_index=True)
    changes, term_table = read_summary(change, CHANGE_NEEDS), read_summary(terms, TERMS_NEEDS)
    datasets = evaluations_and_scores(splits, attributes, predictions)
    links = {
        link
        for listed in tests.values()
        for t in listed
        for ev, _ in datasets.values()
        if (link := linked_test(t, ev.attribute_names, ev.tasks))
    }
    contrasts = {}
    for name, (ev, networks) in datasets.items():
        for (network, model), scores in networks.items():
            seeds = sorted(scores)
            predicted = {s: predict_at_threshold(scores[s], settings.threshold) for s in seeds}
            groups = [(str(s), [s]) for s in seeds] + ([("pooled", seeds)] if len(seeds) > 1 else [])
            for attribute, first, second in links:
                if attribute not in ev.attribute_names or {first, second} - set(ev.tasks):
                    continue
                for label, members in groups:
                    contrasts[(name, network, model, label, attribute, first, second)] = association_contrast(
                        ev.attributes,
                        ev.truth,
                        [predicted[s] for s in members],
                        attribute=attribute,
                        first=first,
                        second=second,
                        attribute_names=ev.attribute_names,
                        task_names=ev.tasks,
                        replicates=settings.bootstrap,
                        level=settings.ci_level,
                        seed=settings.seed,
                    )
    evaluations = {name: (ev.attribute_names, ev.tasks) for name, (ev, _) in datasets.items()}
    rows = link_table(tests, evaluations, contrasts, stages, changes, term_table, f"{settings.threshold:g}")
    write_csv(table, rows)
    write_csv(correlation, correlation_table(rows, settings.ci_level))
    log.info("%d linked iEAT x network rows, %d iEATs linked -> %s", len(rows), len(links), table)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
