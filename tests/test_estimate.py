"""The cost estimate: hand-computed counts and hours from small cost tables, and the command line."""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from report_site import script

from biastransfer.estimate import estimate, format_estimate, predict_share, wall_hours
from biastransfer.scripting import run
from biastransfer.workflow.config import fill_defaults
from biastransfer.workflow.plan import Plan

ROOT = Path(__file__).resolve().parents[1]
MODEL_ROW = {"source": "torchvision", "arch": "resnet50", "crop": 224, "params_m": 25.0, "embed_dim": 2048}


@pytest.fixture()
def costs(tmp_path):
    pd.DataFrame(
        [{"model": "resnet50", "device": "cpu", "train_s_per_image": 0.5, "embed_s_per_image": 0.1, **MODEL_ROW}]
    ).to_csv(tmp_path / "models.csv", index=False)
    pd.DataFrame(
        [
            {
                "size": s,
                "files_s_per_image": 0.01,
                "cache_s_per_image": 0.002,
                "build_s_per_image": 0.008,
                "bytes_per_cached_image": 40_000,
                "bytes_per_source_image": 1,
            }
            for s in ("640x480", "1024x768")
        ]
    ).to_csv(tmp_path / "input.csv", index=False)
    pd.DataFrame(
        [
            {"kind": "coco", "split": "train", "images": 100, "bytes_per_image": 1000, "source": "test"},
            {"kind": "coco", "split": "val", "images": 10, "bytes_per_image": 2000, "source": "test"},
        ]
    ).to_csv(tmp_path / "datasets.csv", index=False)
    return tmp_path


def config(cache="off"):
    """A config as written (not filled): one COCO finetuning on two seeds, ``finetune.cache`` left out for None."""
    sizes = {"man": 2, "woman": 3}
    return {
        "datasets": {"coco": {"kind": "coco", "root": "data/coco"}},
        "analysis_sets": {
            "coco": {"dataset": "coco", "source": "curated", "classes": list(sizes), "curation": {"sizes": sizes}}
        },
        "models": {"resnet50": {}},
        "analysis": {},
        "finetune": {
            "datasets": ["coco"],
            "seeds": [0, 1],
            "defaults": {"epochs": 2, "lr": 0.1},
            "overrides": {},
            **({} if cache is None else {"cache": cache}),
        },
    }


def by_family(table):
    return {r["family"]: r for _, r in table.iterrows()}


def test_an_intervention_trains_on_its_sources_images_and_downloads_none(costs):
    conf = config()
    conf["datasets"]["fix"] = {"kind": "intervention", "from": "coco", "objects": ["car"]}
    conf["finetune"]["datasets"] = ["coco", "fix"]
    rows = by_family(estimate(conf, costs))
    assert rows["download"]["images"] == 115  # coco's images once
    assert rows["finetune"]["images"] == 2 * 2 * 2 * 110  # both datasets: seeds x epochs x (train + val)


def test_each_mitigation_arm_is_costed_on_a_row_of_its_own(costs):
    """A loop method: plain's epochs with its measured ratio on the training steps; DFR: one pass over the
    training and validation images; neither downloads anything."""
    pd.DataFrame([{"method": "group_dro", "epoch_ratio": 1.2}]).to_csv(costs / "methods.csv", index=False)
    conf = config()
    conf["datasets"]["coco_dro"] = {"kind": "mitigation", "from": "coco", "method": "group_dro"}
    conf["datasets"]["coco_dfr"] = {"kind": "mitigation", "from": "coco", "method": "dfr"}
    conf["finetune"]["datasets"] = ["coco", "coco_dro", "coco_dfr"]
    table = estimate(conf, costs)
    rows = {r["model"]: r for _, r in table[table["family"] == "finetune"].iterrows()}
    assert set(rows) == {"resnet50", "resnet50 coco_dro (group_dro)", "resnet50 coco_dfr (dfr)"}
    assert rows["resnet50 coco_dro (group_dro)"]["gpu_h"] == pytest.approx(2 * 2 * (100 * 0.5 * 1.2 + 10 * 0.1) / 3600)
    assert rows["resnet50 coco_dfr (dfr)"]["gpu_h"] == pytest.approx(2 * 110 * 0.1 / 3600)
    assert rows["resnet50 coco_dfr (dfr)"]["images"] == 2 * 110
    assert by_family(table)["download"]["images"] == 115


def test_counts_and_hours_are_the_hand_computed_ones(costs):
    rows = by_family(estimate(config(), costs))
    assert set(rows) == {"download", "finetune", "embed", "predict"}  # no cache with finetune.cache off
    # 110 split images + 5 analysis images; bytes: 100 x 1000 + 10 x 2000 + 5 x 2000 + 25 M params x 4 bytes
    assert rows["download"]["images"] == 115
    assert rows["download"]["download_bytes"] == pytest.approx(100_000 + 20_000 + 10_000 + 100e6)
    ft = rows["finetune"]
    assert ft["images"] == 2 * 2 * 110  # seeds x epochs x (train + val)
    assert ft["cpu_h"] == pytest.approx(440 * 0.01 / 3600)
    assert ft["gpu_h"] == pytest.approx(2 * 2 * (100 * 0.5 + 10 * 0.1) / 3600)
    assert ft["disk_bytes"] == pytest.approx(2 * 100e6)
    assert ft["basis"] == "cpu"
    embed = rows["embed"]
    assert embed["images"] == 3 * 5  # pretrained + 2 finetuned stages, 5 images each
    assert embed["gpu_h"] == pytest.approx(15 * 0.1 / 3600)
    assert embed["disk_bytes"] == 15 * 2048 * 4
    # 2 finetuned networks x the 10 val2017 images (the evaluation split), one forward each: scores and embedding
    predict = rows["predict"]
    assert predict["images"] == 20 and predict["gpu_h"] == pytest.approx(20 * 0.1 / 3600)
    assert predict["cpu_h"] == pytest.approx(20 * 0.01 / 3600) and predict["disk_bytes"] == 20 * (80 + 2048) * 4


def test_the_predictions_share_of_a_finetuning_epoch(costs):
    share = predict_share(config(), costs).iloc[0]
    # one network: 10 forwards of 0.1 s against one epoch of 100 steps of 0.5 s and 10 val forwards of 0.1 s
    assert (share["test_images"], share["predict_s"], share["epoch_s"]) == (10, pytest.approx(1.0), pytest.approx(51.0))
    assert share["share"] == pytest.approx(1 / 51)
    held = config()
    held["datasets"]["coco"]["evaluation"] = {"holdout": 0.5}
    assert predict_share(held, costs).iloc[0]["test_images"] == 5
    held["datasets"]["coco"]["evaluation"] = {"enabled": False}
    assert "predict" not in by_family(estimate(held, costs))
    assert "at most 2.0% of one finetuning epoch (resnet50 on coco, 10 images" in format_estimate(
        estimate(config(), costs), 1, 1, predict_share(config(), costs)
    )


def test_the_cache_is_built_once_and_read_every_epoch(costs):
    rows = by_family(estimate(config("on"), costs))
    assert rows["image_cache"]["images"] == 110
    assert rows["image_cache"]["cpu_h"] == pytest.approx(110 * 0.008 / 3600)
    assert rows["image_cache"]["disk_bytes"] == 110 * 40_000
    assert rows["finetune"]["cpu_h"] == pytest.approx(440 * 0.002 / 3600)


@pytest.mark.parametrize("cache", ["on", True, "off", False, None])
def test_the_estimate_builds_and_reads_the_caches_the_plan_gives(costs, cache):
    """``finetune.cache`` on, off or left out: the estimate's image_cache rows are the plan's settings (one per
    dataset and setting) and its finetuning reads the cache exactly when the plan's cache is on."""
    plan = Plan(fill_defaults(copy.deepcopy(config(cache))), ROOT)
    assert plan.cache_on == (cache in ("on", True))
    rows = estimate(config(cache), costs)
    built = rows.loc[rows["family"] == "image_cache", "model"].tolist()
    assert built == ([f"coco {s}" for s in dict.fromkeys(plan.image_cache_settings.values())] if plan.cache_on else [])
    decode = 0.002 if plan.cache_on else 0.01  # the costs fixture's seconds per image: cached / from the files
    assert by_family(rows)["finetune"]["cpu_h"] == pytest.approx(440 * decode / 3600)


def test_wall_time_needs_gpu_figures_and_is_bound_by_gpus_or_cores(costs):
    table = estimate(config("on"), costs)
    wall = wall_hours(table, gpus=2, cores=4)
    assert wall["finetune"] is None and wall["embed"] is None
    assert wall["image_cache"] == pytest.approx(110 * 0.008 / 3600 / 4)
    models = pd.read_csv(costs / "models.csv")
    gpu = {**models.iloc[0].to_dict(), "device": "cuda", "train_s_per_image": 0.001, "embed_s_per_image": 0.0004}
    pd.concat([models, pd.DataFrame([gpu])]).to_csv(costs / "models.csv", index=False)
    table = estimate(config("on"), costs)
    wall = wall_hours(table, gpus=2, cores=1)
    ft = by_family(table)["finetune"]
    assert ft["basis"] == "gpu" and ft["gpu_h"] == pytest.approx(4 * (100 * 0.001 + 10 * 0.0004) / 3600)
    assert wall["finetune"] == pytest.approx(max(ft["gpu_h"] / 2, ft["cpu_h"] / 1))  # one core: input-bound
    assert "wall time with 2 GPU(s) and 1 cores" in format_estimate(table, 2, 1)
    with pytest.raises(ValueError, match="gpus and cores must be at least 1, got 0 and 1"):
        wall_hours(table, 0, 1)


def test_a_zoo_model_without_a_figure_is_scaled_by_its_parameters(costs):
    cfg = config()
    cfg["models"] = {"big": {"source": "timm", "arch": "vgg16", "about": {"params_m": 50.0}}}
    rows = by_family(estimate(cfg, costs))
    assert rows["embed"]["basis"] == "scaled"
    assert rows["embed"]["gpu_h"] == pytest.approx(15 * 0.1 * 2 / 3600)


def test_a_dataset_kind_without_counts_is_a_clear_error(costs):
    cfg = config()
    cfg["datasets"]["coco"]["kind"] = "openimages"
    with pytest.raises(ValueError, match="dataset 'coco': no image counts for kind 'openimages'"):
        estimate(cfg, costs)


def test_the_command_line_prints_the_paper_estimate():
    out = subprocess.run(
        [
            sys.executable,
            "workflow/scripts/preflight.py",
            "--configfile",
            "config/paper.yaml",
            "--estimate",
            "--gpus",
            "4",
            "--cores",
            "64",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
    ).stdout
    assert "image_cache" in out and "finetune" in out and "wall time with 4 GPU(s) and 64 cores" in out
    assert re.search(
        r"predictions of one network on its evaluation split: at most \d\.\d% of one finetuning epoch", out
    )


@pytest.fixture
def preflight(tmp_path, capsys, monkeypatch):
    """workflow/scripts/preflight.py's command line run in this process from ``tmp_path``, its passed checks
    remembered there (none from before): the exit status, stdout and stderr of one call."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BIASTRANSFER_CACHE_DIR", str(tmp_path / "cache"))
    main = script("preflight").main

    def call(*args) -> subprocess.CompletedProcess:
        capsys.readouterr()
        try:
            run(main, None, [*map(str, args)])
            status = 0
        except SystemExit as stop:
            status = stop.code
        out = capsys.readouterr()
        return subprocess.CompletedProcess(args, status, out.out, out.err)

    return call


UNBUILDABLE = {
    "models": {
        "resnet18_typo": {},  # neither registered nor defined
        "no_such_timm": {"source": "timm", "arch": "resnet_nine_hundred"},
        "no_such_torchvision": {"source": "torchvision", "arch": "resnet_nine_hundred"},
    },
    "analysis": {"layers": {"enabled": False}},  # the layer check, which also builds every model, is off
}


def test_the_estimate_refuses_the_models_the_workflow_refuses_and_writes_nothing(tmp_path, preflight):
    import yaml

    from biastransfer.models.resolve import model_spec_problems
    from biastransfer.workflow.config import read_configs

    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(UNBUILDABLE, sort_keys=False))
    configs = [ROOT / "config" / "config.yaml", tmp_path / "bad.yaml"]
    done = preflight("--configfile", *configs, "--estimate", "--table", tmp_path / "t.csv")
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
    assert not (tmp_path / "t.csv").exists()
    workflow = model_spec_problems(read_configs(configs))  # the check rules/common.smk runs
    assert done.stderr == "error: invalid configuration:\n  " + "\n  ".join(workflow) + "\n"
    lines = done.stderr.splitlines()[1:]
    assert [line.split(":")[0].strip() for line in lines] == [f"models.{m}" for m in UNBUILDABLE["models"]]
    assert "not in the registry" in lines[0] and "timm has no model architecture 'resnet_nine_hundred'" in lines[1]
    assert "torchvision has no model architecture 'resnet_nine_hundred'" in lines[2]


@pytest.mark.parametrize("option", [("--gpus", "0"), ("--cores", "-4")])
def test_bad_gpus_or_cores_are_one_line_before_anything_is_written(tmp_path, preflight, option):
    done = preflight(
        "--configfile", ROOT / "config" / "config.yaml", "--estimate", *option, "--table", tmp_path / "t.csv"
    )
    assert done.returncode == 2 and done.stdout == ""
    assert (
        done.stderr
        == f"error: --gpus and --cores must be at least 1, got {'0 and 16' if option[0] == '--gpus' else '1 and -4'}\n"
    )
    assert not (tmp_path / "t.csv").exists()
