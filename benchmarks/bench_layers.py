"""A four-layer profile's forward pass vs a single-layer (penultimate) extraction, measured in the same run.

Baseline: the extractor every embedding job uses (``create_backbone``: the trunk's pre-logits output).
Profile: ``LayerExtractor`` over the model's default four layers (hooks, pooled, concatenated; the pass
stops after the deepest). Both run on the same random batch through ``forward_batch`` (the extraction
loop's step); repeats alternate baseline and profile so that load from other processes hits both alike,
and the figure is the median of the per-repeat ratios profile / baseline (target <= 1.3).

    .venv/bin/python benchmarks/bench_layers.py                  # resnet50 at 224 px, the demo's resnet18 at 64 px
    .venv/bin/python benchmarks/bench_layers.py --device cuda --repeats 20
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import torch

from biastransfer.models.extractors import create_backbone
from biastransfer.models.features import forward_batch
from biastransfer.models.layers import layer_extractor
from biastransfer.models.resolve import model_spec, resolve_spec

DEMO_ENTRY = {
    "source": "workflow",
    "arch": "resnet18",
    "preprocess": {
        "resize": 64,
        "crop": 64,
        "interpolation": "bilinear",
        "mean": [0.5, 0.5, 0.5],
        "std": [0.25, 0.25, 0.25],
    },
}  # config/config.yaml's democnn


def timed(model, batch: torch.Tensor, device: torch.device) -> float:
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.synchronize()
    start = time.perf_counter()
    with torch.inference_mode():
        forward_batch(model, batch, device, amp=cuda, channels_last=cuda)
    if cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - start


def bench(label: str, spec, batch_size: int, repeats: int, device: torch.device) -> dict:
    base = create_backbone(dataclasses.replace(spec, layer="penultimate"), None).eval().to(device)
    prof = layer_extractor(spec, None).to(device)
    crop = spec.preprocess.crop
    batch = torch.randn(batch_size, 3, crop, crop, generator=torch.Generator().manual_seed(0))
    for model in (base, prof):  # warm-up
        timed(model, batch, device)
    base_s, prof_s, ratios = [], [], []
    for _ in range(repeats):
        b, p = timed(base, batch, device), timed(prof, batch, device)
        base_s.append(b)
        prof_s.append(p)
        ratios.append(p / b)
    row = {
        "model": label,
        "px": crop,
        "batch": batch_size,
        "layers": ",".join(prof.layers),
        "single_ms": 1000 * statistics.median(base_s),
        "profile_ms": 1000 * statistics.median(prof_s),
        "ratio": statistics.median(ratios),
    }
    print(
        f"{label:>10} {crop:>4} px  batch {batch_size:>3}  single layer {row['single_ms']:8.1f} ms  "
        f"four layers {row['profile_ms']:8.1f} ms  ratio {row['ratio']:.3f} (median of {repeats}; target <= 1.3)  "
        f"[{row['layers']}]"
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    print(f"torch {torch.__version__}, {args.threads} threads, device {device}")
    bench("resnet50", resolve_spec("resnet50"), 16, args.repeats, device)
    bench("democnn", model_spec("democnn", DEMO_ENTRY), 64, args.repeats, device)


if __name__ == "__main__":
    main()
