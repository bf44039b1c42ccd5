"""Training throughput: the real data pipeline vs pre-made tensors, in the same run.

CPU (always): torchvision resnet18 at 224 px, training steps (forward, BCE, backward, SGD) on batches
that are (a) tensors already in memory and (b) decoded from JPEG files by the workflow's pipeline
(ImageLabelDataset + the model's Preprocess with a random flip, EpochSampler, DataLoader workers).
The pipeline keeps up if (b) reaches at least 90% of (a).

GPU (only when CUDA is available): resnet50 at 224 from the same pipeline, our settings (bf16
autocast where native, channels_last, batch --gpu-batch, pinned memory, persistent workers) vs the
authors' recipe (fp32, batch 32, contiguous tensors), on --gpu-images JPEGs (at least two of our
batches), with each set-up's peak GPU memory and GPU utilisation when pynvml is installed.

    python benchmarks/bench_train.py [--rounds 12] [--batch 16] [--workers 1] [--images 96] [--gpu-images 512]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from itertools import cycle
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from PIL import Image
from torch import nn

from biastransfer.data.splits import Split
from biastransfer.models.extractors import create_classifier
from biastransfer.models.resolve import resolve_spec
from biastransfer.models.spec import Preprocess
from biastransfer.train.config import TrainConfig
from biastransfer.train.data import EpochSampler, ImageLabelDataset, make_loader
from biastransfer.train.loop import Runtime, make_optimizer

N_CLASSES = 80


def write_jpegs(folder: Path, n: int, seed: int = 0) -> Split:
    """``n`` COCO-sized (640x480) JPEGs of smooth noise with random multi-labels."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        small = rng.integers(0, 256, size=(30, 40, 3), dtype=np.uint8)
        path = folder / f"{i:06d}.jpg"
        Image.fromarray(small).resize((640, 480), Image.BILINEAR).save(path, quality=90)
        labels = [f"c{k}" for k in np.flatnonzero(rng.random(N_CLASSES) < 0.04)]
        rows.append({"image_id": str(i), "path": str(path), "labels": labels})
    return Split("bench", "train", tuple(f"c{k}" for k in range(N_CLASSES)), pd.DataFrame(rows))


def batches_forever(loader, sampler):
    """The loader's batches, epoch after epoch; ValueError if an epoch has none (fewer images than a
    batch with drop_last), which would otherwise loop for ever."""
    epoch = 0
    while True:
        epoch += 1
        sampler.set_epoch(epoch)
        empty = True
        for batch in loader:
            empty = False
            yield batch
        if empty:
            raise ValueError(
                f"{len(loader.dataset)} images give no batch of {loader.batch_size} (drop_last): write more images"
            )


def measure(model, optimizer, rt: Runtime, batches, steps: int) -> float:
    """Images per second over ``steps`` training steps drawn from ``batches``."""
    loss_fn = nn.BCEWithLogitsLoss()
    sync = torch.cuda.synchronize if rt.device.type == "cuda" else (lambda: None)
    sync()
    tic, seen = time.perf_counter(), 0
    for _ in range(steps):
        x, y = next(batches)
        x, y = rt.inputs(x), y.to(rt.device, non_blocking=True)
        with rt.autocast_context():
            logits = model(x)
        loss = loss_fn(logits.float(), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        seen += len(y)
    sync()
    return seen / (time.perf_counter() - tic)


def setup(arch: str, cfg: TrainConfig, device: torch.device, split: Split, preprocess: Preprocess):
    spec = resolve_spec(
        f"bench_{arch}", {"source": "torchvision", "arch": arch, "weights": None, "preprocess": preprocess}
    )
    torch.manual_seed(0)
    model = create_classifier(spec, N_CLASSES, None).to(device).train()
    rt = Runtime.resolve(cfg, device)
    if rt.channels_last:
        model.to(memory_format=torch.channels_last)
    dataset = ImageLabelDataset(split, spec.preprocess.transform(train=True))
    sampler = EpochSampler(len(dataset), cfg.seed)
    loader = make_loader(dataset, cfg, device, sampler=sampler, drop_last=True)
    return model, make_optimizer(model, cfg), rt, batches_forever(loader, sampler)


def compare(label_a, run_a, label_b, run_b, rounds: int) -> tuple[float, float, float]:
    """Alternating single measurements of the two set-ups (after one warm-up each), so that load from
    other processes hits both alike: (median a, median b, median of the paired ratios b / a)."""
    run_a(), run_b()
    a, b = [], []
    for _ in range(rounds):
        a.append(run_a())
        b.append(run_b())
    print(f"  {label_a}: {' '.join(f'{v:.1f}' for v in a)} img/s")
    print(f"  {label_b}: {' '.join(f'{v:.1f}' for v in b)} img/s")
    return statistics.median(a), statistics.median(b), statistics.median(y / x for x, y in zip(a, b))


def loader_only(batches, n_batches: int) -> float:
    """Images per second the pipeline delivers when nothing else runs in the main process."""
    tic, seen = time.perf_counter(), 0
    for _ in range(n_batches):
        seen += len(next(batches)[1])
    return seen / (time.perf_counter() - tic)


def cpu_benchmark(args, split: Split) -> None:
    pre = Preprocess(256, 224, "bilinear", train_hflip=True)
    cfg = TrainConfig(epochs=1, lr=0.01, batch_size=args.batch, num_workers=args.workers)
    cpu = torch.device("cpu")
    model, optimizer, rt, pipeline = setup("resnet18", cfg, cpu, split, pre)
    made = [
        (torch.randn(args.batch, 3, 224, 224), (torch.rand(args.batch, N_CLASSES) < 0.04).float()) for _ in range(2)
    ]
    tensors = cycle(made)
    print(
        f"CPU, resnet18 at 224, batch {args.batch}, {torch.get_num_threads()} torch threads, "
        f"{args.workers} loader worker(s), {args.rounds} alternating single steps each:"
    )
    t_med, p_med, ratio = compare(
        "tensors",
        lambda: measure(model, optimizer, rt, tensors, 1),
        "pipeline",
        lambda: measure(model, optimizer, rt, pipeline, 1),
        args.rounds,
    )
    print(
        f"median: pre-made tensors {t_med:.1f} img/s, JPEG pipeline {p_med:.1f} img/s, ratio of medians "
        f"{p_med / t_med:.3f}, median paired ratio {ratio:.3f} "
        f"({'OK' if ratio >= 0.9 else 'pipeline is the bottleneck'}: target >= 0.90)"
    )
    alone = loader_only(pipeline, 4)
    print(f"pipeline alone (decode + augment, no training): {alone:.1f} img/s = {alone / t_med:.0f}x the training rate")


def gpu_utilisation() -> str:
    try:
        return f"{torch.cuda.utilization()}%"
    except Exception as exc:  # pynvml missing or no NVML: report why instead of a number
        return f"n/a ({type(exc).__name__})"


def step_comparison(
    split: Split, device: torch.device, *, arch: str, batch: int, steps: int, workers: int, rounds: int, crop: int = 224
) -> dict:
    """Training images/s of our settings (precision auto, channels_last, ``batch``) against the authors'
    recipe (fp32, batch 32, contiguous), medians of alternating rounds of ``steps`` steps; on CUDA each
    set-up's peak GPU memory (model, optimizer state and activations, the other set-up's resident memory
    excluded)."""
    pre = Preprocess(crop * 8 // 7, crop, "bilinear", train_hflip=True)
    ours = TrainConfig(epochs=1, lr=0.01, batch_size=batch, num_workers=workers, precision="auto", channels_last=True)
    authors = TrainConfig(epochs=1, lr=0.01, batch_size=32, num_workers=workers, precision="fp32", channels_last=False)
    cuda = device.type == "cuda"
    runs, peaks, runtimes = {}, {}, {}
    for name, cfg in (("ours", ours), ("authors", authors)):
        resident = torch.cuda.memory_allocated(device) if cuda else 0
        if cuda:
            torch.cuda.reset_peak_memory_stats(device)
        model, optimizer, rt, pipeline = setup(arch, cfg, device, split, pre)
        runs[name] = lambda m=model, o=optimizer, r=rt, p=pipeline: measure(m, o, r, p, steps)
        runs[name]()  # warm-up, and the peak of this set-up alone
        peaks[name] = (torch.cuda.max_memory_allocated(device) - resident) / 2**20 if cuda else None
        runtimes[name] = {**rt.describe(), "batch_size": cfg.batch_size}
    print(
        f"{torch.cuda.get_device_name(device) if cuda else 'CPU'}, {arch} at {crop}: ours ({runtimes['ours']}) "
        f"vs authors ({runtimes['authors']}), {workers} loader workers, {steps} steps a round:"
    )
    a_med, o_med, paired = compare("authors", runs["authors"], "ours", runs["ours"], rounds)
    return {
        "arch": arch,
        "crop": crop,
        "ours": {**runtimes["ours"], "img_s": o_med, "peak_gpu_mib": peaks["ours"]},
        "authors": {**runtimes["authors"], "img_s": a_med, "peak_gpu_mib": peaks["authors"]},
        "speed_up": o_med / a_med,
        "median_paired_speed_up": paired,
    }


def gpu_benchmark(args, split: Split) -> dict:
    r = step_comparison(
        split,
        torch.device("cuda"),
        arch="resnet50",
        batch=args.gpu_batch,
        steps=args.gpu_steps,
        workers=args.gpu_workers,
        rounds=args.rounds,
    )
    print(
        f"median: ours {r['ours']['img_s']:.0f} img/s, authors' recipe {r['authors']['img_s']:.0f} img/s, "
        f"speed-up {r['speed_up']:.2f}x (target >= 3x); peak GPU memory ours {r['ours']['peak_gpu_mib']:.0f} MiB, "
        f"authors {r['authors']['peak_gpu_mib']:.0f} MiB; GPU utilisation at the end {gpu_utilisation()}"
    )
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=12, help="alternating measurements of each set-up")
    ap.add_argument("--batch", type=int, default=16, help="CPU batch size")
    ap.add_argument("--workers", type=int, default=1, help="CPU loader workers")
    ap.add_argument("--images", type=int, default=96, help="JPEG files to write")
    ap.add_argument("--gpu-images", type=int, default=512, help="JPEG files for the GPU part (>= 2 GPU batches)")
    ap.add_argument("--gpu-batch", type=int, default=128)
    ap.add_argument("--gpu-steps", type=int, default=30)
    ap.add_argument("--gpu-workers", type=int, default=8)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        split = write_jpegs(Path(tmp), args.images)
        cpu_benchmark(args, split)
        if torch.cuda.is_available():
            gpu_dir = Path(tmp) / "gpu"
            gpu_dir.mkdir()
            gpu_benchmark(args, write_jpegs(gpu_dir, max(args.gpu_images, 2 * args.gpu_batch)))
        else:
            print("GPU part skipped: no CUDA device here (resnet50 ours vs the authors' recipe needs one)")


if __name__ == "__main__":
    main()
