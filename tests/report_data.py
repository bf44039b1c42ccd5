"""Small fixed result tables in the summary formats (docs/formats.md) for the report tests.

Two analysis sets (``coco`` with 6 classes, ``openimages`` with 5), two models, finetuning on
``coco`` (3 seeds) and ``openimages`` (1 seed); BTS rows are computed from the similarity rows with
scipy, so figures and tables can be checked against them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import false_discovery_control, spearmanr

from biastransfer.report.formatting import LABEL_COLUMNS

MODELS = ("resnet18", "bit_m_r50x1")
FINETUNE = {"coco": (0, 1, 2), "openimages": (0,)}
CLASSES = {
    "coco": ("man", "woman", "car", "car_man", "car_woman", "random"),
    "openimages": ("man", "woman", "car", "fashion", "random"),
}
PAIRS = {
    "coco": ("car_man|car", "car_woman|car", "car|random", "man|woman"),
    "openimages": ("car|man", "car|woman", "fashion|woman", "car|random", "fashion|random"),
}
IEAT_TESTS = {"coco": (("car", "random"),), "openimages": (("car", "fashion"), ("fashion", "random"))}


def stages(analysis_set: str, model: str):
    """The label columns of each network's rows: the pretrained one, then every finetuning seed."""
    where = dict(analysis_set=analysis_set, model=model)
    yield dict(where, stage="pretrained", finetune_dataset="", seed="")
    for dataset, seeds in FINETUNE.items():
        for seed in seeds:
            yield dict(where, stage=f"ft-{dataset}-seed{seed}", finetune_dataset=dataset, seed=str(seed))


def similarity_table() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    rows = []
    for analysis_set in CLASSES:
        for model in MODELS:
            base_intra = rng.uniform(0.2, 0.8, len(CLASSES[analysis_set]))
            base_inter = rng.uniform(0.1, 0.6, len(PAIRS[analysis_set]))
            for where in stages(analysis_set, model):
                pretrained = where["stage"] == "pretrained"
                shift = 0.0 if pretrained else 0.05
                for kind, keys, base in (
                    ("intra", CLASSES[analysis_set], base_intra),
                    ("inter", PAIRS[analysis_set], base_inter),
                ):
                    noise = 0.0 if pretrained else rng.normal(0, 0.12, len(keys))
                    for key, value in zip(keys, base + shift + noise):
                        p, q = key.split("|") if kind == "inter" else ("", "")
                        rows.append(
                            dict(
                                where,
                                kind=kind,
                                key=key,
                                class_p=p,
                                class_q=q,
                                value=value,
                                se=0.01,
                                n=10,
                                method="exact",
                            )
                        )
    return pd.DataFrame(rows)


def _holm(p: np.ndarray) -> np.ndarray:
    order = np.argsort(p)
    m = len(p)
    adjusted = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adjusted
    return out


def bts_table(similarity: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (analysis_set, model, kind), part in similarity.groupby(["analysis_set", "model", "kind"], sort=False):
        pre = part[part["stage"] == "pretrained"].set_index("key")["value"]
        for dataset, seeds in FINETUNE.items():
            ft = part[part["finetune_dataset"] == dataset]
            for seed in [str(s) for s in seeds] + ["pooled"]:
                values = (
                    ft.groupby("key")["value"].mean()
                    if seed == "pooled"
                    else ft[ft["seed"] == seed].set_index("key")["value"]
                )
                result = spearmanr(pre.to_numpy(), values.loc[pre.index].to_numpy())
                rows.append(
                    dict(
                        analysis_set=analysis_set,
                        model=model,
                        stage=f"ft-{dataset}",
                        finetune_dataset=dataset,
                        seed=seed,
                        kind=kind,
                        statistic=result.statistic,
                        pvalue=result.pvalue,
                        n=len(pre),
                        pvalue_method="asymptotic",
                        pvalue_t=result.pvalue,
                        pvalue_floor=0.0,
                        ci_low=result.statistic - 0.2,
                        ci_high=min(1.0, result.statistic + 0.2),
                        ci_level=0.95,
                        bootstrap=200,
                    )
                )
    table = pd.DataFrame(rows)
    table["pvalue_holm"] = np.nan
    table["pvalue_bh"] = np.nan
    for _, index in table.groupby(["analysis_set", "kind"]).groups.items():
        p = table.loc[index, "pvalue"].to_numpy()
        table.loc[index, "pvalue_holm"] = _holm(p)
        table.loc[index, "pvalue_bh"] = false_discovery_control(p)
    return table


def ieat_table() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    rows = []
    for analysis_set, tests in IEAT_TESTS.items():
        for model in MODELS:
            for where in stages(analysis_set, model):
                for a, b in tests:
                    d = rng.uniform(-0.5, 1.2)
                    rows.append(
                        dict(
                            where,
                            test=f"{a}-{b}",
                            X="man",
                            Y="woman",
                            A=a,
                            B=b,
                            effect_size=d,
                            statistic=d / 10,
                            pvalue=float(np.clip(0.5 - d / 2.5, 1e-4, 1)),
                            pvalue_se=0.001,
                            method="permutation",
                            pvalue_two_sided=float(np.clip(1 - abs(d) / 1.25, 1e-4, 1)),
                            pvalue_floor=1e-4,
                            ci_low=d - 0.4,
                            ci_high=d + 0.4,
                            ci_level=0.95,
                            bootstrap=200,
                            mean_difference=0.05 * d,
                            pooled_sd=0.05,
                            detectable_d=1.1,
                            detectable_alpha=0.05,
                            detectable_power=0.8,
                            alternative="greater",
                            permutations=10000,
                            n_x=10,
                            n_y=10,
                            n_a=10,
                            n_b=10,
                        )
                    )
    table = pd.DataFrame(rows)
    table["pvalue_holm"] = _holm(table["pvalue"].to_numpy())
    table["pvalue_bh"] = false_discovery_control(table["pvalue"].to_numpy())
    return table


def finetune_metrics() -> pd.DataFrame:
    rows = []
    for model in MODELS:
        for dataset, seeds in FINETUNE.items():
            metric = "mAP" if dataset == "coco" else "micro_f1"
            for seed in seeds:
                rows.append(
                    dict(
                        dataset=dataset,
                        model=model,
                        seed=seed,
                        epoch_best=3,
                        metric_name=metric,
                        metric_value=0.6 + 0.01 * seed,
                        epochs=25,
                        lr=0.001,
                        batch_size=32,
                        optimizer="sgd",
                        scheduler="reduce_on_plateau",
                    )
                )
    return pd.DataFrame(rows)


def analysis_sets() -> pd.DataFrame:
    return pd.DataFrame(
        [
            dict(analysis_set=s, dataset=s, **{"class": c}, n=10 + i)
            for s, classes in CLASSES.items()
            for i, c in enumerate(classes)
        ]
    )


def _finetuned_change(table: pd.DataFrame, keys: list, value: str, names: tuple, half: float) -> pd.DataFrame:
    """The finetuned rows of ``table`` with the pretrained row's ``value`` (matched on ``keys``), their own and the
    change (columns ``names``), a +-``half`` interval and p at its floor where the change exceeds ``half``: the
    label columns (the report's LABEL_COLUMNS but those of one network's test: stage, method, alternative),
    ``names`` and the interval's columns."""
    before, after, delta = names
    pre = table[table["stage"] == "pretrained"].set_index(keys)[value]
    ft = table[table["stage"] != "pretrained"].copy()
    ft[before] = [pre[k] for k in zip(*(ft[c] for c in keys))]
    ft[after] = ft[value]
    ft[delta] = ft[after] - ft[before]
    ft = ft.assign(
        ci_low=ft[delta] - half, ci_high=ft[delta] + half, ci_level=0.95, bootstrap=2000, pvalue_floor=2 / 2001
    )
    ft["pvalue"] = np.where(ft[delta].abs() > half, ft["pvalue_floor"], 0.5)
    labels = [c for c in LABEL_COLUMNS if c in ft and c not in ("stage", "method", "alternative")]
    return ft[[*labels, *names, "ci_low", "ci_high", "pvalue", "pvalue_floor", "ci_level", "bootstrap"]]


def ieat_change(ieat: pd.DataFrame) -> pd.DataFrame:
    """delta d of every finetuned iEAT row against its pretrained row, with a +-0.3 interval."""
    return _finetuned_change(
        ieat, ["analysis_set", "model", "test"], "effect_size", ("d_pretrained", "d_finetuned", "delta_d"), 0.3
    )


def similarity_change(similarity: pd.DataFrame) -> pd.DataFrame:
    """The change of every finetuned similarity row from its pretrained row, with a +-0.02 interval."""
    keys = ["analysis_set", "model", "kind", "key"]
    return _finetuned_change(similarity, keys, "value", ("value_pretrained", "value_finetuned", "delta"), 0.02)


def write_run_files(root, analysis_set: str = "coco", dataset: str = "coco", model: str = "resnet18") -> None:
    """Under ``root``: the analysis set's manifest with tiny PNG images, every seed's training curve
    and metrics of ``model`` finetuned on ``dataset`` and one scratch reference network's metrics (what
    the contact sheet and curve figures read)."""
    import json
    from pathlib import Path

    from PIL import Image

    from biastransfer.data.manifest import write_manifest

    root = Path(root)
    rows = []
    for c, cls in enumerate(CLASSES[analysis_set]):
        for i in range(3):
            path = Path("results/data/analysis") / analysis_set / f"{cls}-{i}.png"
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (24, 24), (40 * c % 256, 80 * i, 120)).save(root / path)
            rows.append(
                dict(
                    image_id=f"{cls}-{i}",
                    **{"class": cls},
                    path=str(path),
                    sha256=f"{c:02d}{i:062d}",
                    source_split="val",
                    source=f"http://example.org/{cls}-{i}.png (CC BY 4.0)",
                    reason="test",
                )
            )
    write_manifest(root / "results" / "analysis_sets" / analysis_set / "manifest.parquet", pd.DataFrame(rows))
    for seed in FINETUNE[dataset]:
        run = root / "results" / "finetune" / dataset / model / f"seed{seed}"
        run.mkdir(parents=True, exist_ok=True)
        epochs = np.arange(1, 5)
        pd.DataFrame(
            {
                "epoch": epochs,
                "train_loss": 1 / epochs + 0.01 * seed,
                "val_loss": 1.1 / epochs,
                "metric": 0.5 + 0.1 * epochs,
                "lr": 0.01,
            }
        ).to_csv(run / "curve.csv", index=False)
        (run / "metrics.json").write_text(json.dumps({"metric_name": "mAP", "epoch_best": 4, "seed": seed}))
    scratch = (
        root / "results" / "scratch" / dataset / model / "seed0"
    )  # a scratch reference keeps its curve in metrics.json
    scratch.mkdir(parents=True, exist_ok=True)
    history = [
        {"epoch": e, "train_loss": 2 / e, "val_loss": 2.2 / e, "metric": 0.1 * e, "lr": 0.01} for e in range(1, 4)
    ]
    (scratch / "metrics.json").write_text(
        json.dumps({"metric_name": "mAP", "epoch_best": 3, "seed": 0, "history": history})
    )


def scratch_ieat(ieat: pd.DataFrame) -> pd.DataFrame:
    """The scratch reference networks' iEATs (seed 0 of each finetuning dataset): the pretrained rows, restaged."""
    pre = ieat[ieat["stage"] == "pretrained"]
    return pd.concat(
        [
            pre.assign(stage=f"scratch-{d}-seed0", finetune_dataset=d, seed="0", effect_size=pre["effect_size"] / 2)
            for d in FINETUNE
        ],
        ignore_index=True,
    )


def cka_rows(images: int = 12, dims: int = 8, seed: int = 0) -> pd.DataFrame:
    """The CKA summary: :func:`~biastransfer.stats.results.cka_table` on random embeddings of each analysis set
    and model, each finetuned seed the pretrained one with its own noise."""
    from biastransfer.embeddings import EmbeddingTable
    from biastransfer.stats.results import cka_table

    rng, parts = np.random.default_rng(seed), []
    ids, classes = np.array([f"i{n}" for n in range(images)]), np.array(["c"] * images)
    for analysis_set in CLASSES:
        for model in MODELS:
            base = rng.normal(size=(images, dims))
            networks = {
                f"ft-{d}-seed{s}": EmbeddingTable(ids, classes, base + rng.normal(0, 0.5, base.shape))
                for d, seeds in FINETUNE.items()
                for s in seeds
            }
            table = cka_table(EmbeddingTable(ids, classes, base), networks)
            parts.append(table.assign(analysis_set=analysis_set, model=model))
    return pd.concat(parts, ignore_index=True)


#: The summaries :func:`write_all` writes.
SUMMARY_NAMES = (
    "ieat_scratch",
    "similarity",
    "bts",
    "cka",
    "similarity_change",
    "ieat",
    "ieat_change",
    "finetune_metrics",
    "analysis_sets",
)


def write_all(folder) -> dict[str, str]:
    """Write the nine summary CSVs into ``folder``; return their paths by name."""
    similarity = similarity_table()
    ieat = ieat_table()
    frames = {
        "ieat_scratch": scratch_ieat(ieat),
        "similarity": similarity,
        "bts": bts_table(similarity),
        "cka": cka_rows(),
        "similarity_change": similarity_change(similarity),
        "ieat": ieat,
        "ieat_change": ieat_change(ieat),
        "finetune_metrics": finetune_metrics(),
        "analysis_sets": analysis_sets(),
    }
    assert tuple(frames) == SUMMARY_NAMES
    paths = {}
    for name, frame in frames.items():
        path = folder / f"{name}.csv"
        frame.to_csv(path, index=False)
        paths[name] = str(path)
    return paths
