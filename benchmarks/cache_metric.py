"""Validation metric with and without the decoded-once cache where the cache resizes: differences vs seed noise.

The synthetic target scenes of the demo (biastransfer.data.synthetic: unbiased scenes), rendered at
--size px (PNG) instead of 64, with the demo's model architecture trained from scratch at its resize of
64 px, so that the cache stores every image resized (the model's bilinear resize, then JPEG 95).
For each seed, the same run reads the files and the cache; prints each seed's validation mAP, the
per-seed differences and the spread over seeds (the noise the differences are compared with).

    python benchmarks/cache_metric.py [--size 160] [--seeds 0 1 2] [--epochs 3] [--n 300]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import numpy as np
import torch

from biastransfer.data import synthetic
from biastransfer.data.cache import CacheSetting, build_cache
from biastransfer.data.splits import Split, read_split, write_split
from biastransfer.models.extractors import create_classifier
from biastransfer.models.resolve import resolve_spec
from biastransfer.train.run import TrainingFiles, run_training, train_config

PRE = {"resize": 64, "crop": 64, "interpolation": "bilinear", "mean": [0.5] * 3, "std": [0.25] * 3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=160)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--n", type=int, default=300, help="training images (validation: a third)")
    args = parser.parse_args()
    spec = resolve_spec("democnn", {"source": "timm", "arch": "resnet18", "weights": None, "preprocess": PRE})
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths, caches = {}, {}
        for name, n, seed in (("train", args.n, 13), ("val", args.n // 3, 14)):
            frame = synthetic.generate_split(
                "demo",
                name,
                n,
                synthetic.SceneDistribution(),
                label_groups=False,
                size=args.size,
                rng=np.random.default_rng(seed),
                image_dir=root / name,
            )
            paths[name] = root / f"{name}.parquet"
            write_split(paths[name], Split("demo", name, synthetic.class_list(False), frame))
            frame = read_split(paths[name]).frame
            caches[name] = root / f"{name}.json"
            build_cache(
                paths[name],
                list(frame["image_id"]),
                list(frame["path"]),
                caches[name],
                caches[name].with_suffix(".shards"),
                CacheSetting(64),
                log=lambda m: None,
            )
        results = {}
        for seed in args.seeds:
            for label, cache in (("files", None), ("cache", (str(caches["train"]), str(caches["val"])))):
                out = root / f"{label}{seed}"
                metrics = run_training(
                    lambda classes: create_classifier(spec, len(classes), None),
                    spec,
                    TrainingFiles(
                        str(paths["train"]),
                        str(paths["val"]),
                        str(out / "m.safetensors"),
                        str(out / "m.json"),
                        *(cache or (None, None)),
                    ),
                    train_config({"epochs": args.epochs, "lr": 0.05, "batch_size": 32}, seed, 0),
                    device=torch.device("cpu"),
                    threads=torch.get_num_threads(),
                    log=lambda m: None,
                )
                results[(label, seed)] = metrics["history"][-1]["metric"]
            print(f"seed {seed}: files {results[('files', seed)]:.4f}  cache {results[('cache', seed)]:.4f}")
    diffs = [results[("cache", s)] - results[("files", s)] for s in args.seeds]
    files = [results[("files", s)] for s in args.seeds]
    print(f"last-epoch validation mAP, cache - files per seed: {', '.join(f'{d:+.4f}' for d in diffs)}")
    print(f"mean difference {statistics.mean(diffs):+.4f}; SD over seeds (files) {statistics.stdev(files):.4f}")


if __name__ == "__main__":
    main()
