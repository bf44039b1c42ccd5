"""Collect the provenance of every embeddings file (model, stage, weights digest, layer, preprocessing,
library versions, the workflow version and git commit that wrote it; for a finetuned stage also the
digests of the weights it started from and of its training and validation splits) into one table, as CSV and as an HTML page for the report (one card
per file, long digests wrapped; report.site.provenance_page). A file
that cannot be read is an error naming it, before anything is written.

Standalone: python workflow/scripts/provenance.py --embeddings a.parquet b.parquet --table P.csv --html P.html
"""

import json

import pandas as pd

from biastransfer.atomic import write_csv, write_text
from biastransfer.embeddings import read_metadata
from biastransfer.provenance import workflow_provenance
from biastransfer.report.site import provenance_page
from biastransfer.scripting import run

COLUMNS = (
    "analysis_set",
    "model",
    "stage",
    "weights_sha256",
    "init_weights_sha256",
    "train_sha256",
    "val_sha256",
    "layer",
    "pool",
    "config_hash",
    "manifest_sha256",
    "device",
    *workflow_provenance(),
)


def main(embeddings: list, table: str, html: str) -> None:
    rows = []
    for path in embeddings:
        meta = read_metadata(path)
        versions = meta.get("versions", {})
        rows.append(
            {
                "file": path,
                **{key: meta.get(key, "") for key in COLUMNS},
                "preprocessing": json.dumps(meta.get("preprocessing", {}), sort_keys=True),
                "versions": ", ".join(f"{k} {v}" for k, v in sorted(versions.items())),
                "dim": meta.get("dim", ""),
            }
        )
    frame = pd.DataFrame(rows)
    write_csv(table, frame)
    write_text(html, provenance_page(frame))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
