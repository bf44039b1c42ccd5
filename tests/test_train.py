"""Finetuning on tiny fake COCO / Open Images trees: curves, best epoch, resume, LARS, errors (CPU)."""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import Killed, die_after_resume_save
from fake_datasets import coco_splits, openimages_splits
from torch import nn

from biastransfer.data.splits import read_split
from biastransfer.models.checkpoints import load_classifier_from_checkpoint
from biastransfer.models.extractors import create_classifier
from biastransfer.models.resolve import resolve_spec
from biastransfer.provenance import workflow_provenance
from biastransfer.train import loop as tr
from biastransfer.train.config import TrainConfig
from biastransfer.train.data import EpochSampler, ImageLabelDataset
from biastransfer.train.lars import LARS, lars_param_groups
from biastransfer.train.loop import Runtime, train_classifier
from biastransfer.train.run import TrainingFiles, run_training, train_config

PRE = {"resize": 32, "crop": 32, "interpolation": "bilinear", "mean": [0.5] * 3, "std": [0.25] * 3, "train_hflip": True}
ARCHS = {"timm": "resnet10t", "torchvision": "resnet18"}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    return {"coco": coco_splits(root), "openimages": openimages_splits(root)}


def spec_of(source):
    return resolve_spec(f"tiny_{source}", {"source": source, "arch": ARCHS[source], "weights": None, "preprocess": PRE})


def datasets(data, name, spec):
    train, val = (read_split(p) for p in data[name])
    return (
        ImageLabelDataset(train, spec.preprocess.transform(train=True)),
        ImageLabelDataset(val, spec.preprocess.transform(train=False)),
    )


def model_for(spec, n, seed=0):
    torch.manual_seed(seed)
    return create_classifier(spec, n, None)


@pytest.mark.parametrize(
    "source, dataset, metric", [("timm", "coco", "mAP"), ("torchvision", "openimages", "micro_f1")]
)
def test_finetune_writes_best_checkpoint_and_curve(data, tmp_path, source, dataset, metric):
    spec = spec_of(source)
    out = tmp_path / "out"
    resume = tmp_path / "run.resume.pt"
    logs = []
    hyper = {"epochs": 2, "lr": 0.05, "batch_size": 8, "metric": metric, "threshold": 0.3}
    written = run_training(
        lambda classes: model_for(spec, len(classes)),
        spec,
        TrainingFiles(
            str(data[dataset][0]),
            str(data[dataset][1]),
            str(out / "model.safetensors"),
            str(out / "metrics.json"),
            str(out / "curve.csv"),
        ),
        train_config(hyper, 3, 0),
        resume=str(resume),
        device=torch.device("cpu"),
        threads=1,
        log=logs.append,
    )
    on_disk = json.loads((out / "metrics.json").read_text())
    assert on_disk == json.loads(json.dumps(written))
    assert on_disk["metric_name"] == metric and on_disk["seed"] == 3 and on_disk["hyper"]["lr"] == 0.05
    assert workflow_provenance().items() <= on_disk.items()
    curve = pd.read_csv(out / "curve.csv")
    assert curve["epoch"].tolist() == [1, 2]
    assert curve["train_loss"].iloc[1] < curve["train_loss"].iloc[0] < math.log(2) + 0.05  # BCE starts near ln 2
    best = int(curve["metric"].idxmax())
    assert on_disk["epoch_best"] == curve["epoch"].iloc[best]
    assert on_disk["metric_value"] == pytest.approx(curve["metric"].iloc[best])
    assert not resume.exists()  # removed once the outputs are written
    # the checkpoint is the best epoch's model: re-evaluating it gives the recorded metric
    model, meta = load_classifier_from_checkpoint(out / "model.safetensors")
    assert meta["class_names"] == list(read_split(data[dataset][0]).classes)
    _, val = datasets(data, dataset, spec)
    cfg = TrainConfig(**hyper)
    val_loss, value = tr.evaluate(model, tr.make_loader(val, cfg, torch.device("cpu")), cfg, torch.device("cpu"))
    assert value == pytest.approx(on_disk["metric_value"], abs=1e-6)
    assert val_loss == pytest.approx(curve["val_loss"].iloc[best], rel=1e-5)
    with pytest.raises(
        ValueError,
        match="checkpoint has 4 classes, 10 were requested"
        if dataset == "coco"
        else "checkpoint has 10 classes, 4 were requested",
    ):
        load_classifier_from_checkpoint(out / "model.safetensors", num_classes=10 if dataset == "coco" else 4)


def test_best_epoch_is_kept_and_plateau_lowers_the_rate(data, monkeypatch):
    """A scripted validation metric 0.3, 0.7, 0.5, 0.5: epoch 2's weights are kept, and with patience 0
    the plateau scheduler cuts the rate after the first epoch without improvement (epoch 3)."""
    spec = spec_of("timm")
    train, val = datasets(data, "coco", spec)
    states, scripted = [], iter([0.3, 0.7, 0.5, 0.5])

    def fake_evaluate(model, loader, cfg, runtime):
        states.append({k: v.clone() for k, v in model.state_dict().items()})
        return 0.5, next(scripted)

    monkeypatch.setattr(tr, "evaluate", fake_evaluate)
    cfg = TrainConfig(
        epochs=4, lr=0.02, batch_size=8, scheduler="plateau", plateau_monitor="metric", plateau_patience=0
    )
    result = train_classifier(model_for(spec, 4), train, val, cfg, log=lambda m: None)
    assert (result.best_epoch, result.best_metric) == (2, 0.7)
    assert all(torch.equal(result.best_state[k], states[1][k]) for k in states[1])
    assert not all(torch.equal(result.best_state[k], states[3][k]) for k in states[3])
    assert [r.lr for r in result.history] == pytest.approx([0.02, 0.02, 0.02, 0.002])


@pytest.mark.parametrize("optimizer, workers", [("sgd", 0), ("lars", 1)])
def test_interrupted_run_resumes_and_matches(data, tmp_path, monkeypatch, optimizer, workers):
    spec = spec_of("timm")
    train, val = datasets(data, "openimages", spec)
    cfg = TrainConfig(
        epochs=2,
        lr=0.05,
        batch_size=8,
        optimizer=optimizer,
        scheduler="plateau",
        metric="micro_f1",
        seed=5,
        num_workers=workers,
        weight_decay=1e-4,
    )
    full = train_classifier(model_for(spec, 10), train, val, cfg, resume_path=tmp_path / "full.pt", log=lambda m: None)

    save = die_after_resume_save(monkeypatch)
    with pytest.raises(Killed):
        train_classifier(model_for(spec, 10), train, val, cfg, resume_path=tmp_path / "cut.pt", log=lambda m: None)
    monkeypatch.setattr(tr, "_save_resume", save)
    logs = []
    # a fresh process would rebuild the model from its pretrained weights: use other initial weights
    resumed = train_classifier(
        model_for(spec, 10, seed=99), train, val, cfg, resume_path=tmp_path / "cut.pt", log=logs.append
    )
    assert any("resumed from" in m and "after epoch 1" in m for m in logs)
    assert [r.epoch for r in resumed.history] == [1, 2]
    for a, b in zip(full.history, resumed.history):
        assert (a.train_loss, a.val_loss, a.metric, a.lr) == (b.train_loss, b.val_loss, b.metric, b.lr)
    assert (full.best_epoch, full.best_metric) == (resumed.best_epoch, resumed.best_metric)
    assert all(torch.equal(full.best_state[k], resumed.best_state[k]) for k in full.best_state)


def test_resume_file_with_other_classes_is_discarded_and_the_log_says_so(data, tmp_path):
    spec = spec_of("timm")
    cfg = TrainConfig(epochs=1, lr=0.05, batch_size=8, metric="micro_f1")
    coco_train, coco_val = datasets(data, "coco", spec)
    train_classifier(model_for(spec, 4), coco_train, coco_val, cfg, resume_path=tmp_path / "r.pt", log=lambda m: None)
    oi_train, oi_val = datasets(data, "openimages", spec)
    logs = []
    result = train_classifier(
        model_for(spec, 10), oi_train, oi_val, cfg, resume_path=tmp_path / "r.pt", log=logs.append
    )
    assert any("r.pt was written with another class list; discarding it" in m for m in logs), logs
    assert [r.epoch for r in result.history] == [1]


def test_model_and_dataset_class_counts_must_agree(data):
    spec = spec_of("timm")
    train, val = datasets(data, "coco", spec)
    with pytest.raises(ValueError, match="the model has 10 outputs but the dataset has 4 classes"):
        train_classifier(model_for(spec, 10), train, val, TrainConfig(epochs=1, lr=0.1), log=lambda m: None)


class NaNAfterTwoBatches(nn.Module):
    num_classes = 4

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(4))
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        out = x.mean(dim=(1, 2, 3))[:, None] * self.w
        return out * float("nan") if self.calls > 2 else out


def test_nan_loss_stops_with_a_clear_error(data):
    spec = spec_of("timm")
    train, val = datasets(data, "coco", spec)
    cfg = TrainConfig(epochs=2, lr=0.1, batch_size=4, log_every=2)
    with pytest.raises(
        FloatingPointError,
        match=r"non-finite training loss \(nan\) at epoch 1, in batches 3-4: lower the learning rate",
    ):
        train_classifier(NaNAfterTwoBatches(), train, val, cfg, log=lambda m: None)


def test_lars_step_matches_a_hand_computation():
    # w = (3, 4), |w| = 5; g = (0.6, 0.8); wd 0.1 -> d = g + 0.1 w = (0.9, 1.2), |d| = 1.5
    # trust = eta |w| / |d| = 0.003 * 5 / 1.5 = 0.01; v = trust d = (0.009, 0.012); w -= lr v with lr 0.5
    w = nn.Parameter(torch.tensor([3.0, 4.0], dtype=torch.float64))
    opt = LARS([w], lr=0.5, momentum=0.9, weight_decay=0.1, eta=0.003)
    w.grad = torch.tensor([0.6, 0.8], dtype=torch.float64)
    opt.step()
    torch.testing.assert_close(w.detach(), torch.tensor([3 - 0.0045, 4 - 0.006], dtype=torch.float64))
    # second step, same gradient: w1 = 0.9985 w; d = g + 0.1 w1 = (0.2 + 0.09985) w; the trust ratio
    # is eta |w1| / |d| = 0.003 * 0.9985 / 0.29985; v = 0.9 v0 + trust d
    w.grad = torch.tensor([0.6, 0.8], dtype=torch.float64)
    opt.step()
    trust = 0.003 * 0.9985 / 0.29985
    v = [0.9 * 0.009 + trust * 0.29985 * 3, 0.9 * 0.012 + trust * 0.29985 * 4]
    expected = [3 * 0.9985 - 0.5 * v[0], 4 * 0.9985 - 0.5 * v[1]]
    torch.testing.assert_close(w.detach(), torch.tensor(expected, dtype=torch.float64))


def test_lars_groups_exclude_biases_and_norms_which_step_like_sgd():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.LazyLinear(2))
    model(torch.randn(2, 3, 6, 6))
    adapted, plain = lars_param_groups(model)
    assert [p.ndim for p in adapted["params"]] == [4, 2] and [p.ndim for p in plain["params"]] == [1, 1, 1, 1]
    bias = nn.Parameter(torch.randn(5))
    twin = nn.Parameter(bias.detach().clone())
    lars = LARS([{"params": [bias], "lars": False}], lr=0.1, momentum=0.9)
    sgd = torch.optim.SGD([twin], lr=0.1, momentum=0.9)
    for step in range(3):
        grad = torch.randn(5, generator=torch.Generator().manual_seed(step))
        bias.grad, twin.grad = grad.clone(), grad.clone()
        lars.step()
        sgd.step()
    torch.testing.assert_close(bias, twin)
    zero = nn.Parameter(torch.zeros(3))  # |w| = 0: trust ratio 1, a plain step
    opt = LARS([zero], lr=0.1, momentum=0.0, weight_decay=0.0)
    zero.grad = torch.ones(3)
    opt.step()
    torch.testing.assert_close(zero.detach(), torch.full((3,), -0.1))


def test_sampler_order_and_augmentation_seeds_depend_only_on_seed_and_epoch():
    a, b = EpochSampler(10, seed=1), EpochSampler(10, seed=1)
    a.set_epoch(3)
    b.set_epoch(3)
    assert list(a) == list(b)
    b.set_epoch(4)
    assert list(a) != list(b) and sorted(i for i, _ in b) == list(range(10))


def test_weighted_sampler_draws_by_weight_seeded_and_never_a_zero_weight():
    weights = np.array([0.0, 1.0, 3.0, 0.0])
    a, b = EpochSampler(4, seed=2, weights=weights), EpochSampler(4, seed=2, weights=weights)
    assert list(a) == list(b) and len(list(a)) == 4
    drawn = []
    for epoch in range(1, 301):
        a.set_epoch(epoch)
        drawn += [i for i, _ in a]
    counts = np.bincount(drawn, minlength=4)
    assert counts[0] == counts[3] == 0
    assert 2.5 < counts[2] / counts[1] < 3.5  # 900 draws of image 2 expected, 300 of image 1
    seeds = [s for _, s in a]
    assert len(set(seeds)) == 4  # each draw its own augmentation seed, even of a repeated image
    with pytest.raises(ValueError, match="sample weights"):
        EpochSampler(3, seed=0, weights=np.zeros(3))


@pytest.mark.slow  # about 12 s of CPU (make test-fast leaves it out)
def test_gpu_settings_degrade_to_plain_fp32_on_cpu(data):
    cpu = torch.device("cpu")
    rt = Runtime.resolve(TrainConfig(epochs=1, lr=0.1, compile=True), cpu)
    assert (rt.autocast, rt.channels_last, rt.compile) == (None, False, False)
    assert Runtime.resolve(TrainConfig(epochs=1, lr=0.1, precision="bf16"), cpu).autocast == torch.bfloat16
    spec = spec_of("torchvision")
    train, val = datasets(data, "coco", spec)
    cfg = TrainConfig(epochs=1, lr=0.05, batch_size=8, precision="bf16", compile=True, grad_clip=1.0)
    logs = []
    result = train_classifier(model_for(spec, 4), train, val, cfg, log=logs.append)
    assert np.isfinite(result.history[0].train_loss) and "compile is only used on CUDA; running eagerly" in logs
    loader = tr.make_loader(train, TrainConfig(epochs=1, lr=0.1, num_workers=2), torch.device("cuda"))
    assert loader.pin_memory and loader.persistent_workers and loader.prefetch_factor == 2


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"optimizer": "adam"}, "optimizer must be one of sgd, adamw, lars"),
        ({"scheduler": "step"}, "scheduler must be one of none, cosine, plateau"),
        ({"plateau_monitor": "loss"}, "plateau_monitor must be one of"),
        ({"precision": "fp16"}, "precision must be one of auto, fp32, bf16"),
        ({"lr": 0.0}, "lr must be > 0"),
        ({"batch_size": 0}, "batch_size must be an integer >= 1"),
        ({"grad_clip": -1.0}, "grad_clip must be > 0 or None"),
        ({"threshold": 1.5}, r"threshold must be in \(0, 1\)"),
    ],
)
def test_bad_hyper_parameters_are_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**{"epochs": 1, "lr": 0.1, **kwargs})


# Paper supplementary Tables 7 (COCO) and 8 (Open Images): (epochs, learning rate) per model, and the
# text of section 11: ReduceLROnPlateau for ResNet18 (COCO) and MoCo (both), LARS without weight decay
# for SimCLR, SGD with momentum 0.9 and weight decay for the others.
TABLES = {
    "coco": {
        "bit_m_r50x1": (25, 0.003),
        "resnet50": (25, 0.001),
        "resnet18": (25, 0.1),
        "clip_vit_b32": (25, 0.001),
        "simclr_r50_v1": (25, 0.01),
        "moco_r50_v1": (25, 0.1),
    },
    "openimages": {
        "bit_m_r50x1": (15, 0.001),
        "resnet50": (15, 0.001),
        "resnet18": (30, 0.001),
        "clip_vit_b32": (15, 0.001),
        "simclr_r50_v1": (15, 0.01),
        "moco_r50_v1": (15, 0.1),
    },
}
PLATEAU = {("coco", "resnet18"), ("coco", "moco_r50_v1"), ("openimages", "moco_r50_v1")}


def test_paper_finetune_config_transcribes_tables_7_and_8():
    from pathlib import Path

    import yaml

    from biastransfer.workflow.config import finetune_params

    section = yaml.safe_load((Path(__file__).parents[1] / "config" / "paper.yaml").read_text())
    config = {"finetune": section["finetune"]}
    kinds = {d: section["datasets"][d]["kind"] for d in section["finetune"]["datasets"]}
    assert [d for d, kind in kinds.items() if kind not in ("intervention", "mitigation")] == list(TABLES)
    for dataset, rows in TABLES.items():
        for model, (epochs, lr) in rows.items():
            cfg = TrainConfig(**finetune_params(config, model, dataset))
            assert (cfg.epochs, cfg.lr, cfg.momentum) == (epochs, lr, 0.9), (model, dataset)
            assert cfg.metric == ("mAP" if dataset == "coco" else "micro_f1") and cfg.threshold == 0.5
            assert cfg.scheduler == ("plateau" if (dataset, model) in PLATEAU else "none"), (model, dataset)
            simclr = model == "simclr_r50_v1"
            assert cfg.optimizer == ("lars" if simclr else "sgd") and cfg.weight_decay == (0.0 if simclr else 1e-4)


def test_dataset_targets_follow_the_class_order_and_unknown_labels_fail(data):
    split = read_split(data["openimages"][0])
    ds = ImageLabelDataset(split, spec_of("timm").preprocess.transform())
    for i in (0, len(ds) - 1):
        expected = torch.tensor([float(c in split.frame["labels"].iloc[i]) for c in split.classes])
        assert torch.equal(ds[i][1], expected) and ds[i][0].shape == (3, 32, 32)
    with pytest.raises(ValueError, match="label 'Car' is not a model class"):
        ImageLabelDataset(split, lambda img: img, classes=["Man", "Woman"])


def test_the_same_seed_gives_the_same_weights_whatever_the_process_rng(data, tmp_path):
    spec = spec_of("timm")
    digests = []
    for run in range(2):
        torch.seed()  # a fresh process starts from an arbitrary RNG state: the run must not depend on it
        out = tmp_path / str(run)
        run_training(
            lambda classes: create_classifier(spec, len(classes), None),
            spec,
            TrainingFiles(
                str(data["coco"][0]), str(data["coco"][1]), str(out / "model.safetensors"), str(out / "m.json")
            ),
            train_config({"epochs": 1, "lr": 0.05, "batch_size": 8}, 5, 0),
            device=torch.device("cpu"),
            threads=1,
            log=lambda s: None,
        )
        digests.append(hashlib.sha256((out / "model.safetensors").read_bytes()).hexdigest())
    assert digests[0] == digests[1]
