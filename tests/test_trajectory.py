"""Trajectories over finetuning epochs (finetune.trajectory): config, statistics, findings, and one tiny
workflow run (tests/configs/tiny.yaml at two epochs) whose trajectory files follow the embeddings schema
and whose best epoch gives exactly the final embeddings' similarity, iEAT and BTS."""

import copy
import runpy
import shutil

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import ROOT, run_snakemake
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from biastransfer.embeddings import EmbeddingTable, epoch_file, epoch_files, read_embeddings
from biastransfer.report.findings.trajectory import describe_trajectories, settling_epoch
from biastransfer.stats.trajectory import trajectory_table
from biastransfer.train.trajectory import staging_folder
from biastransfer.workflow import config as cfg
from biastransfer.workflow.plan import Plan

SCHEMA = str(ROOT / "workflow" / "schemas" / "config.schema.yaml")
DEMO = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


@pytest.mark.parametrize("value, epochs", [("off", []), (False, []), ("every", [1, 2, 3, 4, 5]), ([4, 2], [2, 4])])
def test_trajectory_values_and_the_epochs_they_give(value, epochs):
    conf = copy.deepcopy(DEMO)
    conf["finetune"]["trajectory"] = value
    validate(conf, SCHEMA, set_default=True)
    cfg.check_config(conf)
    assert Plan(conf, ROOT).trajectory_epochs("democnn", "synthetic_target") == epochs


@pytest.mark.parametrize(
    "value, message",
    [
        ("sometimes", "'sometimes' is not valid"),
        ([0], "is not valid"),
        ([], "is not valid"),
        ([2, 2], "is not valid"),
    ],
)
def test_a_bad_trajectory_value_is_named(value, message):
    conf = copy.deepcopy(DEMO)
    conf["finetune"]["trajectory"] = value
    with pytest.raises(WorkflowError, match=message):
        validate(conf, SCHEMA)


def test_an_epoch_beyond_a_run_is_named():
    conf = copy.deepcopy(DEMO)
    conf["finetune"]["trajectory"] = [2, 9]
    with pytest.raises(ValueError, match=r"finetune.trajectory: epoch\(s\) \[9\] beyond the 5 epochs of democnn"):
        cfg.check_config(cfg.fill_defaults(conf))


def _means(values, low, high):
    return pd.DataFrame(
        {
            "value": values,
            "ci_low": [np.nan] * (len(values) - 1) + [low],
            "ci_high": [np.nan] * (len(values) - 1) + [high],
        },
        index=range(len(values)),
    )


@pytest.mark.parametrize(
    "values, low, high, settled",
    [
        ([0.0, 0.5, 0.9, 1.0, 0.95], 0.85, 1.1, 2),  # rises, then stays inside the last interval from epoch 2
        ([1.0, 0.2, 1.0, 1.0], 0.9, 1.1, 2),  # dips at epoch 1 and comes back
        ([1.0, 1.0, 1.0], 0.9, 1.1, 0),  # never leaves it
        ([0.0, 1.0, 2.0], 2.5, 3.0, None),  # the last value lies outside its own interval
        ([0.0, 1.0], np.nan, np.nan, None),  # no interval
    ],
)
def test_the_settling_epoch(values, low, high, settled):
    assert settling_epoch(_means(values, low, high)) == settled


def _table(rng, shift=0.0):
    classes = ["a", "b", "x", "y"]
    emb = rng.normal(size=(40, 8)).astype(np.float32)
    cls = np.repeat(classes, 10)
    emb[cls == "x", 0] += shift
    emb[cls == "a", 0] += shift
    return EmbeddingTable(np.array([f"i{k}" for k in range(40)]), cls, emb)


OPTIONS = dict(
    tests=[{"name": "t", "X": "x", "Y": "y", "A": "a", "B": "b", "role": "planted"}],
    lists={},
    similarity={"method": "exact"},
    ieat={"permutations": 200, "bootstrap": 50},
    bts={"pvalue": "permutation", "bootstrap": 50, "ci_level": 0.95, "seed": 0},
)


def test_a_network_finetuning_did_not_change_keeps_its_statistics_at_every_epoch():
    pre = _table(np.random.default_rng(0), shift=3.0)
    frame = trajectory_table(pre, {1: {0: pre, 1: pre}, 2: {0: pre, 1: pre}}, **OPTIONS)
    ieat = frame[frame["measure"] == "ieat"]
    assert sorted(ieat["epoch"].unique()) == [0, 1, 2] and len(ieat) == 3 * 2
    assert ieat["value"].nunique() == 1 and ieat["value"].iloc[0] > 1  # the planted association, unchanged
    bts = frame[frame["measure"] == "bts"]
    assert set(bts["epoch"]) == {1, 2} and np.allclose(bts["value"], 1)  # rho 1 against itself; none at epoch 0
    cka = frame[frame["measure"] == "cka"]
    assert len(cka) == 2 + 2 * 3 and np.allclose(cka[["value", "ci_low", "ci_high"]], 1)  # each seed; pooled at 1, 2
    text = "\n".join(describe_trajectories(frame.assign(analysis_set="s", model="m", finetune_dataset="d")))
    assert "t (planted)" in text and "stays inside the last epoch's interval throughout" in text
    assert (
        "linear CKA against the pretrained embeddings 1.00 after epoch 1 and 1.00 after epoch 2 (1: unchanged); the representation stays inside"
        in text
    )


def test_an_association_finetuning_removes_is_seen_to_fall():
    rng = np.random.default_rng(1)
    pre, gone = _table(rng, shift=3.0), _table(rng, shift=0.0)
    frame = trajectory_table(pre, {1: {0: gone}, 2: {0: gone}}, **OPTIONS)
    d = frame[frame["measure"] == "ieat"].set_index("epoch")["value"]
    assert d[0] > 1 and abs(d[2]) < 0.8
    with pytest.raises(ValueError, match="different seeds"):
        trajectory_table(pre, {1: {0: gone}, 2: {1: gone}}, **OPTIONS)


def test_the_cka_of_each_epoch_is_the_linear_cka_against_the_pretrained_images_with_its_interval():
    from biastransfer.stats.cka import linear_cka

    rng = np.random.default_rng(2)
    pre, moved = _table(rng, shift=3.0), _table(rng, shift=3.0)
    halfway = EmbeddingTable(pre.image_ids, pre.classes, pre.embeddings + 0.7 * moved.embeddings)
    order = rng.permutation(len(pre.image_ids))  # the epoch's file lists the images in another order
    shuffled = EmbeddingTable(halfway.image_ids[order], halfway.classes[order], halfway.embeddings[order])
    frame = trajectory_table(pre, {1: {0: shuffled, 1: moved}, 2: {0: moved, 1: moved}}, **OPTIONS)
    cka = frame[frame["measure"] == "cka"].set_index(["epoch", "seed"])
    for epoch, seed, table in ((1, 0, halfway), (1, 1, moved), (2, 0, moved)):
        expected = linear_cka(pre.embeddings, table.embeddings, 0.95)
        assert cka.loc[(epoch, seed), ["value", "ci_low", "ci_high"]].tolist() == pytest.approx(
            [expected.estimate, expected.ci_low, expected.ci_high]
        )
    assert cka.loc[(1, "pooled"), "value"] == pytest.approx(np.mean([cka.loc[(1, s), "value"] for s in (0, 1)]))
    assert cka.loc[(0, 0), "value"] == 1 and cka.loc[(1, 0), "value"] > cka.loc[(2, 0), "value"]
    assert cka.loc[(1, 0), "n"] == 40 and set(cka["key"]) == {"cka"}
    missing = EmbeddingTable(pre.image_ids[:-1], pre.classes[:-1], pre.embeddings[:-1])
    with pytest.raises(ValueError, match="seed 0 does not embed the pretrained network's images"):
        trajectory_table(pre, {1: {0: missing}}, **OPTIONS)


# ---------------------------------------------------------------------------------------------------
# One tiny run: two seeds, two epochs, a trajectory point after each, one loader worker in both the
# finetune and the embed jobs (both then run with two threads, which makes the CPU features bit-identical).
# ---------------------------------------------------------------------------------------------------

STAGE = "ft-synthetic_target-seed{}"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    conf = yaml.safe_load((ROOT / "tests" / "configs" / "tiny.yaml").read_text())
    conf["finetune"]["defaults"]["epochs"] = 2
    conf["finetune"].update(trajectory="every", num_workers=1)
    conf["analysis"]["embed"]["num_workers"] = 1
    # the rules' own resampling counts, so that the best epoch's rows can equal theirs
    conf["analysis"]["trajectory"] = {"permutations": conf["analysis"]["ieat"]["permutations"], "bootstrap": 2000}
    workdir = tmp_path_factory.mktemp("trajectory")
    (workdir / "tiny.yaml").write_text(yaml.safe_dump(conf))
    targets = [
        "results/summary/trajectory.csv",
        "results/figures/synthetic/tinycnn/trajectory_ft-synthetic_target.png",
        "results/tables/trajectory_synthetic_tinycnn_ft-synthetic_target.tex",
        "results/bts/synthetic/tinycnn/ft-synthetic_target.csv",
        *(
            f"results/{kind}/synthetic/tinycnn/{STAGE.format(seed)}.csv"
            for kind in ("ieat", "similarity")
            for seed in (0, 1)
        ),
    ]
    run_snakemake("--cores", "2", *targets, "--configfile", workdir / "tiny.yaml", cwd=workdir)
    return workdir / "results"


def _trajectory_frame(seeds=(0, 1, 2), epochs=4) -> pd.DataFrame:
    """A trajectory table (docs/formats.md) of one model: two iEAT tests, a BTS kind and the curves, per seed."""
    rows = []
    for seed in seeds:
        for epoch in range(epochs):
            final = epoch == epochs - 1
            common = dict(analysis_set="s", model="m", finetune_dataset="d", seed=seed, epoch=epoch, final=final)
            for test, d in (("t_planted", 1.0), ("t_control", -0.6)):
                value = d + 0.05 * seed - 0.02 * epoch
                rows.append(
                    dict(
                        common, measure="ieat", kind="", key=test, value=value, ci_low=value - 0.4, ci_high=value + 0.4
                    )
                )
            rows.append(dict(common, measure="bts", kind="intra", key="intra", value=0.9, ci_low=0.8, ci_high=1.0))
            cka = 1 - 0.1 * epoch - 0.02 * seed
            rows.append(dict(common, measure="cka", kind="", key="cka", value=cka, ci_low=cka - 0.05, ci_high=cka))
            for key, value in (("train_loss", 0.5 - 0.1 * epoch), ("val_loss", 0.4), ("val_mAP", 0.6 + 0.05 * epoch)):
                if epoch:
                    rows.append(
                        dict(common, measure="curve", kind="", key=key, value=value, ci_low=np.nan, ci_high=np.nan)
                    )
    return pd.DataFrame(rows)


def test_the_trajectory_figure_names_each_seeds_marker_and_keeps_its_legends_off_the_data():
    from biastransfer.report.style import print_size_problems
    from biastransfer.report.trajectory import trajectory_figure

    fig = trajectory_figure(_trajectory_frame())
    assert print_size_problems(fig) == []
    (legend,) = fig.legends
    seeds = {t.get_text(): h for t, h in zip(legend.get_texts(), legend.legend_handles)}
    assert list(seeds) == ["seed 0", "seed 1", "seed 2", "best epoch"]
    markers = [seeds[f"seed {s}"].get_marker() for s in range(3)]
    assert len(set(markers)) == 3
    ieat = fig.axes[0]
    drawn = [line for line in ieat.lines if len(line.get_xdata()) > 2]  # each test's line per seed
    assert [line.get_marker() for line in drawn] == markers * 2
    assert [line.get_linestyle() for line in drawn] == [seeds[f"seed {s}"].get_linestyle() for s in range(3)] * 2
    fig.canvas.draw()
    for ax in fig.axes:  # each panel's legend above it, never over its data or the zero line
        assert ax.get_legend().get_window_extent().y0 >= ax.get_window_extent().y1 - 1
    assert any(list(line.get_ydata()) == [0, 0] for line in ieat.lines)
    against = fig.axes[1]  # BTS and CKA against the pretrained network share a panel
    assert [t.get_text() for t in against.get_legend().get_texts()] == ["intra", "linear CKA"]
    assert any(np.allclose(line.get_ydata(), [1, 0.9, 0.8, 0.7]) for line in against.lines)


def test_the_trajectory_table_has_a_cka_column():
    from biastransfer.report.trajectory import trajectory_latex

    tex = trajectory_latex(_trajectory_frame())
    head, body = tex.split("\\midrule", 1)
    assert head.strip().splitlines()[-1].split(" & ")[3] == "CKA"
    rows = [line.split(" & ") for line in body.split("\\bottomrule", 1)[0].strip().splitlines()]
    assert rows[0][3] == "$0.98$ \\small{[0.96, 1.00]}" and rows[3][3].startswith("$0.68$")  # mean [range] of seeds


@pytest.mark.slow
def test_each_epoch_is_embedded_in_the_documented_schema(tiny):
    for seed in (0, 1):
        files = epoch_files(tiny / "trajectory" / "synthetic" / "tinycnn" / STAGE.format(seed))
        assert list(files) == [1, 2] and [p.name for p in files.values()] == ["epoch01.parquet", "epoch02.parquet"]
        final = read_embeddings(tiny / "embeddings" / "synthetic" / "tinycnn" / f"{STAGE.format(seed)}.parquet")
        for epoch, path in files.items():
            table = read_embeddings(path)
            meta = table.metadata
            assert (meta["epoch"], meta["stage"], meta["trajectory"], meta["analysis_set"]) == (
                epoch,
                STAGE.format(seed),
                True,
                "synthetic",
            )
            assert meta["train_sha256"] == final.metadata["train_sha256"] and meta["model"] == "tinycnn"
            assert list(table.image_ids) == list(final.image_ids) and table.embeddings.shape == final.embeddings.shape


@pytest.mark.slow
def test_the_best_epoch_gives_exactly_the_final_embeddings_results(tiny):
    traj = pd.read_csv(tiny / "summary" / "trajectory.csv", keep_default_na=False, na_values=[""])
    best = traj[traj["final"] & (traj["measure"] != "curve")]
    assert sorted(best["seed"].astype(str).unique()) == ["0", "1"]
    for seed in (0, 1):
        epoch = int(best[best["seed"].astype(str) == str(seed)]["epoch"].iloc[0])
        folder = tiny / "trajectory" / "synthetic" / "tinycnn" / STAGE.format(seed)
        point = read_embeddings(epoch_files(folder)[epoch]).embeddings
        final = read_embeddings(tiny / "embeddings" / "synthetic" / "tinycnn" / f"{STAGE.format(seed)}.parquet")
        np.testing.assert_array_equal(point, final.embeddings)
        rows = best[best["seed"].astype(str) == str(seed)]
        sims = pd.read_csv(tiny / "similarity" / "synthetic" / "tinycnn" / f"{STAGE.format(seed)}.csv")
        got = rows[rows["measure"] == "similarity"].set_index("key")["value"]
        assert got.to_dict() == sims.set_index("key")["value"].to_dict()
        ieat = pd.read_csv(tiny / "ieat" / "synthetic" / "tinycnn" / f"{STAGE.format(seed)}.csv").set_index("test")
        got = rows[rows["measure"] == "ieat"].set_index("key")
        for column, theirs in (
            ("value", "effect_size"),
            ("ci_low", "ci_low"),
            ("ci_high", "ci_high"),
            ("pvalue", "pvalue"),
        ):
            assert got[column].to_dict() == ieat[theirs].to_dict(), column
        bts = pd.read_csv(tiny / "bts" / "synthetic" / "tinycnn" / "ft-synthetic_target.csv", keep_default_na=False)
        bts = bts[bts["seed"].astype(str) == str(seed)].set_index("kind")
        got = rows[rows["measure"] == "bts"].set_index("kind")
        assert got["value"].to_dict() == bts["statistic"].to_dict()
        assert got["pvalue"].to_dict() == bts["pvalue"].to_dict()
        cka = pd.read_csv(tiny / "cka" / "synthetic" / "tinycnn" / "ft-synthetic_target.csv", keep_default_na=False)
        cka = cka[(cka["seed"].astype(str) == str(seed)) & (cka["network"] == "finetuned")]
        got = rows[rows["measure"] == "cka"]
        assert got[["value", "ci_low", "ci_high"]].to_numpy() == pytest.approx(
            cka[["cka", "ci_low", "ci_high"]].to_numpy()
        )


@pytest.mark.slow
def test_the_trajectory_figure_and_table_show_every_epoch(tiny):
    traj = pd.read_csv(tiny / "summary" / "trajectory.csv", keep_default_na=False, na_values=[""])
    ieat = traj[traj["measure"] == "ieat"]
    assert len(ieat) == 3 * 2 * 2  # epochs 0-2, two seeds, two tests
    assert len(traj[(traj["measure"] == "curve") & (traj["key"] == "val_mAP")]) == 2 * 2
    assert (tiny / "figures" / "synthetic" / "tinycnn" / "trajectory_ft-synthetic_target.pdf").stat().st_size > 0
    tex = (tiny / "tables" / "trajectory_synthetic_tinycnn_ft-synthetic_target.tex").read_text()
    body = tex.split("\\midrule", 1)[1].split("\\bottomrule", 1)[0]
    assert [line.split(" & ")[0] for line in body.strip().splitlines()] == ["0 (pretrained)", "1", "2"]


def _writer(tmp_path, epochs, **kwargs):
    import torch
    from PIL import Image

    from biastransfer.data.manifest import write_manifest
    from biastransfer.hashing import file_digest
    from biastransfer.models.resolve import model_spec
    from biastransfer.train.trajectory import TrajectoryWriter

    rng = np.random.default_rng(0)
    paths = []
    for i in range(4):
        paths.append(str(tmp_path / f"img{i}.png"))
        Image.fromarray(rng.integers(0, 256, size=(64, 64, 3), dtype=np.uint8)).save(paths[-1])
    if not (tmp_path / "manifest.parquet").exists():
        write_manifest(
            tmp_path / "manifest.parquet",
            pd.DataFrame(
                {
                    "image_id": [f"i{i}" for i in range(4)],
                    "class": ["a", "a", "b", "b"],
                    "path": paths,
                    "sha256": [file_digest(p) for p in paths],
                    "source_split": "t",
                    "source": "noise",
                    "reason": "test",
                }
            ),
        )
    spec = model_spec("democnn", DEMO["models"]["democnn"])
    return TrajectoryWriter(
        spec,
        {"s": str(tmp_path / "manifest.parquet")},
        {"s": str(tmp_path / "out")},
        epochs,
        tmp_path / "staging",
        batch_size=2,
        num_workers=0,
        device=torch.device("cpu"),
        provenance={"stage": "ft-d-seed0"},
        log=lambda _: None,
        **kwargs,
    )


def test_the_analysis_images_are_decoded_once_and_give_the_same_features(tmp_path):
    from torch import nn

    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten())
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    cached, uncached = _writer(tmp_path / "a", [1, 2]), _writer(tmp_path / "b", [1, 2], cache_bytes=0)
    for writer in (cached, uncached):
        writer(1, model)
    for image in (*(tmp_path / "a").glob("img*.png"), *(tmp_path / "b").glob("img*.png")):
        image.unlink()  # epoch 2 can only be embedded from the images kept in memory
    cached(2, model)
    with pytest.raises(FileNotFoundError, match="img0.png"):
        uncached(2, model)
    from_disk = read_embeddings(tmp_path / "b" / "staging" / "s" / epoch_file(1)).embeddings
    for epoch in (1, 2):  # the model did not change between the epochs
        staged = read_embeddings(tmp_path / "a" / "staging" / "s" / epoch_file(epoch)).embeddings
        np.testing.assert_array_equal(staged, from_disk)


def test_a_resumed_run_keeps_the_epochs_it_embedded_and_redoes_the_rest(tmp_path):
    from torch import nn

    model = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten())
    first = _writer(tmp_path, [1, 2, 3])
    first(1, model), first(2, model)  # killed after epoch 2's embedding, before its resume state was saved
    staged = tmp_path / "staging" / "s"
    assert list(epoch_files(staged)) == [1, 2]
    resumed = _writer(tmp_path, [1, 2, 3])
    resumed(2, model)  # the resume state was epoch 1's: epoch 2 is trained and embedded again
    with pytest.raises(FileNotFoundError, match="epoch03.parquet"):
        resumed.publish()
    resumed(3, model)
    resumed.publish()
    assert list(epoch_files(tmp_path / "out")) == [1, 2, 3]
    assert read_embeddings(tmp_path / "out" / "epoch03.parquet").metadata["epoch"] == 3
    resumed.clean()
    assert not (tmp_path / "staging").exists()


def test_a_run_killed_after_publishing_publishes_again_when_rerun(tmp_path):
    from torch import nn

    model = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten())
    first = _writer(tmp_path, [1, 2])
    first(1, model), first(2, model)
    first.publish()  # killed here, before the resume state was removed (run_training cleans after that)
    published = {e: p.read_bytes() for e, p in epoch_files(tmp_path / "out").items()}
    shutil.rmtree(tmp_path / "out")  # Snakemake removes the outputs of an incomplete job before its rerun
    rerun = _writer(tmp_path, [1, 2])  # resumed after the last epoch: no epoch runs, nothing is embedded
    rerun.publish()
    assert {e: p.read_bytes() for e, p in epoch_files(tmp_path / "out").items()} == published


def test_staged_files_left_by_a_killed_run_go_when_the_trajectory_is_turned_off(tmp_path, monkeypatch):
    finetune = runpy.run_path(str(ROOT / "workflow" / "scripts" / "finetune.py"))
    staged = staging_folder(tmp_path / "seed0.resume.pt") / "s" / epoch_file(1)
    staged.parent.mkdir(parents=True)
    staged.write_bytes(b"left by a killed run")
    monkeypatch.setitem(finetune["main"].__globals__, "run_training", lambda *a, **k: None)
    monkeypatch.setitem(finetune["main"].__globals__, "weights_file_and_sha256", lambda w: (w, "0" * 64))
    finetune["main"](
        weights="w",
        train="t",
        val="v",
        trained=str(tmp_path / "m.safetensors"),
        metrics="m",
        curve="c",
        entry=DEMO["models"]["democnn"],
        hyper={"epochs": 1, "lr": 0.1},
        model="democnn",
        seed=0,
        device="cpu",
        num_workers=0,
        resume=str(tmp_path / "seed0.resume.pt"),
    )
    assert not staging_folder(tmp_path / "seed0.resume.pt").exists()
