"""What a configured run will cost before it starts: downloads, disk, CPU-hours, GPU-hours, wall time.

Counts come from the config (datasets, subsets, analysis sets, models, seeds, epochs) and from
``resources/costs/datasets.csv`` (images and bytes per image of each real dataset's splits, with
sources); per-image compute from ``resources/costs/models.csv`` (``benchmarks/bench_costs.py``: a
training step and an inference forward per image, by model and device) and ``resources/costs/input.csv``
(``benchmarks/bench_input.py``: CPU-seconds per image to decode and augment the originals, to build the
cache and to read it; bytes per cached image) and ``resources/costs/methods.csv`` (``benchmarks/bench_methods.py``:
each mitigation method's epoch against plain finetuning's). A GPU figure is used where the models table has a
``cuda`` row; otherwise the finetuning and embedding hours are the CPU figure's, marked ``cpu`` in the
``basis`` column, and no GPU wall time is given for them. A model without any row (a zoo model) takes
resnet50's figure scaled by its parameter count (``about.params_m``), marked ``scaled``.

Families: ``download`` (images of the splits and analysis sets, weights), ``image_cache`` (one build
per dataset and resize setting), ``finetune`` (training steps, validation forwards, and the input
pipeline's CPU work; each mitigation arm on a row of its own: a method trained over epochs costs its
measured ratio of plain finetuning's training compute, DFR and LEACE one pass over the training and
validation images), ``embed`` (every analysis image through every stage), ``predict`` (every
evaluation image through every finetuned and scratch network: one forward pass and one decode of the
original each; :func:`predict_share` compares it with one finetuning epoch). Wall time for ``gpus``
GPUs and ``cores`` cores: the cache builds on all cores, then each finetuning family is bound by its
GPU work over the GPUs or its input pipeline over the cores, whichever is longer, then the embeddings
and the predictions.
Downloads are not timed (they depend on the network).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from biastransfer.vocabulary import HEAD_ONLY_METHODS
from biastransfer.workflow.config import evaluation_is_val, fill_defaults, finetune_params
from biastransfer.workflow.plan import Plan

#: The workflow's folder: the cost tables' and the plan's (:class:`~biastransfer.workflow.plan.Plan`).
WORKFLOW = Path(__file__).resolve().parents[2]
COSTS = WORKFLOW / "resources" / "costs"
INPUT_SIZE = {"openimages": "1024x768"}  # every other kind: COCO-like (640x480, an upper bound for small images)
CHECKPOINT_COPIES = 1  # model.safetensors per run; the resume state (about 3x) exists only while the run lasts
COLUMNS = ("family", "model", "images", "download_bytes", "disk_bytes", "cpu_h", "gpu_h", "basis")


def plan_of(config: Mapping) -> Plan:
    """The workflow's plan of ``config``, written or already filled: a copy filled with the schema's defaults
    (``fill_defaults``; ConfigError naming every problem), so that the estimate reads each setting as the run
    does."""
    return Plan(fill_defaults(copy.deepcopy(dict(config))), WORKFLOW)


def _tables(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    return tuple(pd.read_csv(folder / f"{name}.csv") for name in ("models", "input", "datasets"))


def split_images(name: str, dataset: Mapping, facts: pd.DataFrame) -> dict[str, tuple[int, float]]:
    """{split: (images, bytes per image)} of a dataset's finetuning splits."""
    kind = dataset["kind"]
    if kind == "synthetic":
        size = dataset["size"]
        return {s: (dataset[f"n_{s}"], size * size * 1.5) for s in ("train", "val")}  # small PNGs, made here
    rows = facts[facts["kind"] == kind].set_index("split")
    if rows.empty:
        raise ValueError(f"dataset {name!r}: no image counts for kind {kind!r} in resources/costs/datasets.csv")
    out = {}
    for split in ("train", "val"):
        n = int(rows.loc[split, "images"])
        subset = dataset.get(f"{split}_subset")
        out[split] = (min(n, subset) if subset else n, float(rows.loc[split, "bytes_per_image"]))
    return out


def evaluation_images(name: str, dataset: Mapping, facts: pd.DataFrame) -> tuple[int, float, bool]:
    """(images, bytes per image, whether they are downloaded beyond the finetuning splits) of a dataset's
    evaluation split: synthetic ``n_test``; COCO val2017 (its ``evaluation.holdout``, an upper bound:
    the analysis images are left out); Open Images its test split (or ``evaluation.subset``); none when
    ``evaluation.enabled`` is false."""
    opts = dataset.get("evaluation") or {}
    kind = dataset["kind"]
    if kind == "synthetic":
        return dataset["n_test"], dataset["size"] ** 2 * 1.5, False
    if not opts.get("enabled", True):
        return 0, 0.0, False
    rows = facts[facts["kind"] == kind].set_index("split")
    if kind == "coco":
        n, per = int(rows.loc["val", "images"]), float(rows.loc["val", "bytes_per_image"])
        return (n if evaluation_is_val(dataset) else round(opts["holdout"] * n)), per, False
    if "test" not in rows.index:
        raise ValueError(
            f"dataset {name!r}: no test-split image count for kind {kind!r} in resources/costs/datasets.csv"
        )
    n = int(rows.loc["test", "images"])
    return min(n, opts.get("subset") or n), float(rows.loc["test", "bytes_per_image"]), True


def predict_share(config: Mapping, costs: Path = COSTS) -> pd.DataFrame:
    """Per model and finetuning dataset: the compute of one network's predictions on the evaluation split
    against one finetuning epoch (training steps on train, forwards on val), both from the measured
    per-image figures (``share`` = predict / epoch)."""
    config = plan_of(config).config
    models_table, _, facts = _tables(costs)
    rows = []
    for m, entry in config["models"].items():
        c = model_cost(m, entry, models_table)
        for d in config["finetune"]["datasets"]:
            entry = config["datasets"][config["datasets"][d].get("from", d)]  # an intervention: its source's
            splits = split_images(d, entry, facts)
            n_test = evaluation_images(d, entry, facts)[0]
            epoch = splits["train"][0] * c["train_s_per_image"] + splits["val"][0] * c["embed_s_per_image"]
            predict = n_test * c["embed_s_per_image"]
            rows.append(
                {
                    "model": m,
                    "dataset": d,
                    "test_images": n_test,
                    "predict_s": predict,
                    "epoch_s": epoch,
                    "share": predict / epoch,
                    "basis": c["basis"],
                }
            )
    return pd.DataFrame(rows, columns=["model", "dataset", "test_images", "predict_s", "epoch_s", "share", "basis"])


def analysis_images(analysis_set: Mapping) -> int:
    """Images of an analysis set: its curation sizes, or classes x n_per_class."""
    sizes = (analysis_set.get("curation") or {}).get("sizes")
    if sizes:
        return int(sum(sizes.values()))
    return int(analysis_set.get("n_per_class", 0)) * len(analysis_set.get("classes", []))


def model_cost(name: str, entry: Mapping, models: pd.DataFrame) -> dict:
    """Seconds per image (train step, forward), params, embedding dims and the basis of the figures."""
    by_name = models.set_index(["model", "device"])
    for device, basis in (("cuda", "gpu"), ("cpu", "cpu")):
        if (name, device) in by_name.index:
            return {**by_name.loc[(name, device)].to_dict(), "basis": basis}
    arch = entry.get("arch")
    same_arch = models[(models["arch"] == arch) & (models["source"] == entry.get("source", "torchvision"))]
    if arch and not same_arch.empty:
        row = same_arch.sort_values("device", ascending=False).iloc[0]
        return {**row.to_dict(), "basis": "gpu" if row["device"] == "cuda" else "cpu"}
    reference = by_name.loc[("resnet50", "cpu")].to_dict()
    params = (entry.get("about") or {}).get("params_m") or reference["params_m"]
    scale = params / reference["params_m"]
    return {
        **reference,
        "train_s_per_image": reference["train_s_per_image"] * scale,
        "embed_s_per_image": reference["embed_s_per_image"] * scale,
        "params_m": params,
        "basis": "scaled",
    }


def method_ratios(costs: Path = COSTS) -> dict[str, float]:
    """{method: its epoch's cost over plain finetuning's} (``methods.csv``; none recorded: every ratio 1)."""
    path = Path(costs) / "methods.csv"
    if not path.is_file():
        return {}
    table = pd.read_csv(path)
    return dict(zip(table["method"], table["epoch_ratio"].astype(float)))


def estimate(config: Mapping, costs: Path = COSTS) -> pd.DataFrame:
    """One row per family (per model for finetune and embed, and per model and mitigation arm for finetune;
    per dataset and setting for image_cache) of ``config``, written or filled (:func:`plan_of`)."""
    plan = plan_of(config)
    config = plan.config
    costs_folder = costs
    models_table, input_table, facts = _tables(costs)
    inputs = input_table.set_index("size")
    datasets = plan.finetune_datasets
    rows = []
    # an intervention or a mitigation arm trains on (at most) its source's images, which its source downloads
    entry = {d: config["datasets"][config["datasets"][d].get("from", d)] for d in datasets}
    splits = {d: split_images(d, entry[d], facts) for d in datasets}
    analysis = {a: analysis_images(s) for a, s in config["analysis_sets"].items()}
    analysis_bytes = 0.0
    for a, s in config["analysis_sets"].items():
        kind = config["datasets"].get(s.get("dataset"), {}).get("kind")
        per = facts[(facts["kind"] == kind) & (facts["split"] == "val")]["bytes_per_image"]
        analysis_bytes += analysis[a] * (float(per.iloc[0]) if len(per) else 64 * 64 * 1.5)
    real = [d for d in datasets if config["datasets"][d]["kind"] not in ("synthetic", "intervention", "mitigation")]
    tests = {d: evaluation_images(d, entry[d], facts) for d in datasets}  # an intervention's: its source's
    extra = [tests[d] for d in real if tests[d][2]]  # evaluation images outside the finetuning splits
    download_images = sum(n for d in real for n, _ in splits[d].values()) + sum(analysis.values())
    download_images += sum(n for n, _, _ in extra)
    download_bytes = sum(n * b for d in real for n, b in splits[d].values()) + analysis_bytes
    download_bytes += sum(n * b for n, b, _ in extra)
    costs = {m: model_cost(m, e, models_table) for m, e in config["models"].items()}
    weights_bytes = sum(4e6 * c["params_m"] for c in costs.values())
    rows.append(
        {
            "family": "download",
            "model": "",
            "images": download_images,
            "download_bytes": download_bytes + weights_bytes,
            "disk_bytes": download_bytes + weights_bytes,
        }
    )
    if plan.cache_on:
        for d, setting in dict.fromkeys((d, s) for s in plan.image_cache_settings.values() for d in datasets):
            row = inputs.loc[INPUT_SIZE.get(entry[d]["kind"], "640x480")]
            n = sum(k for k, _ in splits[d].values())
            rows.append(
                {
                    "family": "image_cache",
                    "model": f"{d} {setting}",
                    "images": n,
                    "disk_bytes": n * row["bytes_per_cached_image"],
                    "cpu_h": n * row["build_s_per_image"] / 3600,
                    "basis": "cpu",
                }
            )
    ratios = method_ratios(costs_folder)
    for m, c in costs.items():
        plain = [d for d in datasets if d not in plan.mitigations]
        for label, group in (
            (m, plain),
            *((f"{m} {d} ({config['datasets'][d]['method']})", [d]) for d in plan.mitigations if d in datasets),
        ):
            images = cpu = gpu = disk = 0.0
            for d in group:
                row = inputs.loc[INPUT_SIZE.get(entry[d]["kind"], "640x480")]
                decode = row["cache_s_per_image"] if plan.cache_on else row["files_s_per_image"]
                method = plan.method_of(d)["method"]
                runs = len(plan.finetune_seeds(d))
                (n_train, _), (n_val, _) = splits[d]["train"], splits[d]["val"]
                if method in HEAD_ONLY_METHODS:  # one forward over the training and validation images
                    passes, step = 1, (n_train + n_val) * c["embed_s_per_image"]
                else:
                    passes = finetune_params(config, m, d)["epochs"]
                    step = n_train * c["train_s_per_image"] * ratios.get(method, 1.0) + n_val * c["embed_s_per_image"]
                seen = runs * passes * (n_train + n_val)
                images += seen
                cpu += seen * decode / 3600
                gpu += runs * passes * step / 3600
                disk += runs * CHECKPOINT_COPIES * 4e6 * c["params_m"]
            if group:
                rows.append(
                    {
                        "family": "finetune",
                        "model": label,
                        "images": images,
                        "disk_bytes": disk,
                        "cpu_h": cpu,
                        "gpu_h": gpu,
                        "basis": c["basis"],
                    }
                )
        stages = 1 + sum(len(plan.finetune_seeds(d)) for d in datasets)
        n = stages * sum(analysis.values())
        rows.append(
            {
                "family": "embed",
                "model": m,
                "images": n,
                "disk_bytes": n * 4 * c.get("embed_dim", 2048),
                "gpu_h": n * c["embed_s_per_image"] / 3600,
                "basis": c["basis"],
            }
        )
        networks = {d: len(plan.finetune_seeds(d)) + len(plan.reference_seeds(d)) for d in datasets}
        n = sum(networks[d] * tests[d][0] for d in datasets)
        if n:
            decode = sum(
                networks[d] * tests[d][0] * inputs.loc[INPUT_SIZE.get(entry[d]["kind"], "640x480"), "files_s_per_image"]
                for d in datasets
            )
            rows.append(
                {
                    "family": "predict",
                    "model": m,
                    "images": n,
                    "disk_bytes": sum(
                        networks[d] * tests[d][0] * 4 * (_classes(entry[d]) + c.get("embed_dim", 2048))
                        for d in datasets
                    ),  # the scores and the embedding of each image
                    "cpu_h": decode / 3600,
                    "gpu_h": n * c["embed_s_per_image"] / 3600,
                    "basis": c["basis"],
                }
            )
    table = pd.DataFrame(rows, columns=COLUMNS).fillna({"download_bytes": 0, "disk_bytes": 0, "cpu_h": 0, "gpu_h": 0})
    return table.fillna({"basis": "", "model": ""})


def _classes(dataset: Mapping) -> int:
    """Classes a network of the dataset scores (one float32 each per image): COCO's 80 categories, Open
    Images' 601 boxable classes, a synthetic dataset's at most 6 labels, a table's listed classes."""
    return {"coco": 80, "openimages": 601, "synthetic": 6}.get(dataset["kind"], len(dataset.get("classes") or []))


def wall_hours(table: pd.DataFrame, gpus: int, cores: int) -> dict[str, float | None]:
    """Wall time by family for ``gpus`` GPUs and ``cores`` cores; None where a GPU figure is missing."""
    if gpus < 1 or cores < 1:
        raise ValueError(f"gpus and cores must be at least 1, got {gpus} and {cores}")
    out: dict[str, float | None] = {}
    if (table["family"] == "image_cache").any():
        out["image_cache"] = table.loc[table["family"] == "image_cache", "cpu_h"].sum() / cores
    for family in ("finetune", "embed", "predict"):
        rows = table[table["family"] == family]
        if rows.empty:
            continue
        if (rows["basis"] != "gpu").any():
            out[family] = None
        else:
            out[family] = max(rows["gpu_h"].sum() / gpus, rows["cpu_h"].sum() / cores)
    return out


def _size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return ""


def format_estimate(table: pd.DataFrame, gpus: int, cores: int, shares: pd.DataFrame | None = None) -> str:
    """The estimate as a fixed-width text table, per family and model, with totals and wall time (and the
    largest share of one finetuning epoch that one network's predictions take, from :func:`predict_share`)."""
    lines = [
        f"{'family':12s} {'model':44s} {'images':>14s} {'download':>10s} {'disk':>10s} {'CPU-h':>9s} "
        f"{'GPU-h':>9s}  basis"
    ]

    def line(family, model, r):
        gpu = f"{r['gpu_h']:9.1f}" if r["basis"] == "gpu" else f"{r['gpu_h']:8.1f}*" if r["gpu_h"] else " " * 9
        return (
            f"{family:12s} {model:44s} {r['images']:14,.0f} {_size(r['download_bytes']):>10s} "
            f"{_size(r['disk_bytes']):>10s} {r['cpu_h']:9.1f} {gpu}  {r['basis']}"
        )

    for _, r in table.iterrows():
        lines.append(line(r["family"], r["model"], r))
    for family, rows in table.groupby("family", sort=False):
        if len(rows) > 1:
            total = rows[["images", "download_bytes", "disk_bytes", "cpu_h", "gpu_h"]].sum()
            lines.append(line(family, "(all)", {**total, "basis": "gpu" if (rows["basis"] == "gpu").all() else ""}))
    total = table[["download_bytes", "disk_bytes", "cpu_h", "gpu_h"]].sum()
    lines.append(
        f"total: download {_size(total['download_bytes'])}, disk {_size(total['disk_bytes'])}, "
        f"{total['cpu_h']:.1f} CPU-h of decoding and cache building, {total['gpu_h']:.1f} h of finetuning, "
        "embedding and prediction compute"
    )
    if (table["basis"] != "gpu").any():
        lines.append(
            "* hours from CPU figures (cpu: measured here on CPU; scaled: resnet50's CPU figure x parameters): "
            "no GPU figure recorded in resources/costs/models.csv (benchmarks/bench_costs.py --device cuda)"
        )
    wall = wall_hours(table, gpus, cores)
    parts = [f"{k} {'unknown (no GPU figure)' if v is None else f'{v:.1f} h'}" for k, v in wall.items()]
    lines.append(f"wall time with {gpus} GPU(s) and {cores} cores: " + ", ".join(parts))
    if shares is not None and len(shares):
        top = shares.loc[shares["share"].idxmax()]
        lines.append(
            f"predictions of one network on its evaluation split: at most {top['share']:.1%} of one finetuning "
            f"epoch ({top['model']} on {top['dataset']}, {top['test_images']:,} images; {top['basis']} figures)"
        )
    return "\n".join(lines)
