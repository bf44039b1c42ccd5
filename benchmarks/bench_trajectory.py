"""What a trajectory point costs: embedding the analysis set(s) after an epoch, as a fraction of that
epoch's time (training plus validation), measured in the same run.

Demo (measured): the demo's sizes and settings (config/config.yaml: its resnet18 at 64 px, 1,000
training and 300 validation images, 13 x 40 = 520 analysis images, batch 64, one loader worker, two
torch threads as the finetune job has), trained with the workflow's own loop and a
:class:`~biastransfer.train.trajectory.TrajectoryWriter` as its ``after_epoch``; per epoch the
writer's time over the epoch's, and the median over epochs (target <= 0.20); also the whole run's
ratio, since the first point decodes the images that the others reuse. Images are noise PNGs of
the demo's size: the cost does not depend on what they show.

Demo statistics (measured): the one trajectory job of the demo (3 seeds x 5 epochs and the pretrained
network, 520 x 512 embeddings, the demo's iEAT tests and BTS lists, analysis.trajectory's counts)
against the per-stage similarity and iEAT of one network at the main counts (the rules similarity and
ieat), on random embeddings of the demo's shape: the cost does not depend on their values.

Paper (an estimate): the per-image time of a resnet50 forward pass (eval, as extraction runs it) and
of a training step (forward, BCE, backward, SGD) at 224 px on pre-made tensors, medians of alternating
single batches; then (206 + 1,925 analysis images) x forward over (training images x step + validation
images x forward) for COCO (train2017 118,287 / val2017 5,000) and Open Images (1,743,042 / 41,620),
the split sizes config/paper.yaml uses (target <= 0.10). JPEG decoding is left out on both sides.

    python benchmarks/bench_trajectory.py [--epochs 4] [--rounds 3] [--batch 16] [--skip-paper]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import yaml
from PIL import Image
from torch import nn

from biastransfer.data.manifest import write_manifest
from biastransfer.data.splits import Split
from biastransfer.embeddings import EmbeddingTable
from biastransfer.hashing import file_digest
from biastransfer.models.extractors import create_classifier
from biastransfer.models.resolve import model_spec, resolve_spec
from biastransfer.stats.results import ieat_table, similarity_table
from biastransfer.stats.trajectory import trajectory_table
from biastransfer.train.config import TrainConfig
from biastransfer.train.data import ImageLabelDataset
from biastransfer.train.loop import train_classifier
from biastransfer.train.trajectory import TrajectoryWriter

ROOT = Path(__file__).resolve().parents[1]
CLASSES = ("person", "car", "surfboard", "refrigerator", "stop_sign")
PAPER_ANALYSIS = {"coco": 206, "openimages": 1925}
PAPER_SPLITS = {"coco": (118_287, 5_000), "openimages": (1_743_042, 41_620)}


def noise_pngs(folder: Path, prefix: str, n: int, size: int, rng) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        path = folder / f"{prefix}{i:05d}.png"
        Image.fromarray(rng.integers(0, 256, size=(size, size, 3), dtype=np.uint8)).save(path)
        paths.append(str(path))
    return paths


def split_of(paths: list[str], name: str, rng) -> Split:
    labels = [[c for c in CLASSES if rng.random() < 0.3] for _ in paths]
    return Split(
        "bench",
        name,
        CLASSES,
        pd.DataFrame({"image_id": [Path(p).stem for p in paths], "path": paths, "labels": labels}),
    )


def demo_benchmark(args, tmp: Path) -> None:
    demo = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    target = demo["datasets"]["synthetic_target"]
    aset = demo["analysis_sets"]["synthetic"]
    entry = demo["models"]["democnn"]
    rng = np.random.default_rng(0)
    size = target["size"]
    train = split_of(noise_pngs(tmp / "train", "t", target["n_train"], size, rng), "train", rng)
    val = split_of(noise_pngs(tmp / "val", "v", target["n_val"], size, rng), "val", rng)
    n_analysis = aset["n_per_class"] * len(aset["classes"])
    paths = noise_pngs(tmp / "analysis", "a", n_analysis, aset["size"], rng)
    classes = [aset["classes"][i % len(aset["classes"])] for i in range(n_analysis)]
    write_manifest(
        tmp / "manifest.parquet",
        pd.DataFrame(
            {
                "image_id": [Path(p).stem for p in paths],
                "class": classes,
                "path": paths,
                "sha256": [file_digest(p) for p in paths],
                "source_split": "bench",
                "source": "noise",
                "reason": "bench",
            }
        ),
    )
    spec = model_spec("democnn", entry)
    hyper = {**demo["finetune"]["defaults"], "epochs": args.epochs}
    workers = demo["finetune"]["num_workers"]
    torch.set_num_threads(workers + 1)
    cfg = TrainConfig(**hyper, seed=0, num_workers=workers)
    writer = TrajectoryWriter(
        spec,
        {"synthetic": str(tmp / "manifest.parquet")},
        {"synthetic": str(tmp / "out")},
        range(1, args.epochs + 1),
        tmp / "staging",
        batch_size=demo["analysis"]["embed"]["batch_size"],
        num_workers=workers,
        device=torch.device("cpu"),
        log=lambda _: None,
    )
    embed_seconds = []

    def timed(epoch, model):
        tic = time.perf_counter()
        writer(epoch, model)
        embed_seconds.append(time.perf_counter() - tic)

    torch.manual_seed(0)
    model = create_classifier(spec, len(CLASSES), None)
    result = train_classifier(
        model,
        ImageLabelDataset(train, spec.preprocess.transform(train=True)),
        ImageLabelDataset(val, spec.preprocess.transform(train=False)),
        cfg,
        log=lambda _: None,
        after_epoch=timed,
    )
    epoch_seconds = [r.seconds for r in result.history]
    ratios = [e / t for e, t in zip(embed_seconds, epoch_seconds)]
    print(
        f"Demo: {spec.name} ({spec.arch}) at {size} px, {len(train.frame)} train / {len(val.frame)} val images, "
        f"{n_analysis} analysis images, {torch.get_num_threads()} torch threads, {workers} loader worker(s), "
        f"{args.epochs} epochs:"
    )
    print(f"  epoch (train + validation) s: {' '.join(f'{s:.2f}' for s in epoch_seconds)}")
    print(f"  trajectory point s:           {' '.join(f'{s:.2f}' for s in embed_seconds)}")
    ratio = statistics.median(ratios)
    print(
        f"median: epoch {statistics.median(epoch_seconds):.2f} s, trajectory point {statistics.median(embed_seconds):.2f} s, "
        f"median ratio {ratio:.3f} ({'OK' if ratio <= 0.20 else 'too slow'}: target <= 0.20)"
    )
    total = sum(embed_seconds) / sum(epoch_seconds)
    print(
        f"whole run: trajectory {sum(embed_seconds):.2f} s over epochs {sum(epoch_seconds):.2f} s, ratio {total:.3f} "
        f"(the first point also decodes the analysis images, which later points reuse from memory)"
    )


def demo_statistics(args) -> None:
    demo = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    aset = demo["analysis_sets"]["synthetic"]
    n = aset["n_per_class"]
    rng = np.random.default_rng(0)

    def table() -> EmbeddingTable:
        classes = np.repeat(aset["classes"], n)
        return EmbeddingTable(
            np.array([f"i{k}" for k in range(len(classes))]),
            classes,
            rng.normal(size=(len(classes), 512)).astype(np.float32),
        )

    seeds, epochs = demo["finetune"]["seeds"], demo["finetune"]["defaults"]["epochs"]
    pretrained = table()
    runs = {e: {s: table() for s in seeds} for e in range(1, epochs + 1)}
    main_ieat = {"permutations": 100_000, "bootstrap": 2000, "alternative": "greater", "method": "auto", "seed": 0}
    traj = {"permutations": 1000, "bootstrap": 200}
    tic = time.perf_counter()
    similarity_table(pretrained)
    ieat_table(pretrained, aset["ieat"], **main_ieat)
    stage = time.perf_counter() - tic
    tic = time.perf_counter()
    trajectory_table(
        pretrained,
        runs,
        tests=aset["ieat"],
        lists=aset["bts"],
        similarity={"method": "exact"},
        ieat={**main_ieat, **traj},
        bts={"pvalue": "permutation", "bootstrap": traj["bootstrap"], "ci_level": 0.95, "seed": 0},
    )
    job = time.perf_counter() - tic
    print(
        f"Demo statistics: the trajectory job ({len(seeds)} seeds x {epochs} epochs + pretrained, "
        f"{traj['permutations']} permutations, {traj['bootstrap']} bootstrap replicates) took {job:.1f} s; one "
        f"stage's similarity + iEAT at the main counts took {stage:.1f} s (ratio {job / stage:.1f})"
    )


def paper_estimate(args) -> None:
    spec = resolve_spec("bench_resnet50", {"source": "torchvision", "arch": "resnet50", "weights": None})
    torch.manual_seed(0)
    model = create_classifier(spec, 80, None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.BCEWithLogitsLoss()
    x = torch.randn(args.batch, 3, 224, 224)
    y = (torch.rand(args.batch, 80) < 0.04).float()

    def forward() -> float:
        model.eval()
        tic = time.perf_counter()
        with torch.inference_mode():
            model.backbone(x)
        return (time.perf_counter() - tic) / args.batch

    def step() -> float:
        model.train()
        tic = time.perf_counter()
        loss = loss_fn(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return (time.perf_counter() - tic) / args.batch

    forward(), step()
    fwd, stp = [], []
    for _ in range(args.rounds):
        fwd.append(forward())
        stp.append(step())
    t_fwd, t_step = statistics.median(fwd), statistics.median(stp)
    print(
        f"Paper sizes (ESTIMATE from per-image times): resnet50 at 224 px, batch {args.batch}, "
        f"{torch.get_num_threads()} torch threads, {args.rounds} alternating batches each:"
    )
    print(
        f"  forward s/image: {' '.join(f'{v:.4f}' for v in fwd)}; training step s/image: {' '.join(f'{v:.4f}' for v in stp)}"
    )
    print(
        f"median: forward {t_fwd * 1000:.1f} ms/image, training step {t_step * 1000:.1f} ms/image "
        f"(step / forward {t_step / t_fwd:.2f})"
    )
    n_embed = sum(PAPER_ANALYSIS.values())
    for dataset, (n_train, n_val) in PAPER_SPLITS.items():
        embed = n_embed * t_fwd
        epoch = n_train * t_step + n_val * t_fwd
        print(
            f"  finetuning on {dataset} ({n_train:,} train + {n_val:,} val): a trajectory point embeds "
            f"{n_embed:,} images in {embed / 60:.1f} min, an epoch takes {epoch / 3600:.1f} h: ratio "
            f"{embed / epoch:.4f} ({'OK' if embed / epoch <= 0.10 else 'too slow'}: target <= 0.10)"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=4, help="demo epochs to time")
    ap.add_argument("--rounds", type=int, default=3, help="alternating resnet50 batches of each kind")
    ap.add_argument("--batch", type=int, default=16, help="resnet50 batch size")
    ap.add_argument("--skip-paper", action="store_true", help="only the demo part")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        demo_benchmark(args, Path(tmp))
    demo_statistics(args)
    if not args.skip_paper:
        paper_estimate(args)


if __name__ == "__main__":
    main()
