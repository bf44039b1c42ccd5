"""Similarity, iEAT and BTS at every embedded epoch of every seed of one model finetuned on one dataset,
with each run's training curve, as one tidy table (docs/formats.md).

Standalone: python workflow/scripts/trajectory.py --pretrained results/embeddings/A/M/pretrained.parquet
--trajectory results/trajectory/A/M/ft-D-seed0 results/trajectory/A/M/ft-D-seed1
--metrics results/finetune/D/M/seed0/metrics.json results/finetune/D/M/seed1/metrics.json
--settings '{"epochs": [1, 2], "tests": [{"name": "t", "X": "a", "Y": "b", "A": "c", "B": "d"}], "lists": {},
"similarity": {"method": "exact", "iterations": 50, "seed": 0}, "ieat": {"permutations": 1000, "alternative":
"greater", "method": "auto", "seed": 0, "bootstrap": 200, "ci_level": 0.95}, "bts": {"pvalue": "permutation",
"bootstrap": 200, "ci_level": 0.95, "seed": 0}}' --table T.csv [--analysis_set A --model M --dataset D]
(the settings: TrajectorySettings, src/biastransfer/workflow/rules/analysis.py; a job's are in its log)
"""

import json
import logging
from pathlib import Path

import pandas as pd

from biastransfer.atomic import write_csv
from biastransfer.embeddings import epoch_files, read_embeddings, read_metadata
from biastransfer.scripting import run
from biastransfer.stages import parse_stage
from biastransfer.stats.trajectory import curve_rows, trajectory_table
from biastransfer.workflow.rules.analysis import TrajectorySettings

log = logging.getLogger(__name__)


def read_trajectory(folder: str, expected: list[int]) -> tuple[int, dict]:
    """(seed, {epoch: embeddings}) of one run's trajectory folder; ValueError naming the folder when its
    epochs are not ``expected`` or a file's provenance names another epoch or stage."""
    files = epoch_files(folder)
    if sorted(files) != sorted(expected):
        raise ValueError(f"{folder}: epochs {sorted(files)} found, {sorted(expected)} expected (finetune.trajectory)")
    seed = parse_stage(Path(folder).name)[1]
    tables = {}
    for epoch, path in files.items():
        meta = read_metadata(path)
        if meta.get("epoch") != epoch or meta.get("stage") != Path(folder).name:
            raise ValueError(f"{path}: its provenance says epoch {meta.get('epoch')} of {meta.get('stage')!r}")
        tables[epoch] = read_embeddings(path)
    return seed, tables


def main(
    pretrained: str,
    trajectory: list,
    metrics: list,
    settings: TrajectorySettings,
    table: str,
    analysis_set: str = "",
    model: str = "",
    dataset: str = "",
) -> None:
    runs = dict(read_trajectory(folder, settings.epochs) for folder in trajectory)
    by_epoch = {}
    for seed, tables in runs.items():
        for epoch, emb in tables.items():
            by_epoch.setdefault(epoch, {})[seed] = emb
    measures = {k: v for k, v in settings.as_dict().items() if k != "epochs"}
    frame = trajectory_table(read_embeddings(pretrained), by_epoch, **measures)
    best = {}
    curves = []
    for path in metrics:
        record = json.loads(Path(path).read_text())
        best[record["seed"]] = record["epoch_best"]
        curves.append(curve_rows(record["history"], record["seed"], record["metric_name"]))
    frame = pd.concat([frame, *curves], ignore_index=True)
    frame["final"] = [s != "pooled" and e == best.get(int(s)) for s, e in zip(frame["seed"], frame["epoch"])]
    front = {"analysis_set": analysis_set, "model": model, "finetune_dataset": dataset}
    frame = pd.concat([pd.DataFrame(front, index=frame.index), frame], axis=1)
    write_csv(table, frame)
    log.info("%s: %d rows, seeds %s, epochs %s (best: %s)", table, len(frame), sorted(runs), sorted(by_epoch), best)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
