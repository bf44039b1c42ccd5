"""Pre-flight check before a long run: list every file the configured run will need from the network, a
mirror or a data root, check presence and checksums, and report what is missing (biastransfer.preflight).

Give the same config files as to Snakemake (later ones merged into earlier ones, as ``--configfile`` does)
and run it from the run's working directory. Exits with status 1 if a file is missing or fails its checksum.
Standalone: python workflow/scripts/preflight.py --configfile config/paper.yaml my-cluster.yaml --table need.csv

With --estimate it checks nothing and prints what the run will cost instead (biastransfer.estimate):
images and bytes to download, disk, CPU-hours of decoding, GPU-hours of finetuning and embedding per
model, and the wall time for --gpus GPUs and --cores cores (--table writes the estimate as CSV).
python workflow/scripts/preflight.py --configfile config/paper.yaml --estimate --gpus 4 --cores 64
"""

import logging
import sys

from biastransfer.atomic import atomic_path
from biastransfer.config import read_configs
from biastransfer.estimate import estimate as cost_estimate
from biastransfer.estimate import format_estimate, predict_share
from biastransfer.preflight import MISMATCH, MISSING, preflight, summary
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(configfile: list, table: str | None = None, estimate: bool = False, gpus: int = 1, cores: int = 16) -> None:
    config = read_configs(configfile)
    if estimate:
        costs = cost_estimate(config)
        if table:
            with atomic_path(table) as tmp:
                costs.to_csv(tmp, index=False)
        print(format_estimate(costs, gpus, cores, predict_share(config)))
        return
    result = preflight(config)
    if table:
        with atomic_path(table) as tmp:
            result.to_csv(tmp, index=False)
    print(summary(result))
    if result["status"].isin([MISSING, MISMATCH]).any():
        sys.exit(1)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
