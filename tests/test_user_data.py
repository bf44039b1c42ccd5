"""Your own images: analysis sets from a folder or a table, finetuning datasets from a table.

Known answers on small hand-made folders and tables: the manifest holds every file with its sha256,
every kind of bad input is a named error (file or row), the splits keep the table's split column or draw
a seeded one, and the leakage check finds a table image that is also an analysis image. The shipped
example config (config/examples/own_images.yaml) runs at toy size and recovers the demo's planted bias.
"""

import copy
import re
import runpy
import shutil
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import ROOT, run_snakemake
from PIL import Image
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from biastransfer.data.manifest import read_manifest
from biastransfer.data.splits import read_split, write_split
from biastransfer.data.user import (
    REASON,
    UserDataError,
    analysis_set_manifest,
    config_problems,
    table_splits,
    val_draw,
)
from biastransfer.data.user_evaluation import (
    TableKind,
    has_test_split,
    table_attributes,
    table_test_split,
    table_train_attributes,
)
from biastransfer.hashing import file_digest
from biastransfer.workflow.config import check_config, fill_defaults
from biastransfer.workflow.rules.data import LeakageSettings

EXAMPLE = ROOT / "config" / "examples" / "own_images.yaml"
TINY = ROOT / "tests" / "configs" / "tiny.yaml"
SCHEMA = str(ROOT / "workflow" / "schemas" / "config.schema.yaml")


def image(path, value: int, size: int = 8):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((size, size, 3), value, dtype=np.uint8)).save(path)
    return path


def folder(tmp_path, per_class=3, classes=("a", "b")):
    """<tmp>/imgs/<class>/<i>.png, every image different."""
    for k, cls in enumerate(classes):
        for i in range(per_class):
            image(tmp_path / "imgs" / cls / f"{i}.png", 10 * k + i)
    return {"source": "folder", "root": str(tmp_path / "imgs"), "classes": list(classes), "min_per_class": 2}


def problems(entry, tmp_path):
    with pytest.raises(UserDataError) as err:
        analysis_set_manifest(entry, tmp_path / "m.parquet")
    assert not (tmp_path / "m.parquet").exists(), "nothing is written when a check fails"
    return str(err.value)


def test_a_folder_becomes_a_manifest_with_every_file_hashed(tmp_path):
    entry = folder(tmp_path)
    frame = analysis_set_manifest(entry, tmp_path / "m.parquet")
    written = read_manifest(tmp_path / "m.parquet")
    assert sorted(written["image_id"]) == [f"{c}/{i}.png" for c in "ab" for i in range(3)]
    assert (written["reason"] == REASON).all()
    assert all(file_digest(p) == h for p, h in zip(written["path"], written["sha256"]))
    threaded = analysis_set_manifest({**entry, "workers": 4}, tmp_path / "m4.parquet")
    pd.testing.assert_frame_equal(frame, threaded)


def test_a_table_becomes_a_manifest_with_paths_read_from_its_folder(tmp_path):
    folder(tmp_path)
    rows = [{"path": f"imgs/{c}/{i}.png", "class": c, "licence": "CC0"} for c in "ab" for i in range(3)]
    pd.DataFrame(rows).to_parquet(tmp_path / "t.parquet")
    frame = analysis_set_manifest(
        {"source": "table", "table": str(tmp_path / "t.parquet"), "classes": ["a", "b"]}, tmp_path / "m.parquet"
    )
    assert frame["path"].tolist() == [str(tmp_path / r["path"]) for r in rows]
    assert frame["image_id"].tolist() == [r["path"] for r in rows] and (frame["source"] == "licence: CC0").all()


def test_a_missing_folder_is_named_at_config_time(tmp_path):
    entry = folder(tmp_path)
    assert config_problems("analysis_sets.own", {**entry, "root": str(tmp_path / "nope")}) == [
        f"analysis_sets.own.root: folder not found: {tmp_path / 'nope'}"
    ]
    assert config_problems("analysis_sets.own", {**entry, "classes": ["a", "c"]}) == [
        f"analysis_sets.own.classes: class folder not found: {tmp_path / 'imgs' / 'c'}"
    ]


def test_an_empty_class_is_named(tmp_path):
    entry = folder(tmp_path)
    (tmp_path / "imgs" / "c").mkdir()
    assert "class 'c': no images in" in problems({**entry, "classes": ["a", "b", "c"]}, tmp_path)


def test_non_image_files_are_named(tmp_path):
    entry = folder(tmp_path)
    (tmp_path / "imgs" / "a" / "notes.txt").write_text("hello")
    (tmp_path / "imgs" / "b" / "fake.png").write_bytes(b"not a png at all")
    text = problems(entry, tmp_path)
    assert f"not an image file: {tmp_path / 'imgs' / 'a' / 'notes.txt'}" in text
    assert f"{tmp_path / 'imgs' / 'b' / 'fake.png'}: not a readable image" in text


def test_a_class_below_the_minimum_is_named(tmp_path):
    assert "class 'a': 3 image(s), at least 4 needed" in problems({**folder(tmp_path), "min_per_class": 4}, tmp_path)


def test_the_same_image_in_two_class_folders_is_named(tmp_path):
    entry = folder(tmp_path)
    (tmp_path / "imgs" / "b" / "copy.png").write_bytes((tmp_path / "imgs" / "a" / "0.png").read_bytes())
    text = problems(entry, tmp_path)
    assert "the same image" in text and "0.png (a)" in text and "copy.png (b)" in text


def table_entry(tmp_path, rows, **extra):
    pd.DataFrame(rows).to_csv(tmp_path / "t.csv", index=False)
    return {"source": "table", "table": str(tmp_path / "t.csv"), "classes": ["a", "b"], **extra}


def test_duplicate_paths_and_an_image_in_two_classes_are_named_by_the_line_an_editor_shows(tmp_path):
    folder(tmp_path)
    rows = [{"path": f"imgs/{c}/{i}.png", "class": c} for c in "ab" for i in range(3)]
    rows += [{"path": "imgs/a/0.png", "class": "a"}, {"path": "imgs/a/1.png", "class": "b"}]
    text = problems(table_entry(tmp_path, rows), tmp_path)
    assert f"{tmp_path / 'imgs/a/0.png'}: duplicate path: line 2, line 8" in text
    assert f"{tmp_path / 'imgs/a/1.png'}: listed in 2 classes (a, b): line 3, line 9" in text


def test_a_class_not_in_the_list_and_an_unresolved_path_are_named(tmp_path):
    folder(tmp_path)
    rows = [{"path": f"imgs/{c}/{i}.png", "class": c} for c in "ab" for i in range(3)]
    rows += [{"path": "imgs/a/9.png", "class": "a"}, {"path": "imgs/b/2.png", "class": "boat"}]
    entry = table_entry(tmp_path, rows)
    assert config_problems("analysis_sets.own", entry) == [
        "analysis_sets.own.table: line 9 ('imgs/b/2.png'): class 'boat' is not in analysis_sets.own.classes"
    ]
    text = problems(entry, tmp_path)
    assert f"{tmp_path / 'imgs/a/9.png'}: file not found (line 8 ('imgs/a/9.png'))" in text
    assert "line 9 ('imgs/b/2.png'): class 'boat' is not in the class list" in text


def test_a_listed_class_without_rows_is_named(tmp_path):
    folder(tmp_path)
    entry = table_entry(tmp_path, [{"path": f"imgs/a/{i}.png", "class": "a"} for i in range(3)])
    assert config_problems("analysis_sets.own", entry) == [
        f"analysis_sets.own.classes: class 'b' has no rows in {tmp_path / 't.csv'}"
    ]
    assert "class 'b': no rows in the table" in problems(entry, tmp_path)


def test_a_table_without_its_columns_is_named_at_config_time(tmp_path):
    entry = table_entry(tmp_path, [{"file": "x.png", "class": "a"}])
    assert config_problems("analysis_sets.own", entry) == [
        f"analysis_sets.own.table: {tmp_path / 't.csv'}: 1 problem(s):\n  missing column(s) path; has file, class"
    ]


def dataset_table(tmp_path, n=10, **columns):
    paths = [f"imgs/a/{i}.png" for i in range(n)]
    for i, p in enumerate(paths):
        image(tmp_path / p, i)
    labels = columns.pop("labels", ["a|b" if i % 2 else "b" for i in range(n)])
    pd.DataFrame({"path": paths, "labels": labels, **columns}).to_csv(tmp_path / "d.csv", index=False)
    return {"kind": "table", "table": str(tmp_path / "d.csv")}


def test_a_table_dataset_is_split_by_its_split_column_with_the_class_order_recorded(tmp_path):
    split = ["val" if i < 3 else "train" for i in range(10)]
    spec = {**dataset_table(tmp_path, split=split), "classes": ["b", "a", "c"]}
    train, val = table_splits(spec, "own")
    assert val.frame["image_id"].tolist() == [f"imgs/a/{i}.png" for i in range(3)] and len(train.frame) == 7
    write_split(tmp_path / "train.parquet", train)
    back = read_split(tmp_path / "train.parquet")
    assert back.classes == ("b", "a", "c") and back.frame["labels"].iloc[0] == ["a", "b"]


def test_without_a_split_column_the_validation_draw_is_seeded(tmp_path):
    spec = {**dataset_table(tmp_path, n=20), "val_fraction": 0.25, "seed": 3}
    train, val = table_splits(spec, "own")
    again = table_splits(spec, "own")[1]
    assert len(val.frame) == 5 and len(train.frame) == 15 and val.frame.equals(again.frame)
    assert set(train.frame["image_id"]).isdisjoint(val.frame["image_id"]) and train.classes == ("a", "b")
    assert table_splits({**spec, "seed": 4}, "own")[1].frame["image_id"].tolist() != val.frame["image_id"].tolist()
    assert val_draw(3, 0.01, 0).sum() == 1 and val_draw(3, 0.99, 0).sum() == 2


def test_parquet_labels_may_be_lists(tmp_path):
    dataset_table(tmp_path, n=4)
    frame = pd.read_csv(tmp_path / "d.csv").assign(labels=[["b"], ["a", "b"], [], ["b"]], split="train")
    frame.loc[3, "split"] = "validation"
    frame.to_parquet(tmp_path / "d.parquet")
    train, val = table_splits({"kind": "table", "table": str(tmp_path / "d.parquet"), "classes": ["a", "b"]}, "own")
    assert train.frame["labels"].tolist() == [["b"], ["a", "b"], []] and val.frame["labels"].tolist() == [["b"]]


def test_a_label_not_in_the_class_list_is_named(tmp_path):
    spec = {**dataset_table(tmp_path, labels=["a"] * 9 + ["a|boat"]), "classes": ["a", "b"]}
    assert config_problems("datasets.own", spec, dataset=True) == [
        "datasets.own.table: line 11 ('imgs/a/9.png'): label(s) ['boat'] not in datasets.own.classes"
    ]
    with pytest.raises(UserDataError, match=r"line 11 \('imgs/a/9.png'\): label\(s\) \['boat'\] not in the class list"):
        table_splits(spec, "own")


def test_an_empty_label_is_named_by_its_line(tmp_path):
    spec = dataset_table(tmp_path, labels=["a|b"] * 7 + ["a||b", "b|", ""])
    expected = [
        "datasets.own.table: line 9 ('imgs/a/7.png'): empty label in 'a||b'",
        "datasets.own.table: line 10 ('imgs/a/8.png'): empty label in 'b|'",
    ]
    assert config_problems("datasets.own", spec, dataset=True) == expected, "an empty cell is no label, no error"
    with pytest.raises(UserDataError, match=r"line 9 \('imgs/a/7.png'\): empty label in 'a\|\|b'"):
        table_splits(spec, "own")
    frame = pd.DataFrame({"path": [f"imgs/a/{i}.png" for i in range(10)], "labels": [["a", "b"]] * 9 + [["a", " "]]})
    frame.to_parquet(tmp_path / "d.parquet")
    parquet = {"kind": "table", "table": str(tmp_path / "d.parquet")}
    assert config_problems("datasets.own", parquet, dataset=True) == [
        "datasets.own.table: row 10 ('imgs/a/9.png'): empty label in ['a', ' ']"
    ]


def test_a_label_on_one_row_only_is_named_unless_the_classes_are_listed(tmp_path):
    spec = dataset_table(tmp_path, labels=["a|b"] * 9 + ["a|bb"])
    assert config_problems("datasets.own", spec, dataset=True) == [
        "datasets.own.table: label 'bb' is on line 11 ('imgs/a/9.png') only; "
        "list it in datasets.own.classes to keep it as a class"
    ]
    with pytest.raises(UserDataError, match=r"label 'bb' is on line 11 \('imgs/a/9.png'\) only"):
        table_splits(spec, "own")
    listed = {**spec, "classes": ["a", "b", "bb"]}
    assert config_problems("datasets.own", listed, dataset=True) == []
    assert table_splits(listed, "own")[0].classes == ("a", "b", "bb")


def test_a_table_dataset_names_missing_and_non_image_files(tmp_path):
    spec = dataset_table(tmp_path)
    (tmp_path / "imgs/a/3.png").unlink()
    (tmp_path / "imgs/a/4.png").write_text("text")
    with pytest.raises(UserDataError) as err:
        table_splits(spec, "own")
    assert f"{tmp_path / 'imgs/a/3.png'}: file not found" in str(err.value)
    assert f"{tmp_path / 'imgs/a/4.png'}: not a readable image" in str(err.value)


def test_the_leakage_check_finds_an_analysis_image_in_a_table_dataset_by_its_hash(tmp_path):
    entry = folder(tmp_path)
    analysis_set_manifest(entry, tmp_path / "m.parquet")
    spec = dataset_table(tmp_path / "ds", n=6)
    (tmp_path / "ds/imgs/a/5.png").write_bytes((tmp_path / "imgs/b/1.png").read_bytes())
    for split in table_splits(spec, "own"):
        write_split(tmp_path / f"{split.name}.parquet", split)
    main = runpy.run_path(str(ROOT / "workflow" / "scripts" / "check_leakage.py"))["main"]
    splits = [str(tmp_path / "train.parquet"), str(tmp_path / "val.parquet")]
    by_id = LeakageSettings(hash_files=[], evaluation=[])
    main(manifest=str(tmp_path / "m.parquet"), splits=splits, ok=str(tmp_path / "ok"), settings=by_id)
    hashed = LeakageSettings(hash_files=splits, evaluation=[])
    with pytest.raises(ValueError, match=r"image\(s\) with an analysis image's sha256: imgs/a/5.png"):
        main(manifest=str(tmp_path / "m.parquet"), splits=splits, ok=str(tmp_path / "ok2"), settings=hashed)


def test_the_config_check_accepts_user_sets_and_names_what_is_wrong(tmp_path):
    conf = yaml.safe_load(TINY.read_text())
    conf["analysis_sets"]["own"] = folder(tmp_path)
    conf["datasets"]["own_target"] = dataset_table(tmp_path / "ds")
    check_config(fill_defaults(copy.deepcopy(conf)))
    bad = copy.deepcopy(conf)
    bad["analysis_sets"]["own"]["root"] = str(tmp_path / "missing")
    bad["analysis_sets"]["cur"] = {"source": "curated", "dataset": "own_target", "classes": ["a", "b"]}
    with pytest.raises(ValueError, match="analysis_sets.cur.source: 'curated' needs a coco or openimages dataset"):
        check_config(fill_defaults(copy.deepcopy(bad)))
    del bad["analysis_sets"]["cur"]
    with pytest.raises(ValueError, match="analysis_sets.own.root: folder not found"):
        check_config(fill_defaults(bad))


@pytest.mark.parametrize(
    "entry, ok",
    [
        ({"source": "folder", "root": "x", "classes": ["a", "b"]}, True),
        ({"source": "table", "table": "t.csv", "classes": ["a", "b"]}, True),
        ({"source": "folder", "classes": ["a", "b"]}, False),  # no root
        ({"source": "folder", "root": "x", "table": "t.csv", "classes": ["a", "b"]}, False),
        ({"source": "curated", "classes": ["a", "b"]}, False),  # no dataset
        ({"source": "synthetic", "dataset": "synthetic_target", "root": "x", "classes": ["a", "b"]}, False),
    ],
)
def test_the_schema_knows_which_keys_each_source_takes(entry, ok):
    conf = yaml.safe_load(TINY.read_text())
    conf["analysis_sets"]["own"] = entry
    conf["datasets"]["own_target"] = {"kind": "table", "table": "d.csv"}
    if not ok:
        with pytest.raises(WorkflowError):
            validate(conf, SCHEMA)
        return
    validate(conf, SCHEMA)
    assert conf["analysis_sets"]["own"]["min_per_class"] == 2 and conf["analysis_sets"]["own"]["workers"] == 1
    assert conf["datasets"]["own_target"] == {
        "kind": "table",
        "table": "d.csv",
        "root": None,
        "classes": None,
        "attributes": None,
        "label_separator": "|",
        "val_fraction": 0.2,
        "seed": 0,
        "workers": 1,
    }


def toy_example(tmp_path):
    """The example config at toy size, and its input files written by the export helper."""
    conf = yaml.safe_load(EXAMPLE.read_text())
    conf["datasets"]["synthetic_biased"].update(size=32, n_train=600, n_val=40)
    conf["analysis_sets"]["own"]["min_per_class"] = 2
    conf["models"]["democnn"].update(
        arch="resnet10t",
        preprocess={"resize": 32, "crop": 32, "interpolation": "bilinear", "mean": [0.5] * 3, "std": [0.25] * 3},
        pretrain={"dataset": "synthetic_biased", "epochs": 3, "lr": 0.05, "batch_size": 32},
    )
    conf["finetune"].update(seeds=[0], defaults={"epochs": 1, "lr": 0.01, "batch_size": 32}, num_workers=0)
    conf["analysis"] = {
        "ieat": {"permutations": 2000, "seed": 0, "alpha": 0.01},
        "embed": {"batch_size": 32, "num_workers": 0},
    }
    (tmp_path / "own.yaml").write_text(yaml.safe_dump(conf))
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "workflow" / "scripts" / "export_synthetic_images.py"),
            "--out",
            "data/own_images",
            "--n_per_class",
            "16",
            "--n_images",
            "60",
            "--size",
            "32",
        ],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    return tmp_path / "own.yaml"


@pytest.mark.slow
def test_the_example_config_recovers_the_planted_association(tmp_path):
    config = toy_example(tmp_path)
    run_snakemake("--cores", "2", "--configfile", config, cwd=tmp_path)
    ieat = pd.read_csv(tmp_path / "results" / "summary" / "ieat.csv")
    row = ieat[(ieat["stage"] == "pretrained") & (ieat["test"] == "surfboard_vs_car")].iloc[0]
    assert row["effect_size"] > 0 and row["pvalue"] < 0.01, row.to_dict()
    manifest = read_manifest(tmp_path / "results" / "analysis_sets" / "own" / "manifest.parquet")
    assert len(manifest) == 7 * 16 and (manifest["reason"] == REASON).all()
    train = read_split(tmp_path / "results" / "splits" / "own_target" / "train.parquet")
    assert len(train.frame) == 48 and train.classes == ("car", "person", "refrigerator", "stop_sign", "surfboard")
    assert (tmp_path / "results" / "summary" / "findings.html").is_file()


def test_a_missing_folder_stops_snakemake_before_any_job(tmp_path):
    config = toy_example(tmp_path)
    shutil.rmtree(tmp_path / "data/own_images/analysis/car")
    done = run_snakemake("-n", "--cores", "1", "--configfile", config, cwd=tmp_path, check=False)
    assert (
        done.returncode != 0
        and "analysis_sets.own.classes: class folder not found: data/own_images/analysis/car"
        in done.stdout + done.stderr
    )
    assert not (tmp_path / "results").exists()


def test_an_image_added_to_a_class_folder_reruns_the_manifest(tmp_path):
    config = toy_example(tmp_path)
    target = "results/analysis_sets/own/manifest.parquet"
    run_snakemake(target, "--cores", "1", "--configfile", config, cwd=tmp_path)
    assert "Nothing to be done" in run_snakemake(target, "-n", "--configfile", config, cwd=tmp_path).stdout
    image(tmp_path / "data/own_images/analysis/car/new.png", 7, size=32)
    planned = run_snakemake(target, "-n", "--configfile", config, cwd=tmp_path).stdout
    assert "reason: Updated input files: data/own_images/analysis/car" in planned


def test_a_bad_file_stops_the_workflow_before_any_training_or_embedding(tmp_path):
    config = toy_example(tmp_path)
    (tmp_path / "data/own_images/analysis/car/broken.jpg").write_bytes(b"\xff\xd8 truncated")
    done = run_snakemake("--cores", "2", "--configfile", config, cwd=tmp_path, check=False)
    assert done.returncode != 0
    log = (tmp_path / "logs" / "user_analysis_set" / "own.log").read_text()
    assert "data/own_images/analysis/car/broken.jpg: not a readable image" in log
    assert not (tmp_path / "results" / "analysis_sets" / "own" / "manifest.parquet").exists()
    assert not (tmp_path / "results" / "pretrain").exists() and not (tmp_path / "results" / "embeddings").exists()


def test_a_table_datasets_test_rows_are_its_evaluation_split_with_their_attribute(tmp_path):
    split = ["val", "val", "train", "train", "train", "train", "test", "test", "test", "test"]
    attribute = ["", "", "", "", "", "", "man", "woman", "", "man"]
    spec = {
        **dataset_table(tmp_path, split=split, attribute=attribute),
        "classes": ["a", "b"],
        "attributes": ["man", "woman"],
    }
    assert has_test_split(spec) and not has_test_split(dataset_table(tmp_path / "no", n=4))
    train, val = table_splits(spec, "own")
    test = table_test_split(spec, "own", exclude={"imgs/a/9.png"})
    assert (len(train.frame), len(val.frame), test.name) == (4, 2, "test")
    assert test.frame["image_id"].tolist() == [f"imgs/a/{i}.png" for i in (6, 7, 8)]
    got = table_attributes(spec, "own", test.frame["image_id"])
    assert got["attribute"].tolist() == ["man", "woman", None]
    assert got["source"].tolist()[-1] == "the table's attribute column is empty; excluded"
    with pytest.raises(
        UserDataError, match=r"image 'imgs/a/2.png' of the evaluation split has no row with split 'test'"
    ):
        table_attributes(spec, "own", ["imgs/a/2.png"])
    no_column = {**dataset_table(tmp_path / "nc", split=split), "classes": ["a", "b"]}
    with pytest.raises(UserDataError, match="rows with split 'test' need an 'attribute' column"):
        table_test_split(no_column, "own")


def test_a_table_datasets_training_rows_give_the_attribute_an_intervention_rebalances(tmp_path):
    """Every training row needs its attribute (the evaluation split may leave one empty): the attribute file
    of the training split, then an empty cell and a missing column named with the table, line, image and
    column, before any finetuning."""
    from report_site import script

    from biastransfer.data.attributes import read_attributes

    split = ["val", "val", "train", "train", "train", "train", "test", "test", "test", "test"]
    attribute = ["", "", "woman", "man", "man", "woman", "man", "", "", ""]
    spec = {
        **dataset_table(tmp_path, split=split, attribute=attribute),
        "classes": ["a", "b"],
        "attributes": ["man", "woman"],
    }
    train, _ = table_splits(spec, "own")
    write_split(tmp_path / "train.parquet", train)
    out = tmp_path / "train_attributes.parquet"
    script("real_attributes").main(spec, str(tmp_path / "train.parquet"), str(out))
    attrs = read_attributes(out)
    assert (attrs.split, attrs.attributes, attrs.attribute_classes) == ("train", ("man", "woman"), ())
    assert list(attrs.of(train.frame["image_id"], where="t")) == ["woman", "man", "man", "woman"]
    assert set(attrs.frame["source"]) == {"the table's attribute column"}
    attribute[3] = " "
    gap = {
        **dataset_table(tmp_path / "gap", split=split, attribute=attribute),
        "classes": ["a", "b"],
        "attributes": ["man", "woman"],
    }
    with pytest.raises(UserDataError) as err:
        table_train_attributes(gap, "own", table_splits(gap, "own")[0].frame["image_id"])
    assert str(err.value).startswith(f"dataset own table {tmp_path / 'gap' / 'd.csv'}: an intervention takes its")
    assert err.value.problems == ["line 5 ('imgs/a/3.png'): image 'imgs/a/3.png': empty 'attribute' column"]
    none = {**dataset_table(tmp_path / "none", split=split), "classes": ["a", "b"]}
    with pytest.raises(UserDataError, match="missing column"):
        table_train_attributes(none, "own", ["imgs/a/2.png"])
    with pytest.raises(UserDataError, match=r"image 'imgs/a/7.png' of the training split has no training row"):
        table_train_attributes(spec, "own", ["imgs/a/7.png"])


def typo_table(tmp_path, attribute, split, **entry):
    """A 14-row dataset table with ``attribute`` and ``split`` columns, classes a and b, attributes man and
    woman unless ``entry`` says otherwise."""
    return {
        **dataset_table(tmp_path, n=len(split), split=split, attribute=attribute),
        "classes": ["a", "b"],
        "attributes": ["man", "woman"],
        **entry,
    }


SPLIT = ["train"] * 4 + ["val"] * 2 + ["test"] * 8


def test_an_attribute_typo_on_test_rows_is_named_with_its_lines_not_taken_as_a_group(tmp_path):
    """``mann`` on 3 of 8 test rows beside man and woman: the config check and the attribute rule name the
    table, the three lines and the value, where it would be a third group of the amplification."""
    attribute = [""] * 6 + ["man", "mann", "woman", "mann", "man", "woman", "mann", "woman"]
    spec = typo_table(tmp_path, attribute, SPLIT)
    message = (
        f"{tmp_path / 'd.csv'}, line 9 ('imgs/a/7.png'), line 11 ('imgs/a/9.png'), line 14 ('imgs/a/12.png'): "
        "attribute 'mann' is not one of datasets.own.attributes (man, woman); did you mean 'man'?"
    )
    assert config_problems("datasets.own", spec, dataset=True) == [message]
    test = table_test_split(spec, "own")
    with pytest.raises(UserDataError) as err:
        table_attributes(spec, "own", test.frame["image_id"])
    assert err.value.problems == [message]
    spec["table"] = str(tmp_path / "d.parquet")
    pd.read_csv(tmp_path / "d.csv", keep_default_na=False).to_parquet(spec["table"])
    assert config_problems("datasets.own", spec, dataset=True) == [
        message.replace("d.csv", "d.parquet")
        .replace("line 9", "row 8")
        .replace("line 11", "row 10")
        .replace("line 14", "row 13")
    ]


def test_six_rows_of_a_differently_cased_value_stop_the_config_check(tmp_path):
    """``Alpha`` on six rows of a table whose attributes are alpha and beta: check_config (DAG-build time,
    before any job) names it; the declared order is the attribute files' order."""
    attribute = [""] * 6 + ["Alpha", "beta", "Alpha", "Alpha", "beta", "Alpha", "Alpha", "Alpha"]
    conf = yaml.safe_load(TINY.read_text())
    conf["datasets"]["own_target"] = typo_table(tmp_path, attribute, SPLIT, attributes=["beta", "alpha"])
    with pytest.raises(ValueError) as err:
        check_config(fill_defaults(copy.deepcopy(conf)))
    assert (
        f"{tmp_path / 'd.csv'}, line 8 ('imgs/a/6.png'), line 10 ('imgs/a/8.png'), "
        "line 11 ('imgs/a/9.png'), line 13 ('imgs/a/11.png'), line 14 ('imgs/a/12.png'), line 15 ('imgs/a/13.png'): "
        "attribute 'Alpha' is not one of datasets.own_target.attributes (beta, alpha); did you mean 'alpha'?"
    ) in str(err.value)
    fixed = typo_table(tmp_path / "ok", [a.lower() for a in attribute], SPLIT, attributes=["beta", "alpha"])
    conf["datasets"]["own_target"] = fixed
    check_config(fill_defaults(copy.deepcopy(conf)))
    split = table_test_split(fixed, "own_target")
    values, frame = TableKind().test_attributes(fixed, split, None)
    assert values == ("beta", "alpha") and frame["attribute"].tolist() == [a.lower() for a in attribute[6:]]


def test_a_typo_on_one_training_row_of_an_intervened_table_is_found_before_training(tmp_path):
    """``alpah`` on one training row of a table an intervention takes: the config check names it (before any
    job, so before training), and so does the training attribute rule; an empty training cell is named at
    config time too."""
    attribute = ["alpha", "beta", "alpah", "beta", "alpha", "beta"] + ["alpha", "beta"] * 4
    conf = yaml.safe_load(TINY.read_text())
    conf["datasets"]["own_target"] = typo_table(tmp_path, attribute, SPLIT, attributes=["alpha", "beta"])
    conf["datasets"]["own_fix"] = {"kind": "intervention", "from": "own_target", "objects": ["a"]}
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"{tmp_path / 'd.csv'}, line 4 ('imgs/a/2.png'): attribute 'alpah' is not one of "
            "datasets.own_target.attributes (alpha, beta); did you mean 'alpha'?"
        ),
    ):
        check_config(fill_defaults(copy.deepcopy(conf)))
    with pytest.raises(UserDataError, match="attribute 'alpah' is not one of"):
        table_train_attributes(conf["datasets"]["own_target"], "own_target", ["imgs/a/0.png"])
    attribute[2] = ""
    conf["datasets"]["own_target"] = typo_table(tmp_path / "gap", attribute, SPLIT, attributes=["alpha", "beta"])
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"datasets.own_fix.from: table {tmp_path / 'gap' / 'd.csv'}, line 4 ('imgs/a/2.png'): empty 'attribute' "
            "cell on a training row"
        ),
    ):
        check_config(fill_defaults(copy.deepcopy(conf)))


def test_the_documented_table_columns_name_every_split_value():
    """config/README.md (from the schema) lists every value of a table's split column, test included."""
    from biastransfer.data.user import SPLIT_NAMES

    row = next(
        line for line in (ROOT / "config" / "README.md").read_text().splitlines() if line.startswith("| `table`")
    )
    listed = re.search(r"split \(([^)]*)\)", row).group(1)
    assert all(re.search(rf"\b{value}\b", listed) for value in SPLIT_NAMES), listed


def test_a_tables_attribute_values_are_declared_with_its_column(tmp_path):
    """An attribute column needs its declared values, and declared values need the column."""
    attribute = [""] * 6 + ["man", "woman"] * 4
    undeclared = typo_table(tmp_path, attribute, SPLIT, attributes=None)
    assert config_problems("datasets.own", undeclared, dataset=True) == [
        f"datasets.own.attributes: not set, but table {tmp_path / 'd.csv'} has an 'attribute' column (values "
        "found: 'man', 'woman'); declare the values it may hold, e.g. attributes: [man, woman]"
    ]
    with pytest.raises(UserDataError, match="datasets.own.attributes: not set"):
        table_attributes(undeclared, "own", ["imgs/a/6.png"])
    no_column = {**dataset_table(tmp_path / "nc", n=14, split=SPLIT), "attributes": ["man", "woman"]}
    assert config_problems("datasets.own", no_column, dataset=True) == [
        f"datasets.own.attributes: declared, but table {tmp_path / 'nc' / 'd.csv'} has no 'attribute' column"
    ]
    assert config_problems("datasets.own", dataset_table(tmp_path / "none", n=14, split=SPLIT), dataset=True) == []


def test_an_intervention_on_a_table_runs_through_its_rules(tmp_path):
    """The demo config plus a 24-row table (surfboards beside a man 10 : 2 on its 20 training rows) and an
    intervention on it: only the intervention's training split is asked for, so the table is split and
    published, its training rows get their attribute (real_train_attributes) and the surfboards are
    subsampled to the split's overall ratio, 14 : 6."""
    rows = []
    for i in range(24):
        image(tmp_path / f"imgs/{i}.png", i)
        surf = i < 12
        attribute = ("man" if i % 6 else "woman") if surf else ("woman" if i % 2 else "man")
        rows.append(
            (f"imgs/{i}.png", "surfboard|person" if surf else "car|person", "val" if i >= 20 else "train", attribute)
        )
    pd.DataFrame(rows, columns=["path", "labels", "split", "attribute"]).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "over.yaml").write_text(
        "datasets:\n  tab: {kind: table, table: t.csv, attributes: [man, woman]}\n"
        "  tab_int: {kind: intervention, from: tab, objects: [surfboard], target: independent, method: subsample}\n"
    )
    target = "results/splits/tab_int/train.parquet"
    done = run_snakemake(
        "--cores", "1", "--configfile", ROOT / "config" / "config.yaml", "over.yaml", "--", target, cwd=tmp_path
    )
    assert (
        "rule real_train_attributes" in done.stdout + done.stderr and "rule finetune" not in done.stdout + done.stderr
    )
    table = pd.read_csv(tmp_path / "results" / "interventions" / "tab_int" / "cooccurrence.csv")
    images = table.set_index(["when", "attribute"])["images"].to_dict()
    assert images == {("before", "man"): 10, ("before", "woman"): 2, ("after", "man"): 4, ("after", "woman"): 2}
    assert set(table["target"].round(6)) == {0.7, 0.3}
    assert len(read_split(tmp_path / target).frame) == 20 - 6
    rows[3] = (*rows[3][:3], "alpah")  # a typo on one training row: the workflow stops before any job
    pd.DataFrame(rows, columns=["path", "labels", "split", "attribute"]).to_csv(tmp_path / "t.csv", index=False)
    done = run_snakemake(
        "--cores",
        "1",
        "--configfile",
        ROOT / "config" / "config.yaml",
        "over.yaml",
        "--",
        target,
        cwd=tmp_path,
        check=False,
    )
    assert (
        done.returncode != 0
        and "t.csv, line 5 ('imgs/3.png'): attribute 'alpah' is not one of datasets.tab.attributes (man, woman)"
        in done.stdout + done.stderr
    )
    assert "rule " not in done.stdout + done.stderr, "no job runs"


def test_the_leakage_check_records_each_evaluation_split_and_fails_on_a_training_image(tmp_path):
    entry = folder(tmp_path)
    analysis_set_manifest(entry, tmp_path / "m.parquet")
    split = ["train"] * 4 + ["val", "val"] + ["test"] * 4
    spec = {**dataset_table(tmp_path / "ds", split=split, attribute=[""] * 6 + ["x", "y"] * 2), "classes": ["a", "b"]}
    train, val = table_splits(spec, "own")
    write_split(tmp_path / "train.parquet", train)
    write_split(tmp_path / "val.parquet", val)
    write_split(tmp_path / "test.parquet", table_test_split(spec, "own"))
    main = runpy.run_path(str(ROOT / "workflow" / "scripts" / "check_leakage.py"))["main"]
    splits = [str(tmp_path / f"{s}.parquet") for s in ("train", "val", "test")]
    settings = LeakageSettings(hash_files=[], evaluation=[{"test": splits[2], "training": splits[:2]}])
    main(manifest=str(tmp_path / "m.parquet"), splits=splits, ok=str(tmp_path / "ok"), settings=settings)
    assert (
        f"evaluation split {splits[2]}: 4 images, in none of {splits[0]} (4), {splits[1]} (2)"
        in (tmp_path / "ok").read_text()
    )
    leaky = table_test_split(spec, "own")
    write_split(tmp_path / "test.parquet", replace(leaky, frame=pd.concat([leaky.frame, train.frame.iloc[:1]])))
    with pytest.raises(
        ValueError, match=rf"split '{splits[0]}': 1 evaluation \({splits[2]}\) image id\(s\): imgs/a/0.png"
    ):
        main(manifest=str(tmp_path / "m.parquet"), splits=splits, ok=str(tmp_path / "ok2"), settings=settings)
