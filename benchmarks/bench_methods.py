"""Per-epoch cost of each mitigation method against plain finetuning on the same tiny data (CPU, in process).

A resnet10t classifier (timm, random weights, 32 px) on 512 random training images and 128 validation
images of 8 classes (1-3 labels each), each image with an attribute code (two values, 20% none), batch size
32. A loop method's cost is one epoch of :func:`biastransfer.train.loop.train_classifier` (training and the
validation with its worst-group mAP); DFR's and LEACE's is their refit of the same network's last layer
(features of the training split, the balanced subset or the eraser, the L-BFGS head, the validation):
:func:`biastransfer.train.run.refit_last_layer`'s work less reading the checkpoint. ``--repeats`` rounds, each
timing every method once in turn, so that load from other processes hits them alike; a method's ratio is the
median over rounds of its time over plain's in the same round (target: at most 1.3 for the loop methods, far
less for DFR and LEACE), its time the median over rounds.

Writes benchmarks/results/methods.json (a record; benchmarks/render_benchmarks.py renders it) and
resources/costs/methods.csv (each method's ratio: biastransfer.estimate states the arms' cost with it).
Run: PYTHONPATH=workflow/scripts python benchmarks/bench_methods.py [--repeats 3]
"""

from __future__ import annotations

import os
import statistics
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from render_benchmarks import median_time, record_arguments, write_timed_record  # benchmarks/

from biastransfer.models.extractors import create_classifier
from biastransfer.models.resolve import resolve_spec
from biastransfer.train.config import TrainConfig
from biastransfer.train.loop import evaluate_groups, train_classifier
from biastransfer.train.methods import Groups, MethodConfig, balanced_subset, fit_eraser, fit_head, training_method
from biastransfer.vocabulary import HEAD_ONLY_METHODS, TRAINING_METHODS

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "methods.json"
COSTS = ROOT / "resources" / "costs" / "methods.csv"
TITLE = "Mitigation methods: per-epoch cost against plain finetuning (resnet10t, 32 px, 512 images, CPU)"
CLASSES = tuple(f"class{i}" for i in range(8))
N_TRAIN, N_VAL, SIZE, BATCH = 512, 128, 32, 32


class Images(torch.utils.data.Dataset):
    """Random normalised images with multi-hot targets and (optionally) attribute codes."""

    def __init__(self, n: int, seed: int, codes: bool):
        rng = np.random.default_rng(seed)
        self.x = torch.from_numpy(rng.normal(0, 1, (n, 3, SIZE, SIZE)).astype(np.float32))
        y = np.zeros((n, len(CLASSES)), dtype=np.float32)
        for row in range(n):
            y[row, rng.choice(len(CLASSES), rng.integers(1, 4), replace=False)] = 1
        self.y = torch.from_numpy(y)
        code = np.where(rng.random(n) < 0.2, -1, rng.integers(0, 2, n))
        self.groups = Groups(("a", "b"), code.astype(np.int64), tuple(range(len(CLASSES))))
        self.codes = torch.from_numpy(self.groups.codes) if codes else None
        self.classes = CLASSES

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, key):
        i = key[0] if isinstance(key, tuple) else key
        return (self.x[i], self.y[i]) if self.codes is None else (self.x[i], self.y[i], self.codes[i])


def network():
    spec = resolve_spec("tiny", {"source": "timm", "arch": "resnet10t", "weights": None})
    torch.manual_seed(0)
    return create_classifier(spec, len(CLASSES), None)


def one_epoch(method: str, train: Images, val: Images, cfg: TrainConfig) -> None:
    model = network()
    train_classifier(
        model,
        train,
        val,
        cfg,
        log=lambda m: None,
        method=training_method(MethodConfig(method), 2),
        val_groups=val.groups,
    )


def refit(method: str, train: Images, val: Images, cfg: TrainConfig) -> None:
    model = network().eval()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(train.x, train.y), batch_size=BATCH)
    with torch.inference_mode():
        features = torch.cat([model.backbone(x) for x, _ in loader])
    y = train.y
    if method == "dfr":
        rows = torch.from_numpy(balanced_subset(train.groups, y.numpy(), 0))
        features, y = features[rows], y[rows]
    else:
        weight, bias = fit_eraser(features, train.groups.codes, 2)
        model.backbone.set_eraser(weight, bias)
        features = features @ weight.T + bias
    model.head = fit_head(features, y, l2=1e-3, steps=200)
    evaluate_groups(model, torch.utils.data.DataLoader(val, batch_size=BATCH), cfg, torch.device("cpu"), val.groups)


def main(argv: list[str] | None = None) -> int:
    args = record_arguments(__doc__.splitlines()[0], RESULTS, argv)
    load_before = os.getloadavg()[0]
    torch.set_num_threads(1)
    train, val = Images(N_TRAIN, 1, codes=True), Images(N_VAL, 2, codes=False)
    cfg = TrainConfig(epochs=1, lr=0.01, batch_size=BATCH, precision="fp32")
    times = {m: [] for m in TRAINING_METHODS}
    for _ in range(args.repeats):
        for method in TRAINING_METHODS:
            run = refit if method in HEAD_ONLY_METHODS else one_epoch
            times[method].append(median_time(lambda run=run, method=method: run(method, train, val, cfg), 1)[0])
    figures = [["training / validation images, classes, batch", f"{N_TRAIN} / {N_VAL}, {len(CLASSES)}, {BATCH}"]]
    rows = []
    for method, ts in times.items():
        s = statistics.median(ts)
        ratio = statistics.median(t / p for t, p in zip(ts, times["plain"]))
        what = "refit of the last layer" if method in HEAD_ONLY_METHODS else "one epoch"
        figures.append([f"{method}: {what}, median", f"{s:.2f} s ({ratio:.2f}x plain's epoch)"])
        rows.append({"method": method, "epoch_ratio": round(ratio, 3)})
    pd.DataFrame(rows).to_csv(COSTS, index=False)
    write_timed_record(args, __file__, TITLE, figures, load_before, pinned=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
