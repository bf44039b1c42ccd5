"""Cost of the embedding leakage on one core (threads pinned to 1 before numpy loads), at the paper's sizes.

The attacker of rule amplification's ``leakage_embedding`` (:func:`biastransfer.stats.prediction_bias.
embedding_leakage`): 5-fold cross-fitted logistic regression on the standardised embedding of 5,000 test
images x 2,048 features (a ResNet-50's width) with its 1,000-replicate bootstrap, on the leading 256
principal components fitted inside each fold (the default, ``analysis.predictions.embedding_components``)
and on the whole embedding (``embedding_components: 0``), with each one's estimate on the same data; and
reading one such embedding file (the job reads each twice: checked, then used). The embedding is
non-negative features of 64 latent factors, one of them shifted with the attribute.

Medians of ``--repeats`` runs; the load average before and after says whether the CPU was shared.
Writes benchmarks/results/embedding_leakage.json (a record; benchmarks/render_benchmarks.py renders it).
Run: PYTHONPATH=workflow/scripts .venv/bin/python benchmarks/bench_embedding_leakage.py [--repeats 3]
"""

from __future__ import annotations

import os

from render_benchmarks import median_time, pin_threads, record_arguments, write_timed_record  # benchmarks/

pin_threads()

import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from biastransfer.embeddings import read_embeddings, write_embeddings  # noqa: E402
from biastransfer.stats.amplification import Evaluation  # noqa: E402
from biastransfer.stats.prediction_bias import Settings, embedding_leakage  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "embedding_leakage.json"
TITLE = "Embedding leakage: the cross-fitted attacker on a network's embedding of the test split, one core"
N, DIM, FACTORS, REPLICATES, FOLDS = 5000, 2048, 64, 1000, 5


def data(seed: int = 0) -> tuple[Evaluation, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, N)
    factors = rng.normal(size=(N, FACTORS))
    factors[:, 0] += 0.8 * a
    mixing = rng.normal(size=(FACTORS, DIM)) / np.sqrt(FACTORS)
    features = np.maximum(factors @ mixing + 0.5 * rng.normal(size=(N, DIM)), 0).astype(np.float32)
    ev = Evaluation("bench", ("man", "woman"), ("task",), np.eye(2, dtype=np.int8)[a], np.zeros((N, 1), np.int8), 0)
    return ev, features


def _result(r) -> str:
    return f"{r.estimate:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}]"


def main(argv: list[str] | None = None) -> int:
    args = record_arguments(__doc__.splitlines()[0], RESULTS, argv)
    from threadpoolctl import threadpool_limits

    load_before = os.getloadavg()[0]
    ev, features = data()
    projected = Settings(bootstrap=REPLICATES, folds=FOLDS)
    whole = Settings(bootstrap=REPLICATES, folds=FOLDS, embedding_components=0)
    with threadpool_limits(1), tempfile.TemporaryDirectory() as tmp:
        pca, pca_result = median_time(lambda: embedding_leakage(ev, features, projected), args.repeats)
        full, full_result = median_time(lambda: embedding_leakage(ev, features, whole), args.repeats)
        path = Path(tmp) / "ft-bench-seed0.embedding.parquet"
        write_embeddings(path, [f"i{k}" for k in range(N)], ["test"] * N, features, {})
        read, _ = median_time(lambda: read_embeddings(path), args.repeats)
        size = path.stat().st_size
    what = f"{N:,} images x {DIM:,} features, {FOLDS} folds, {REPLICATES:,} bootstrap replicates"
    figures = [
        [f"embedding leakage on 256 principal components (the default; {what}), median", f"{pca:.2f} s"],
        [f"embedding leakage on the whole embedding (embedding_components: 0; {what}), median", f"{full:.2f} s"],
        [
            "balanced accuracy [95% interval] on 256 components / on the whole embedding",
            f"{_result(pca_result)} / {_result(full_result)}",
        ],
        [f"reading one {N:,} x {DIM:,} embedding file ({size / 1e6:.0f} MB, zstd), median", f"{read:.2f} s"],
    ]
    write_timed_record(args, __file__, TITLE, figures, load_before)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
