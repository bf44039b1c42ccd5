"""Every intervention against its untouched finetuning in one table (results/summary/intervention.csv,
docs/formats.md): what it did to the training split (from its co-occurrence table: images kept, and whether
it changed anything at all), the embedding-level comparisons of every analysis set and model (the tables of
the pair it makes with its source, rules/comparisons.smk), and the
prediction-level measures of the same networks side by side (from results/summary/amplification.csv, when
there is one).

Standalone: python workflow/scripts/intervention_summary.py
--changes results/compare/I_vs_S/synthetic/democnn.csv --settings '{"sources": [["I", "S"]]}'
--cooccurrence results/interventions/I/cooccurrence.csv
[--amplification results/summary/amplification.csv] --summary results/summary/intervention.csv
"""

from pathlib import Path

import pandas as pd

from biastransfer.atomic import write_csv
from biastransfer.scripting import run
from biastransfer.stats.intervention import data_rows, embedding_rows, prediction_rows
from biastransfer.workflow.rules.analysis import InterventionSummarySettings


def main(
    changes: list,
    settings: InterventionSummarySettings,
    summary: str,
    cooccurrence: list | str,
    amplification: list | str | None = None,
) -> None:
    sources = dict(settings.sources)
    pairs = {f"{i}_vs_{s}": i for i, s in sources.items()}
    changes = [changes] if isinstance(changes, str) else list(changes)
    frames = []
    for path in changes:  # results/compare/{intervention}_vs_{source}/{analysis_set}/{model}.csv
        pair, analysis_set, model = Path(path).parts[-3], Path(path).parts[-2], Path(path).stem
        if pair not in pairs:
            raise ValueError(f"{path}: pair {pair!r} is not one of {', '.join(pairs)}")
        table = pd.read_csv(path, keep_default_na=False, na_values=[""], dtype={"seed": str, "role": str})
        frames.append(embedding_rows(table, pairs[pair], sources[pairs[pair]], analysis_set, model))
    amplification = [amplification] if isinstance(amplification, str) else list(amplification or [])
    if amplification:
        amp = pd.read_csv(amplification[0], keep_default_na=False, na_values=[""], dtype={"seed": str})
        frames += [prediction_rows(amp, i, s) for i, s in sources.items()]
    for path in [cooccurrence] if isinstance(cooccurrence, str) else cooccurrence:
        intervention = Path(path).parent.name  # results/interventions/{intervention}/cooccurrence.csv
        if intervention not in sources:
            raise ValueError(f"{path}: intervention {intervention!r} is not one of {', '.join(sources)}")
        frames.append(data_rows(pd.read_csv(path), intervention, sources[intervention]))
    write_csv(summary, pd.concat(frames, ignore_index=True))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
