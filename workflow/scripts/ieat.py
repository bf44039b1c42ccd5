"""Image Embedding Association Tests on one embeddings file.

Standalone: python workflow/scripts/ieat.py --embeddings E.parquet --table I.csv
--settings '{"tests": [{"name": "t", "X": "man", "Y": "woman", "A": "car", "B": "surfboard"}], "options":
{"permutations": 100000, "alternative": "greater", "method": "auto", "seed": 0, "alpha": 0.05, "bootstrap": 2000,
"ci_level": 0.95}}' [--analysis_set NAME --model NAME --stage pretrained] (options: analysis.ieat, config/README.md)
"""

import logging

from biastransfer.atomic import write_csv
from biastransfer.embeddings import read_embeddings
from biastransfer.scripting import run
from biastransfer.stats.results import ieat_table, with_provenance
from biastransfer.workflow.rules.analysis import IEATSettings

log = logging.getLogger(__name__)


def main(
    embeddings: str,
    table: str,
    settings: IEATSettings,
    analysis_set: str = "",
    model: str = "",
    stage: str = "pretrained",
) -> None:
    results = ieat_table(read_embeddings(embeddings), settings.tests, **settings.options.as_dict())
    results = with_provenance(results, analysis_set=analysis_set, model=model, stage=stage)
    write_csv(table, results)
    for row in results.itertuples():
        if row.not_estimable:
            log.warning("%s: %s (d is NaN)", row.test, row.not_estimable)
        log.info(
            "%s: d = %.3f [%.3f, %.3f], p = %.4g (%s, %s), two-sided p = %.4g",
            *(row.test, row.effect_size, row.ci_low, row.ci_high, row.pvalue, row.method, row.alternative),
            row.pvalue_two_sided,
        )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
