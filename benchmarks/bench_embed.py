"""End-to-end embedding throughput vs forward-only throughput, measured in the same run.

End to end = ``extract_features`` on real JPEG files (decode + resize + crop + normalise in
DataLoader workers, then the forward pass). Forward only = the same model on pre-made tensors of the
same batch size. The ratio end-to-end / forward-only shows how much the input pipeline costs
(target >= 0.90). Repeats are interleaved so that load from other processes hits both alike; the
median of the per-repeat ratios is the figure least disturbed by a busy machine. The end-to-end rate
counts from the first batch on, so that it is the steady state of a real job (thousands of images); the
loader's start-up (workers starting, first batch decoded) is reported apart. On CUDA: peak GPU memory
per model, and the extraction settings of the workflow (channels_last; bf16 autocast with native bf16).

    .venv/bin/python benchmarks/bench_embed.py                       # resnet18 + resnet50, CPU
    .venv/bin/python benchmarks/bench_embed.py --device cuda --models resnet50 clip_vit_b32
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from biastransfer.models.extractors import create_backbone
from biastransfer.models.features import embedding_runtime, extract_features, forward_batch
from biastransfer.models.resolve import resolve_spec


def write_jpegs(folder: Path, count: int, width: int, height: int, seed: int = 0) -> list[Path]:
    """Photo-like JPEGs (smooth colour fields plus grain), quality 90, like COCO/Open Images files."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    paths = []
    for i in range(count):
        fx, fy, phase = rng.uniform(2, 12, 3), rng.uniform(2, 12, 3), rng.uniform(0, 6.3, 3)
        img = np.stack([np.sin(xx / width * fx[c] + yy / height * fy[c] + phase[c]) for c in range(3)], -1)
        img = (img * 90 + 128 + rng.normal(0, 12, img.shape)).clip(0, 255).astype(np.uint8)
        path = folder / f"img{i:04d}.jpg"
        Image.fromarray(img).save(path, quality=90)
        paths.append(path)
    return paths


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def forward_only(model, batches: list[torch.Tensor], device: torch.device) -> float:
    sync(device)
    start = time.perf_counter()
    with torch.inference_mode():
        for batch in batches:
            forward_batch(model, batch, device, **embedding_runtime(device))
    sync(device)
    return sum(len(b) for b in batches) / (time.perf_counter() - start)


def end_to_end(model, paths, preprocess, batch_size, workers, device) -> tuple[float, float]:
    """(images/s after the first batch, seconds until the first batch was embedded)."""
    marks = []
    sync(device)
    start = time.perf_counter()
    extract_features(
        model,
        paths,
        preprocess,
        batch_size=batch_size,
        num_workers=workers,
        device=device,
        progress=lambda n: marks.append((time.perf_counter(), n)),
    )
    sync(device)
    end = time.perf_counter()
    (first, n_first), rest = marks[0], len(paths) - marks[0][1]
    return (rest / (end - first) if rest else n_first / (first - start)), first - start


def measure_model(name: str, paths: list[Path], *, batch_size: int, workers: int, repeats: int, device) -> dict:
    """Forward-only and end-to-end images/s (medians over ``repeats``), start-up and peak GPU memory."""
    device = torch.device(device)
    spec = resolve_spec(name)
    model = create_backbone(spec, None).eval().to(device)  # random initialisation: no download
    if device.type == "cuda":
        model = model.to(memory_format=torch.channels_last)
        torch.cuda.reset_peak_memory_stats(device)
    crop = spec.preprocess.crop
    gen = torch.Generator().manual_seed(0)
    batches = [
        torch.randn(min(batch_size, len(paths) - i), 3, crop, crop, generator=gen)
        for i in range(0, len(paths), batch_size)
    ]
    if device.type == "cuda":
        batches = [b.pin_memory() for b in batches]
    forward_only(model, batches[:1], device)  # warm-up
    fwd, e2e, startup = [], [], []
    for _ in range(repeats):
        fwd.append(forward_only(model, batches, device))
        rate, began = end_to_end(model, paths, spec.preprocess, batch_size, workers, device)
        e2e.append(rate)
        startup.append(began)
    return {
        "model": name,
        "arch": spec.arch,
        "forward_img_s": statistics.median(fwd),
        "end_to_end_img_s": statistics.median(e2e),
        "median_paired_ratio": statistics.median(b / a for a, b in zip(fwd, e2e)),
        "startup_s": statistics.median(startup),
        "runs_forward": fwd,
        "runs_end_to_end": e2e,
        **embedding_runtime(device),
        "peak_gpu_mib": torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else None,
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["resnet18", "resnet50"])
    parser.add_argument("--images", type=int, default=64, help="images per timed pass")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2, help="DataLoader workers for the end-to-end path")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--size", default="640x480", help="JPEG width x height (COCO-like by default)")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    width, height = map(int, args.size.lower().split("x"))
    print(
        f"torch {torch.__version__}, threads {torch.get_num_threads()}, device {device}, "
        f"{args.images} JPEGs {width}x{height}, batch {args.batch_size}, workers {args.workers}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_jpegs(Path(tmp), args.images, width, height)
        for name in args.models:
            r = measure_model(
                name, paths, batch_size=args.batch_size, workers=args.workers, repeats=args.repeats, device=device
            )
            f, e = r["forward_img_s"], r["end_to_end_img_s"]
            memory = f"   peak GPU {r['peak_gpu_mib']:.0f} MiB" if r["peak_gpu_mib"] is not None else ""
            print(
                f"{name:14s} forward-only {f:8.1f} img/s   end-to-end {e:8.1f} img/s   ratio {e / f:.3f}   "
                f"median paired ratio {r['median_paired_ratio']:.3f}   start-up {r['startup_s']:.2f} s{memory}   "
                f"(runs: fwd {', '.join(f'{v:.1f}' for v in r['runs_forward'])}; "
                f"e2e {', '.join(f'{v:.1f}' for v in r['runs_end_to_end'])})"
            )


if __name__ == "__main__":
    main()
