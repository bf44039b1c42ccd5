"""Image Embedding Association Tests on each network of one model (``stages[i]``, whose embeddings are
``embeddings[i]``, written to ``tables[i]``).

Standalone: python workflow/scripts/ieat.py --embeddings E0.parquet E1.parquet --tables I0.csv I1.csv
--stages pretrained ft-D-seed0 --settings '{"tests": [{"name": "t", "X": "man", "Y": "woman", "A": "car", "B":
"surfboard"}], "options": {"permutations": 100000, "alternative": "greater", "method": "auto", "seed": 0, "alpha":
0.05, "bootstrap": 2000, "ci_level": 0.95}}' [--analysis_set NAME --model NAME] (options: analysis.ieat,
config/README.md)
"""

import logging

from biastransfer.atomic import write_csv
from biastransfer.embeddings import read_embeddings
from biastransfer.scripting import run, stage_files
from biastransfer.stats.results import ieat_table, with_provenance
from biastransfer.workflow.rules.analysis import IEATSettings

log = logging.getLogger(__name__)


def main(
    embeddings: list,
    tables: list,
    stages: list,
    settings: IEATSettings,
    analysis_set: str = "",
    model: str = "",
) -> None:
    for stage, source, table in stage_files(stages, embeddings, tables):
        results = ieat_table(read_embeddings(source), settings.tests, **settings.options.as_dict())
        write_csv(table, with_provenance(results, analysis_set=analysis_set, model=model, stage=stage))
        for row in results.itertuples():
            if row.not_estimable:
                log.warning("%s %s: %s (d is NaN)", stage, row.test, row.not_estimable)
            log.info(
                "%s %s: d = %.3f [%.3f, %.3f], p = %.4g (%s, %s), two-sided p = %.4g",
                *(stage, row.test, row.effect_size, row.ci_low, row.ci_high, row.pvalue, row.method, row.alternative),
                row.pvalue_two_sided,
            )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
