"""Per-image compute costs of every registered architecture, for the cost estimate (preflight.py --estimate).

For each model of the registry (biastransfer.models.registry), built with random weights (nothing is
downloaded) as the finetuning classifier with 80 outputs, at its preprocess crop:

  train_s_per_image   one training step (forward, BCE, backward, SGD step) per image, batch --batch
  embed_s_per_image   one inference forward per image, batch --batch (the embedding pass is the trunk's
                      forward: the same cost less the head)

Medians over --repeats after one warm-up, seconds per image: on CPU the process's CPU time
(core-seconds; one torch thread by default, so that no thread spins waiting for another, and not
inflated by other processes on a shared machine), on CUDA synchronised wall time in bf16 autocast, as
the finetuning runs there. Writes or updates resources/costs/models.csv, one row per (model, device);
rows of another device (a GPU figure recorded elsewhere) are kept. Columns: model, source, arch, crop,
params_m, embed_dim, device, threads, batch, train_s_per_image, embed_s_per_image, machine, torch, date.

    python benchmarks/bench_costs.py [--device cpu|cuda] [--batch 4] [--repeats 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import time
from pathlib import Path

import pandas as pd
import torch
from torch import nn

from biastransfer.atomic import write_csv
from biastransfer.models.extractors import create_classifier
from biastransfer.models.registry import REGISTRY

TABLE = Path(__file__).resolve().parents[1] / "resources" / "costs" / "models.csv"
N_CLASSES = 80


def timed(step, repeats: int, sync, clock) -> float:
    step()
    sync()
    times = []
    for _ in range(repeats):
        tic = clock()
        step()
        sync()
        times.append(clock() - tic)
    return statistics.median(times)


def measure(name: str, device: torch.device, batch: int, repeats: int) -> dict:
    spec = REGISTRY[name]
    model = create_classifier(spec, N_CLASSES, None).to(device)
    crop = spec.preprocess.crop
    x = torch.randn(batch, 3, crop, crop, device=device)
    y = (torch.rand(batch, N_CLASSES, device=device) < 0.05).float()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    loss_fn = nn.BCEWithLogitsLoss()
    cuda = device.type == "cuda"
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=cuda)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    clock = time.perf_counter if cuda else time.process_time  # CPU: core-seconds, whatever else runs

    def train_step():
        model.train()
        with autocast:
            logits = model(x)
        loss = loss_fn(logits.float(), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    def embed_step():
        model.eval()
        with torch.inference_mode(), autocast:
            model(x)

    return {
        "model": name,
        "source": spec.source,
        "arch": spec.arch,
        "crop": crop,
        "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 2),
        "embed_dim": model.head.in_features,
        "device": device.type,
        "threads": torch.get_num_threads(),
        "batch": batch,
        "train_s_per_image": timed(train_step, repeats, sync, clock) / batch,
        "embed_s_per_image": timed(embed_step, repeats, sync, clock) / batch,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--table", type=Path, default=TABLE)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    stamp = {
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip()
        if device.type == "cpu"
        else torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "date": datetime.date.today().isoformat(),
    }
    rows = []
    for name in REGISTRY:
        row = {**measure(name, device, args.batch, args.repeats), **stamp}
        print(
            f"{name:16s} {row['params_m']:7.1f} M params  train {row['train_s_per_image'] * 1e3:8.1f} ms/image  "
            f"embed {row['embed_s_per_image'] * 1e3:7.1f} ms/image ({args.device})"
        )
        rows.append(row)
    table = pd.DataFrame(rows)
    if args.table.is_file():
        kept = pd.read_csv(args.table)
        table = pd.concat([kept[kept["device"] != device.type], table], ignore_index=True)
    write_csv(args.table, table.sort_values(["model", "device"]))
    print(f"wrote {args.table}")


if __name__ == "__main__":
    main()
