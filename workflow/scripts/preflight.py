"""Pre-flight check before a long run: list every file the configured run will need from the network, a
mirror or a data root, check presence and checksums, and report what is missing (biastransfer.preflight).

Give the same config files as to Snakemake (later ones merged into earlier ones, as ``--configfile`` does)
and run it from the run's working directory. The config is checked first as the workflow checks it
(biastransfer.workflow.config_check.validate_config, the checker of `python -m biastransfer.workflow.config`); a config the workflow refuses, or a
bad argument, ends with status 2 and its message, before anything is written. Exits with status 1 if a
file is missing or fails its checksum.
Standalone: python workflow/scripts/preflight.py --configfile config/paper.yaml my-cluster.yaml --table need.csv

With --estimate it checks no files and prints what the run will cost instead (biastransfer.estimate):
images and bytes to download, disk, CPU-hours of decoding, GPU-hours of finetuning and embedding per
model, and the wall time for --gpus GPUs and --cores cores, each at least 1 (--table writes the estimate
as CSV).
python workflow/scripts/preflight.py --configfile config/paper.yaml --estimate --gpus 4 --cores 64
"""

import sys

from biastransfer.atomic import atomic_path
from biastransfer.estimate import estimate as cost_estimate
from biastransfer.estimate import format_estimate, predict_share
from biastransfer.preflight import MISMATCH, MISSING, preflight, summary
from biastransfer.scripting import run
from biastransfer.workflow.config import merge_configs
from biastransfer.workflow.config_check import validate_config


def main(configfile: list, table: str | None = None, estimate: bool = False, gpus: int = 1, cores: int = 16) -> None:
    try:
        if estimate and (gpus < 1 or cores < 1):
            raise ValueError(f"--gpus and --cores must be at least 1, got {gpus} and {cores}")
        config = validate_config(merge_configs(configfile))  # the workflow's checks (rules/common.smk)
        if estimate:
            result = cost_estimate(config)
            text = format_estimate(result, gpus, cores, predict_share(config))
        else:
            result = preflight(config)
            text = summary(result)
        if table:
            with atomic_path(table) as tmp:
                result.to_csv(tmp, index=False)
    except (ValueError, OSError) as err:  # a config, an argument or a file that the message names
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    print(text)
    if not estimate and result["status"].isin([MISSING, MISMATCH]).any():
        sys.exit(1)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
