"""Check one zoo model before its analysis: resolve its spec, fetch and verify its weights, build it, and
embed one blank image at its configured crop.

Writes its record whatever happens: when the model passed, the weights record of the fetch rule
(``models.weights``) with the parameter count of the built image encoder added, which the embed job then
reads as its weights (no separate fetch job); else the error (unknown architecture or tag, failed
download, checksum mismatch, weights that do not fit the architecture, a forward pass that fails at the
crop, such as a ViT given 64 px; ``biastransfer.zoo``). The zoo's aggregate rules read these records, so
a failed model is named in the summary instead of stopping the run. Delete a record to check its model
again.

Standalone: python workflow/scripts/zoo_status.py --model resnet18_tv_in1k \\
    --entry '{"source": "timm", "arch": "resnet18", "pretrained_tag": "tv_in1k"}' \\
    --status S.json --cache_dir resources/weights [--mirror DIR_OR_URL]
"""

import logging

from biastransfer.scripting import run
from biastransfer.zoo import write_failure

log = logging.getLogger(__name__)


def main(status: str, entry: dict, model: str, cache_dir: str, mirror: str | None = None) -> None:
    import torch

    from biastransfer.models.extractors import create_backbone
    from biastransfer.models.resolve import model_spec
    from biastransfer.models.weights import resolve_weights, write_weights_record

    try:
        spec = model_spec(model, entry)
        path = resolve_weights(spec, cache_dir, mirror=mirror or None)
        backbone = create_backbone(spec, path)
        params = sum(p.numel() for p in backbone.parameters())
        with torch.no_grad():  # one image at the configured crop: a network that cannot take it fails here
            backbone(torch.zeros(1, 3, spec.preprocess.crop, spec.preprocess.crop))
    except Exception as exc:  # noqa: BLE001  (any failure of this one model is recorded, not raised)
        error = f"{type(exc).__name__}: {exc}"
        log.error("model %s failed its check and is left out of the zoo: %s", model, error)
        write_failure(status, model=model, error=error)
        return
    write_weights_record(status, spec, path, params=params)
    log.info("model %s: %s (%d parameters) fetched and built", model, path, params)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
