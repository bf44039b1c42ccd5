"""Class sizes of every analysis set (the paper's Tables 5 and 6).

Standalone: python workflow/scripts/analysis_set_summary.py --manifests M1.parquet M2.parquet
--settings '{"analysis_sets": [{"name": "a1", "dataset": "d1"}, {"name": "a2", "dataset": "d2"}]}' --table sizes.csv
"""

import pandas as pd

from biastransfer.atomic import write_csv
from biastransfer.data.manifest import read_manifest
from biastransfer.scripting import run
from biastransfer.workflow.rules.data import AnalysisSetSummarySettings


def main(manifests: list, settings: AnalysisSetSummarySettings, table: str) -> None:
    sets = settings.analysis_sets
    if len(manifests) != len(sets):
        raise ValueError(f"{len(manifests)} manifests for {len(sets)} analysis sets")
    rows = []
    for (name, dataset), path in zip(((s["name"], s["dataset"]) for s in sets), manifests):
        sizes = read_manifest(path).groupby("class", sort=False).size()
        rows += [{"analysis_set": name, "dataset": dataset, "class": c, "n": int(n)} for c, n in sizes.items()]
    write_csv(table, pd.DataFrame(rows))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
