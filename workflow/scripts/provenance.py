"""Collect the provenance of every embeddings file (its own sha256, model, stage, weights digest and where the
pretrained weights came from, layer, preprocessing, library versions, the workflow version and git commit that
wrote it; for a finetuned stage also the digests of the weights it started from and of its training and
validation splits) into one table, as CSV and as an HTML page for the report (one card per file, long digests
wrapped; report.site.provenance_page). A file that cannot be read is an error naming it, before anything is
written.

Standalone: python workflow/scripts/provenance.py --embeddings a.parquet b.parquet --origins O.json
    --settings '{"models": ["m"]}' --table P.csv --html P.html
(``--origins``: per model of the settings' ``models``, its weights record or, for a model pretrained by the
workflow, its pretraining metrics.json.)
"""

import json
from pathlib import Path

import pandas as pd

from biastransfer.atomic import write_csv, write_text
from biastransfer.embeddings import read_metadata
from biastransfer.hashing import file_digest
from biastransfer.provenance import workflow_provenance
from biastransfer.report.site import provenance_page
from biastransfer.scripting import run
from biastransfer.workflow.rules.report import ProvenanceSettings

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


def weights_source(path: str) -> str:
    """Where pretrained weights came from, in words: the URL (or local file) and sha256 of a weights record
    (biastransfer.models.weights), or the dataset, training split and seed in the pretraining metrics of a
    model trained by the workflow."""
    try:
        record = json.loads(Path(path).read_text())
        if "sha256" in record:
            return f"{record.get('url') or record['path']} (sha256 {record['sha256']})"
        return (
            f"pretrained by this workflow on {record['dataset']} (training split sha256 "
            f"{record['train_sha256']}, seed {record['seed']})"
        )
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{path}: neither a weights record nor a pretraining metrics.json ({err!r})") from None


def main(embeddings: list, table: str, html: str, settings: ProvenanceSettings, origins: list = ()) -> None:
    models = settings.models
    if len(models) != len(origins):
        raise ValueError(f"{len(models)} model(s) but {len(origins)} weights origin(s): {models} / {origins}")
    sources = {model: weights_source(origin) for model, origin in zip(models, origins)}
    rows = []
    for path in embeddings:
        meta = read_metadata(path)
        versions = meta.get("versions", {})
        rows.append(
            {
                "file": path,
                "file_sha256": file_digest(path),
                **{key: meta.get(key, "") for key in COLUMNS},
                "weights_source": sources.get(meta.get("model"), ""),
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
