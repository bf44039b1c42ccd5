"""Benchmark: manifest a folder of your own images (list, hash, open each header, check, write) vs sha256sum.

Generates ``--images`` distinct PNG files of ``--side`` x ``--side`` random pixels (about 28 kB each by
default, a small photo; --side 40 gives 5 kB files, where per-file overhead dominates) in ``--classes``
class folders of a temporary directory, reads them all once (so both sides find them in the page cache), then
times, alternating, ``find | xargs sha256sum`` over the same files and
``biastransfer.data.user.analysis_set_manifest`` with 1 thread and with ``--threads`` threads.
Reports medians of ``--repeats`` runs, files/s, MB/s and the throughput ratio to sha256sum (target >= 0.8).

    .venv/bin/python benchmarks/bench_manifest.py [--images 100000] [--side 96] [--repeats 3] [--threads 4]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from biastransfer.data.user import analysis_set_manifest  # noqa: E402


def generate(root: Path, n: int, side: int, classes: int, seed: int = 0, distinct: int = 500) -> int:
    """``n`` distinct PNG files in ``root/c<k>/``: ``distinct`` random images, each copy made unique by
    bytes after its IEND chunk (which readers ignore); returns their total size in bytes."""
    rng = np.random.default_rng(seed)
    images = []
    for _ in range(min(n, distinct)):
        buf = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (side, side, 3), dtype=np.uint8)).save(buf, "PNG", compress_level=1)
        images.append(buf.getvalue())
    total = 0
    for k in range(classes):
        (root / f"c{k}").mkdir(parents=True)
    for i in range(n):
        data = images[i % len(images)] + i.to_bytes(8, "little")
        (root / f"c{i % classes}" / f"{i:07d}.png").write_bytes(data)
        total += len(data)
    return total


def sha256sum(root: Path) -> float:
    start = time.perf_counter()
    subprocess.run(f"find {root} -type f -print0 | xargs -0 sha256sum > /dev/null", shell=True, check=True)
    return time.perf_counter() - start


def manifest(root: Path, classes: int, threads: int, out: Path) -> float:
    entry = {"source": "folder", "root": str(root), "classes": [f"c{k}" for k in range(classes)], "workers": threads}
    start = time.perf_counter()
    analysis_set_manifest(entry, out)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=100_000)
    ap.add_argument("--side", type=int, default=96, help="image side in pixels (96: about 28 kB per PNG; 40: 5 kB)")
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=4)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_manifest_") as tmp:
        root = Path(tmp) / "images"
        start = time.perf_counter()
        size = generate(root, args.images, args.side, args.classes)
        print(f"generated {args.images} PNGs ({size / 1e6:.0f} MB) in {time.perf_counter() - start:.0f} s")
        sha256sum(root)  # warm the page cache for both sides
        times: dict[str, list[float]] = {
            "sha256sum": [],
            "manifest, 1 thread": [],
            f"manifest, {args.threads} threads": [],
        }
        for r in range(args.repeats):
            times["sha256sum"].append(sha256sum(root))
            times["manifest, 1 thread"].append(manifest(root, args.classes, 1, Path(tmp) / f"m1_{r}.parquet"))
            times[f"manifest, {args.threads} threads"].append(
                manifest(root, args.classes, args.threads, Path(tmp) / f"m{args.threads}_{r}.parquet")
            )
        base = statistics.median(times["sha256sum"])
        print(f"{args.images} files, {size / 1e6:.0f} MB, {args.repeats} repeats, {os.cpu_count()} CPUs")
        print(f"{'':24s} {'median s':>9s} {'files/s':>9s} {'MB/s':>7s} {'throughput vs sha256sum':>24s}")
        for name, values in times.items():
            med = statistics.median(values)
            print(f"{name:24s} {med:9.2f} {args.images / med:9.0f} {size / 1e6 / med:7.0f} {base / med:24.2f}")


if __name__ == "__main__":
    main()
