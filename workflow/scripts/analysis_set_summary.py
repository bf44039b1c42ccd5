"""Class sizes of every analysis set (the paper's Tables 5 and 6).

Standalone: python workflow/scripts/analysis_set_summary.py --manifests M1.parquet M2.parquet
--analysis_sets '{"a1": "dataset1", "a2": "dataset2"}' --table sizes.csv
"""

import pandas as pd

from biastransfer.atomic import write_csv
from biastransfer.data.manifest import read_manifest
from biastransfer.scripting import run


def main(manifests: list, analysis_sets: dict, table: str) -> None:
    if len(manifests) != len(analysis_sets):
        raise ValueError(f"{len(manifests)} manifests for {len(analysis_sets)} analysis sets")
    rows = []
    for (name, dataset), path in zip(analysis_sets.items(), manifests):
        sizes = read_manifest(path).groupby("class", sort=False).size()
        rows += [{"analysis_set": name, "dataset": dataset, "class": c, "n": int(n)} for c, n in sizes.items()]
    write_csv(table, pd.DataFrame(rows))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
