"""Fetch and verify one model's pretrained weights; write a JSON record pointing at the file.

The weights land in ``cache_dir/<model>/<file>`` (outside the declared outputs, so a rerun keeps them)
or stay where a local ``weights:`` path puts them; ``mirror`` serves an air-gapped cluster (see
``biastransfer.data.download``). A checksum mismatch fails the job. ``weights`` (the output) is the record:
``{"format", "model", "path", "sha256", "url", "spec"}``; ``create_backbone`` follows it.

Standalone: python workflow/scripts/fetch_weights.py --model resnet50 --entry '{}' \\
    --weights results/weights/resnet50/weights.done --cache_dir resources/weights [--mirror DIR_OR_URL]
"""

import logging

from biastransfer.models.resolve import model_spec
from biastransfer.models.weights import resolve_weights, write_weights_record
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(
    weights: str,
    entry: dict,
    model: str,
    cache_dir: str,
    mirror: str | None = None,
) -> None:
    spec = model_spec(model, entry)
    log.info("resolving weights of %s: %s (sha256 %s, md5 %s)", model, spec.weights, spec.sha256, spec.md5)
    path = resolve_weights(spec, cache_dir, mirror=mirror or None)
    record = write_weights_record(weights, spec, path)
    log.info("verified %s (sha256 %s); wrote %s", path, record["sha256"], weights)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
