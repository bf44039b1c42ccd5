"""Final validation metrics of every finetuning run (the paper's Tables 7 and 8), with each run's method, model
selection and worst-group validation mAP (biastransfer.train.methods; a run recorded before them: plain, map,
none).

Standalone: python workflow/scripts/finetune_summary.py --metrics run1/metrics.json run2/metrics.json --table T.csv
"""

import json

import pandas as pd

from biastransfer.atomic import write_csv
from biastransfer.scripting import run


def main(metrics: list, table: str) -> None:
    rows = []
    for path in metrics:
        with open(path) as fh:
            m = json.load(fh)
        hyper = m["hyper"]
        rows.append(
            {
                "dataset": m["dataset"],
                "model": m["model"],
                "seed": m["seed"],
                "epoch_best": m["epoch_best"],
                "metric_name": m["metric_name"],
                "metric_value": m["metric_value"],
                "metric_worst_group": m.get("metric_worst_group"),
                "method": m.get("method", "plain"),
                "selection": m.get("selection", "map"),
                "epochs": hyper["epochs"],
                "lr": hyper["lr"],
                "batch_size": hyper["batch_size"],
                "optimizer": hyper["optimizer"],
                "scheduler": hyper["scheduler"],
            }
        )
    write_csv(table, pd.DataFrame(rows))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
