"""Benchmark: 1,000 small files from a loopback HTTP server, parallel connections vs one.

The server runs in its own process (tests/loopback.py) and waits ``--latency-ms`` before each answer,
a stand-in for the round trip to a real image host (0 measures the pure local overhead). Target:
parallel (``--workers``) at least 5x faster than one connection.

    .venv/bin/python benchmarks/bench_download.py [--files 1000] [--workers 16] [--latency-ms 20] [--repeats 3]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from loopback import FileServer  # noqa: E402

from biastransfer.data.download import fetch_many  # noqa: E402


def serve(n: int, size: int, delay: float, queue, stop) -> None:
    files = {f"/img/{i:06d}.jpg": os.urandom(size) for i in range(n)}
    with FileServer(files, delay=delay) as srv:
        queue.put(srv.url)
        stop.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--size", type=int, default=20_000, help="bytes per file")
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--latency-ms", type=float, default=20.0)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    queue, stop = mp.Queue(), mp.Event()
    proc = mp.Process(target=serve, args=(args.files, args.size, args.latency_ms / 1000, queue, stop), daemon=True)
    proc.start()
    url = queue.get(timeout=60)
    urls = [f"{url}/img/{i:06d}.jpg" for i in range(args.files)]
    times: dict[int, list[float]] = {1: [], args.workers: []}
    try:
        for _ in range(args.repeats):
            for workers in times:
                out = Path(tempfile.mkdtemp())
                t0 = time.perf_counter()
                fetch_many(urls, out, workers=workers, retries=0)
                times[workers].append(time.perf_counter() - t0)
                shutil.rmtree(out)
                print(f"workers={workers}: {times[workers][-1]:.2f} s", flush=True)
    finally:
        stop.set()
        proc.join(5)
    one, many = statistics.median(times[1]), statistics.median(times[args.workers])
    print(
        f"median over {args.repeats}: 1 connection {one:.2f} s, {args.workers} connections {many:.2f} s, "
        f"speed-up {one / many:.1f}x (target >= 5x; {args.files} files of {args.size} B, "
        f"{args.latency_ms:g} ms simulated latency)"
    )


if __name__ == "__main__":
    main()
