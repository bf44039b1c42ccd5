"""Intra-class similarity of every class and inter-class similarity of every pair, for one embeddings file.

Standalone: python workflow/scripts/similarity.py --embeddings E.parquet --table S.csv
--settings '{"method": "exact", "iterations": 50, "seed": 0}' [--analysis_set NAME --model NAME --stage pretrained]
"""

import logging

from biastransfer.atomic import write_csv
from biastransfer.embeddings import read_embeddings
from biastransfer.scripting import run
from biastransfer.stats.results import similarity_table, with_provenance
from biastransfer.workflow.rules.analysis import SimilaritySettings

log = logging.getLogger(__name__)


def main(
    embeddings: str,
    table: str,
    settings: SimilaritySettings,
    analysis_set: str = "",
    model: str = "",
    stage: str = "pretrained",
) -> None:
    emb = read_embeddings(embeddings)
    sims = similarity_table(emb, method=settings.method, iterations=settings.iterations, seed=settings.seed)
    sims = with_provenance(sims, analysis_set=analysis_set, model=model, stage=stage)
    write_csv(table, sims)
    log.info("%s: %d classes, %d similarities (%s)", embeddings, len(emb.class_names), len(sims), settings.method)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
