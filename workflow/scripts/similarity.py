"""Intra-class similarity of every class and inter-class similarity of every pair, for each network of one model
(``stages[i]``, whose embeddings are ``embeddings[i]``, written to ``tables[i]``).

Standalone: python workflow/scripts/similarity.py --embeddings E0.parquet E1.parquet --tables S0.csv S1.csv
--stages pretrained ft-D-seed0 --settings '{"method": "exact", "iterations": 50, "seed": 0}'
[--analysis_set NAME --model NAME]
"""

import logging

from biastransfer.atomic import write_csv
from biastransfer.embeddings import read_embeddings
from biastransfer.scripting import run, stage_files
from biastransfer.stats.results import similarity_table, with_provenance
from biastransfer.workflow.rules.analysis import SimilaritySettings

log = logging.getLogger(__name__)


def main(
    embeddings: list,
    tables: list,
    stages: list,
    settings: SimilaritySettings,
    analysis_set: str = "",
    model: str = "",
) -> None:
    for stage, source, table in stage_files(stages, embeddings, tables):
        emb = read_embeddings(source)
        sims = similarity_table(emb, method=settings.method, iterations=settings.iterations, seed=settings.seed)
        write_csv(table, with_provenance(sims, analysis_set=analysis_set, model=model, stage=stage))
        log.info("%s: %d classes, %d similarities (%s)", source, len(emb.class_names), len(sims), settings.method)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
