"""Training input pipeline, images per second per core: the decoded-once cache against today's pipeline, same run.

The benchmark writes photo-like JPEGs (octaves of smooth colour noise plus grain, quality 90; about the
bytes per pixel of camera photos) at 640x480 (COCO-like) and 1024x768 (Open Images-like). For each
size, in this process with one torch thread, it measures images per CPU-second of the process (per
core, and not slowed by other processes on a shared machine), with the
workflow's own code (ImageLabelDataset, EpochSampler, make_loader with no workers; the resnet50
preprocessing: Resize 256, CenterCrop 224, random flip, ImageNet normalisation):

  files, float   the pipeline before the cache: PIL decodes every original, a float transform per image
  files, uint8   the same decode, uint8 augmentation, normalisation per batch (finetune.cache: off)
  cache          the decoded-once cache (finetune.cache: on): stored 256-px JPEGs, uint8, per batch

Medians over --rounds, the variants interleaved within each round. Last, the demo's CPU training step
(resnet18 at 64 px, batch 64: decode, augment, forward, backward, SGD) fed by each pipeline. Also: the cache build (one
process, CPU-seconds, median of --rounds builds) per image against one epoch of "files, float", and
bytes per cached image.

With --device cuda (when a GPU is there): the batch normalisation on the GPU, and batched GPU JPEG
decoding (torchvision.io.decode_jpeg on the device, then resize, crop and flip there) of the originals
and of the cached images, against the CPU rates above.

--costs resources/costs/input.csv writes the per-image CPU-seconds (CPU runs) that the cost estimate
(preflight.py --estimate) reads: COCO-like images take the 640x480 row, Open Images the 1024x768 row.

    python benchmarks/bench_input.py [--images 48] [--rounds 3] [--demo-images 128] [--device cpu|cuda] [--json PATH]
        [--costs PATH]
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from PIL import Image

from biastransfer.atomic import write_csv, write_text
from biastransfer.data.cache import CacheSetting, ImageCache, build_cache
from biastransfer.data.splits import Split
from biastransfer.models.registry import REGISTRY
from biastransfer.train.config import TrainConfig
from biastransfer.train.data import EpochSampler, ImageLabelDataset, make_loader

RESULTS = Path(__file__).resolve().parent / "results" / "bench_input.json"
COSTS = Path(__file__).resolve().parents[1] / "resources" / "costs" / "input.csv"
SIZES = ((640, 480), (1024, 768))
BATCH = 32


def photo(width: int, height: int, rng: np.random.Generator) -> Image.Image:
    """Photo-like content: smooth colour octaves (large shapes to fine texture) plus sensor grain."""
    out = np.zeros((height, width, 3))
    for octave in range(1, 8):
        cells = 2**octave
        field = rng.standard_normal((cells * height // width + 1, cells, 3)).astype(np.float32)
        layer = Image.fromarray(field[..., 0]).resize((width, height), Image.BICUBIC)
        tint = rng.uniform(0.6, 1.4, 3)
        out += np.asarray(layer)[..., None] * tint * 60 / octave**0.8
    out += rng.normal(0, 6, out.shape)
    return Image.fromarray(np.clip(out + 128, 0, 255).astype(np.uint8))


def write_split(folder: Path, n: int, size: tuple[int, int], seed: int = 0) -> tuple[Split, Path]:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        path = folder / f"{i:05d}.jpg"
        photo(*size, rng).save(path, quality=90)
        rows.append({"image_id": str(i), "path": str(path), "labels": ["a"] if i % 2 else ["b"]})
    split_file = folder / "split.parquet"
    split_file.write_bytes(f"{size} {n} {seed}".encode())  # stands in for the split file: its digest keys the cache
    return Split("bench", "train", ("a", "b"), pd.DataFrame(rows)), split_file


def epoch_rate(dataset: ImageLabelDataset, epoch: int) -> float:
    """Images per CPU-second of this process for one epoch through the training loader (no workers)."""
    sampler = EpochSampler(len(dataset), seed=0)
    sampler.set_epoch(epoch)
    loader = make_loader(dataset, TrainConfig(epochs=1, lr=0.1, batch_size=BATCH), torch.device("cpu"), sampler=sampler)
    tic, seen = time.process_time(), 0
    for x, _ in loader:
        assert x.dtype == torch.float32
        seen += len(x)
    return seen / (time.process_time() - tic)


def demo_step_rates(folder: Path, rounds: int, n: int = 128) -> dict:
    """The demo's CPU training step (resnet18 at 64 px, batch 64) fed by the float and the uint8 pipelines:
    images per CPU-second of the whole step (decode, augment, normalise, forward, backward, SGD)."""
    from torch import nn

    from biastransfer.models.extractors import create_classifier
    from biastransfer.models.resolve import resolve_spec

    rng = np.random.default_rng(1)
    rows = []
    for i in range(n):
        path = folder / f"demo{i:04d}.png"
        photo(64, 64, rng).save(path)
        rows.append({"image_id": str(i), "path": str(path), "labels": ["a"] if i % 2 else ["b"]})
    split = Split("demo", "train", ("a", "b"), pd.DataFrame(rows))
    pre = {"resize": 64, "crop": 64, "interpolation": "bilinear", "mean": [0.5] * 3, "std": [0.25] * 3}
    spec = resolve_spec("democnn", {"source": "timm", "arch": "resnet18", "weights": None, "preprocess": pre})
    p = spec.preprocess
    variants = {
        "demo_float": ImageLabelDataset(split, p.transform(train=True)),
        "demo_uint8": ImageLabelDataset(split, p.uint8_transform(train=True), normalize=p.normalize),
    }
    model = create_classifier(spec, 2, None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.BCEWithLogitsLoss()
    cfg = TrainConfig(epochs=1, lr=0.01, batch_size=64)
    rates = {name: [] for name in variants}
    for r in range(rounds):
        for name, dataset in variants.items():
            sampler = EpochSampler(len(dataset), seed=0)
            sampler.set_epoch(r + 1)
            tic, seen = time.process_time(), 0
            for x, y in make_loader(dataset, cfg, torch.device("cpu"), sampler=sampler):
                loss = loss_fn(model(x), y)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                seen += len(y)
            rates[name].append(seen / (time.process_time() - tic))
    out = {"images": n, **{f"{name}_img_s": statistics.median(v) for name, v in rates.items()}}
    out["demo_uint8_vs_float"] = out["demo_uint8_img_s"] / out["demo_float_img_s"]
    return out


def gpu_rates(paths: list[str], cache: ImageCache, pre, rounds: int) -> dict:
    """Batched torchvision.io.decode_jpeg on the GPU, then resize, crop, flip and normalise there."""
    import torch.nn.functional as F
    from torchvision.io import decode_jpeg

    device = torch.device("cuda")
    sources = {
        "files": [torch.frombuffer(bytearray(Path(p).read_bytes()), dtype=torch.uint8) for p in paths],
        "cache": [torch.frombuffer(bytearray(cache.data(i)), dtype=torch.uint8) for i in range(len(cache))],
    }

    def finish(img: torch.Tensor) -> torch.Tensor:
        h, w = img.shape[-2:]
        size = (pre.resize, int(pre.resize * w / h)) if h <= w else (int(pre.resize * h / w), pre.resize)
        img = F.interpolate(img[None].float(), size=size, mode=pre.interpolation, antialias=True)[0]
        top, left = (size[0] - pre.crop) // 2, (size[1] - pre.crop) // 2
        return img[:, top : top + pre.crop, left : left + pre.crop]

    out = {}
    for name, blobs in sources.items():
        times = []
        for _ in range(rounds):
            torch.cuda.synchronize()
            tic = time.perf_counter()
            for start in range(0, len(blobs), BATCH):
                decoded = decode_jpeg(blobs[start : start + BATCH], device=device)
                x = torch.stack([finish(img) for img in decoded]).flip(-1).round().clamp(0, 255).to(torch.uint8)
                pre.normalize(x)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - tic)
        out[f"gpu_decode_{name}_img_s"] = len(blobs) / statistics.median(times)
    x = torch.randint(0, 256, (BATCH, 3, pre.crop, pre.crop), dtype=torch.uint8).pin_memory()
    times = []
    for _ in range(max(rounds, 5)):
        torch.cuda.synchronize()
        tic = time.perf_counter()
        pre.normalize(x.to(device, non_blocking=True))
        torch.cuda.synchronize()
        times.append(time.perf_counter() - tic)
    out["gpu_normalize_img_s"] = BATCH / statistics.median(times)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, default=48, help="images per size (one epoch)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--demo-images", type=int, default=128, help="images of the demo training step's epoch")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--json", type=Path, default=RESULTS, help="where to write the figures")
    parser.add_argument(
        "--costs", type=Path, help=f"also write the per-image CPU costs there (the estimate's {COSTS.name})"
    )
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device is available")
    torch.set_num_threads(1)
    pre = REGISTRY["resnet50"].preprocess
    setting = CacheSetting(pre.resize, pre.interpolation)
    report = {"images": args.images, "rounds": args.rounds, "preprocess": pre.as_dict(), "setting": setting.name}
    with tempfile.TemporaryDirectory() as tmp:
        for size in SIZES:
            label = f"{size[0]}x{size[1]}"
            folder = Path(tmp) / label
            folder.mkdir()
            split, split_file = write_split(folder, args.images, size)
            ids, paths = list(split.frame["image_id"]), list(split.frame["path"])
            builds = []
            for _ in range(args.rounds):
                tic = time.process_time()
                index = build_cache(
                    split_file, ids, paths, folder / "c.json", folder / "c.shards", setting, log=lambda m: None
                )
                builds.append(time.process_time() - tic)
            build_s = statistics.median(builds)
            cache = ImageCache(folder / "c.json", image_ids=ids)
            variants = {
                "files_float": ImageLabelDataset(split, pre.transform(train=True)),
                "files_uint8": ImageLabelDataset(split, pre.uint8_transform(train=True), normalize=pre.normalize),
                "cache": ImageLabelDataset(
                    split, pre.uint8_transform(train=True), cache=cache, normalize=pre.normalize
                ),
            }
            rates = {name: [] for name in variants}
            for r in range(args.rounds):
                for name, dataset in variants.items():
                    rates[name].append(epoch_rate(dataset, r + 1))
            row = {f"{name}_img_s": statistics.median(v) for name, v in rates.items()}
            row["cache_vs_files_float"] = row["cache_img_s"] / row["files_float_img_s"]
            row["files_uint8_vs_files_float"] = row["files_uint8_img_s"] / row["files_float_img_s"]
            row["build_s_per_image"] = build_s / args.images
            row["build_vs_one_epoch"] = build_s / (args.images / row["files_float_img_s"])
            row["bytes_per_cached_image"] = index["bytes"] / args.images
            row["bytes_per_source_image"] = index["source_bytes"] / args.images
            if args.device == "cuda":
                row.update(gpu_rates(paths, cache, pre, args.rounds))
            report[label] = row
            print(f"{label} ({args.images} photo-like JPEGs, one core):")
            for name in variants:
                print(f"  {name:12s} {row[f'{name}_img_s']:8.1f} img/s")
            print(f"  cache / files_float   {row['cache_vs_files_float']:6.2f} x")
            print(
                f"  build {row['build_s_per_image'] * 1e3:.1f} ms/image = {row['build_vs_one_epoch']:.2f} epochs of "
                f"files_float; {row['bytes_per_cached_image'] / 1e3:.1f} kB per cached image "
                f"(originals {row['bytes_per_source_image'] / 1e3:.1f} kB)"
            )
            for key in sorted(k for k in row if k.startswith("gpu_")):
                print(f"  {key:28s} {row[key]:10.1f}")
        report["demo"] = demo_step_rates(Path(tmp), args.rounds, args.demo_images)
        print(
            "demo training step (resnet18, 64 px PNGs, batch 64, one core): float pipeline "
            f"{report['demo']['demo_float_img_s']:.1f} img/s, uint8 pipeline {report['demo']['demo_uint8_img_s']:.1f} "
            f"img/s ({report['demo']['demo_uint8_vs_float']:.2f} x)"
        )
    report.update(
        device=args.device,
        torch=torch.__version__,
        pillow=Image.__version__,
        machine=platform.machine(),
        python=platform.python_version(),
    )
    write_text(args.json, json.dumps(report, indent=2) + "\n")
    if args.costs:
        rows = [
            {
                "size": label,
                "files_s_per_image": 1 / report[label]["files_float_img_s"],
                "cache_s_per_image": 1 / report[label]["cache_img_s"],
                "build_s_per_image": report[label]["build_s_per_image"],
                "bytes_per_source_image": report[label]["bytes_per_source_image"],
                "bytes_per_cached_image": report[label]["bytes_per_cached_image"],
                "setting": setting.name,
                "images": args.images,
                "date": datetime.date.today().isoformat(),
            }
            for label in (f"{w}x{h}" for w, h in SIZES)
        ]
        write_csv(args.costs, pd.DataFrame(rows))
        print(f"wrote {args.costs}")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
