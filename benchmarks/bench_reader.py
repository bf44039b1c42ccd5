"""Benchmark: peak memory of ``read_embeddings`` on a list<double> file against the fixed_size_list<float32> baseline.

Writes two embeddings files with the same N x D values (default 100k x 512), one with the format's
``fixed_size_list<float32>`` column and one with a ``list<double>`` column (what pandas or a user's own
code often writes), then reads each in a fresh child process per repeat and records the child's peak RSS
(VmHWM, reset after the imports) above its RSS before the read, and the wall time; the figures are
medians, and the ratio list<double> / fixed_size_list<float32> (the baseline) is the target (at most 1.5).

    .venv/bin/python benchmarks/bench_reader.py [--rows 100000] [--dims 512] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

LIBRARY = Path(__file__).resolve().parents[1] / "src"

CHILD = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from biastransfer.embeddings import read_embeddings


def status(key):
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) / 1024 for line in fh if line.startswith(key + ":"))


base = status("VmRSS")
with open("/proc/self/clear_refs", "w") as fh:  # reset the peak (VmHWM) to the current RSS
    fh.write("5")
t0 = time.perf_counter()
table = read_embeddings(sys.argv[2])
seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "peak_mb": status("VmHWM") - base, "result_mb": table.embeddings.nbytes / 2**20}))
"""


def write_files(folder: Path, rows: int, dims: int) -> dict[str, Path]:
    rng = np.random.default_rng(0)
    emb = rng.standard_normal((rows, dims), dtype=np.float32)
    ids = pa.array([f"img{i}" for i in range(rows)])
    classes = pa.array([f"class{i % 10}" for i in range(rows)])
    flat32 = pa.array(emb.reshape(-1), type=pa.float32())
    flat64 = pa.array(emb.reshape(-1).astype(np.float64), type=pa.float64())
    offsets = pa.array(np.arange(0, rows * dims + 1, dims, dtype=np.int32))
    columns = {
        "fixed_size_list<float32>": pa.FixedSizeListArray.from_arrays(flat32, dims),
        "list<double>": pa.ListArray.from_arrays(offsets, flat64),
    }
    paths = {}
    for name, column in columns.items():
        paths[name] = folder / f"{name.split('<')[0]}.parquet"
        pq.write_table(
            pa.table({"image_id": ids, "class": classes, "embedding": column}), paths[name], compression="zstd"
        )
    return paths


def measure(path: str) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, str(LIBRARY), path], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dims", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_files(Path(tmp), args.rows, args.dims)
        print(
            f"{args.rows} x {args.dims} embeddings; peak RSS of read_embeddings above the child's RSS after its "
            f"imports, medians of {args.repeats} child processes"
        )
        peaks = {}
        for name, path in paths.items():
            runs = [measure(str(path)) for _ in range(args.repeats)]
            peaks[name] = statistics.median(r["peak_mb"] for r in runs)
            seconds = statistics.median(r["seconds"] for r in runs)
            print(
                f"  {name:26s} {path.stat().st_size / 2**20:6.0f} MB on disk, result {runs[0]['result_mb']:.0f} MB, "
                f"peak {peaks[name]:6.0f} MB, {seconds:.2f} s"
            )
        ratio = peaks["list<double>"] / peaks["fixed_size_list<float32>"]
        print(f"ratio list<double> / fixed_size_list<float32>: {ratio:.2f} (target <= 1.5)")


if __name__ == "__main__":
    main()
