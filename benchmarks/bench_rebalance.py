"""Speed and memory of an intervention's rebalancing at Open Images' training size (target: under 30 s and 2 GB).

Synthetic data of the real shape: 1,743,042 training images (Open Images V4's train split), 601 classes whose
frequencies fall off as a power law, 1 + Poisson(5) labels per image in CSR form (the labels as
biastransfer.train.data.ImageLabelDataset holds them), a protected attribute on 45% of the images, skewed
beside each object (its share of the first value drawn uniformly in [0.2, 0.8]). The rebalancing is
:func:`biastransfer.data.rebalance.rebalance` for 20 objects (the paper's iEAT objects number fewer) and for
100, each to ``independent`` by ``subsample`` and by ``reweight``. Medians of ``--repeats`` runs; the peak of
the memory Python allocators report (tracemalloc, numpy's included) during one call, and the process's
peak resident size.

Writes benchmarks/results/rebalance.json (a record; benchmarks/render_benchmarks.py renders it).
Run: PYTHONPATH=workflow/scripts python benchmarks/bench_rebalance.py [--repeats 3]
"""

from __future__ import annotations

import os
import resource
import tracemalloc
from pathlib import Path

import numpy as np
from render_benchmarks import median_time, record_arguments, write_timed_record  # benchmarks/

from biastransfer.data.rebalance import Labels, rebalance

RESULTS = Path(__file__).resolve().parent / "results" / "rebalance.json"
TITLE = "Interventions: rebalancing 1.74M Open Images-sized training rows (601 classes, CSR labels)"
N_IMAGES, N_CLASSES = 1_743_042, 601
ATTRS = ("man", "woman")


def data(seed: int = 0) -> tuple[Labels, np.ndarray]:
    """CSR labels and attribute codes of the benchmark's split."""
    rng = np.random.default_rng(seed)
    counts = 1 + rng.poisson(5, N_IMAGES)
    frequency = 1.0 / np.arange(1, N_CLASSES + 1) ** 0.8
    index = rng.choice(N_CLASSES, size=int(counts.sum()), p=frequency / frequency.sum()).astype(np.int32)
    start = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
    labels = Labels(tuple(f"class{i:03d}" for i in range(N_CLASSES)), index, start)
    # the attribute leans by the image's first label: a skew beside every object
    lean = rng.uniform(0.2, 0.8, N_CLASSES)[index[start[:-1]]]
    codes = np.where(rng.random(N_IMAGES) < lean, 0, 1).astype(np.int8)
    codes[rng.random(N_IMAGES) >= 0.45] = -1
    return labels, codes


def timed(fn, repeats: int) -> tuple[float, float, object]:
    """(median seconds, peak traced MB of one call, the last result)."""
    median, out = median_time(fn, repeats)
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return median, peak, out


def main(argv: list[str] | None = None) -> int:
    args = record_arguments(__doc__.splitlines()[0], RESULTS, argv)
    load_before = os.getloadavg()[0]
    labels, codes = data()
    figures = [["images / classes / label entries", f"{N_IMAGES:,} / {N_CLASSES} / {len(labels.index):,}"]]
    for n_objects in (20, 100):
        objects = [f"class{i:03d}" for i in range(10, 10 + n_objects)]  # common, but not the commonest
        for method in ("subsample", "reweight"):
            median, peak, out = timed(
                lambda objects=objects, method=method: rebalance(
                    labels, codes, ATTRS, objects, target="independent", method=method, seed=0
                ),
                args.repeats,
            )
            shown = out.table[out.table["when"] == "after"]
            error = float((shown["share"] - shown["target"]).abs().max())
            figures.append([f"{n_objects} objects, independent, {method}: median time", f"{median:.2f} s"])
            figures.append([f"{n_objects} objects, {method}: peak allocated during one call", f"{peak:.0f} MB"])
            figures.append(
                [
                    f"{n_objects} objects, {method}: largest share error after / images kept",
                    f"{error:.2g} / {int(out.keep.sum()):,}",
                ]
            )
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    figures.append(["peak resident size of the whole benchmark process (data included)", f"{rss:.0f} MB"])
    write_timed_record(args, __file__, TITLE, figures, load_before, pinned=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
