"""Pre-flight check before a long run: list every file the configured run will need from the network, a
mirror or a data root, check presence and checksums, and report what is missing (biastransfer.preflight).

Give the same config files as to Snakemake (later ones merged into earlier ones, as ``--configfile`` does)
and run it from the run's working directory. Exits with status 1 if a file is missing or fails its checksum.
Standalone: python workflow/scripts/preflight.py --configfile config/paper.yaml my-cluster.yaml --table need.csv
"""

import logging
import sys

from snakemake.utils import update_config

from biastransfer.atomic import atomic_path
from biastransfer.config import read_config_file
from biastransfer.preflight import MISMATCH, MISSING, preflight, summary
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(configfile: list, table: str | None = None) -> None:
    config: dict = {}
    for path in configfile:
        update_config(config, read_config_file(path))
    result = preflight(config)
    if table:
        with atomic_path(table) as tmp:
            result.to_csv(tmp, index=False)
    print(summary(result))
    if result["status"].isin([MISSING, MISMATCH]).any():
        sys.exit(1)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
