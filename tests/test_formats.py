"""The file formats: embeddings Parquet, manifests and splits (docs/formats.md)."""

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from biastransfer.data.manifest import read_manifest, validate_manifest, verify_files, write_manifest
from biastransfer.data.splits import Split, read_split, read_split_columns, write_split
from biastransfer.embeddings import checked_embedding_ids, read_embeddings, read_metadata, write_embeddings
from biastransfer.hashing import file_digest
from biastransfer.workflow.rules.data import LeakageSettings


def test_embeddings_round_trip_with_metadata(tmp_path):
    path = tmp_path / "e.parquet"
    emb = np.random.default_rng(0).standard_normal((5, 7)).astype(np.float32)
    write_embeddings(path, list("abcde"), ["x", "x", "y", "y", "y"], emb, {"model": "m", "stage": "pretrained"})
    table = read_embeddings(path)
    assert np.array_equal(table.embeddings, emb)
    assert table.class_names == ["x", "y"] and table.of_class("y").shape == (3, 7)
    assert table.metadata["model"] == "m" and table.metadata["dim"] == 7
    assert read_metadata(path)["stage"] == "pretrained"
    schema = pq.read_schema(path)
    assert pa.types.is_fixed_size_list(schema.field("embedding").type)
    assert schema.field("embedding").type.value_type == pa.float32()
    with pytest.raises(KeyError, match="'z'"):
        table.of_class("z")


def test_user_embeddings_as_plain_lists_are_read(tmp_path):
    path = tmp_path / "mine.parquet"
    pd.DataFrame({"image_id": ["1", "2"], "class": ["a", "b"], "embedding": [[1.0, 0.0], [0.0, 1.0]]}).to_parquet(path)
    assert read_embeddings(path).embeddings.shape == (2, 2)


def test_bad_embeddings_are_refused_and_leave_no_file(tmp_path):
    path = tmp_path / "e.parquet"
    emb = np.ones((2, 3))
    emb[1, 2] = np.nan
    with pytest.raises(ValueError, match="non-finite embeddings for images b"):
        write_embeddings(path, ["a", "b"], ["x", "x"], emb)
    assert list(tmp_path.iterdir()) == []
    pd.DataFrame({"image_id": ["1"], "embedding": [[1.0]]}).to_parquet(path)
    with pytest.raises(ValueError, match="missing column.*class"):
        read_embeddings(path)
    path.write_bytes(b"not parquet")
    with pytest.raises(ValueError, match="e.parquet: not a readable Parquet file"):
        read_embeddings(path)


@pytest.mark.parametrize(
    "columns, problem",
    [
        ({"image_id": ["1", "1"], "class": ["a", "a"], "embedding": [[1.0], [2.0]]}, "repeats '1'"),
        ({"image_id": ["1", "2"], "class": ["a", "a"], "embedding": [[1.0], None]}, "is null in row 1"),
        ({"image_id": ["1", "2"], "class": ["a", "a"], "embedding": [[1.0], [1.0, 2.0]]}, "has 2 values in row 1"),
        ({"image_id": ["1", "2"], "class": ["a", "a"], "embedding": [[1.0], [np.inf]]}, "non-finite .* images 2"),
        ({"image_id": ["1", "2"], "embedding": [[1.0], [2.0]]}, "missing column.*class"),
    ],
)
def test_the_batchwise_check_refuses_what_the_reader_refuses(tmp_path, columns, problem):
    path = tmp_path / "e.parquet"
    pq.write_table(pa.table(columns), path)
    for check in (read_embeddings, checked_embedding_ids):
        with pytest.raises(ValueError, match=f"e.parquet: .*{problem}"):
            check(path)


def test_the_batchwise_check_holds_no_matrix(tmp_path):
    import tracemalloc

    path = tmp_path / "e.parquet"
    emb = np.random.default_rng(0).standard_normal((9000, 256)).astype(np.float32)  # three reading batches
    ids = [f"i{k}" for k in range(len(emb))]
    write_embeddings(path, ids, ["x"] * len(ids), emb)
    tracemalloc.start()
    assert checked_embedding_ids(path).tolist() == ids
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < emb.nbytes / 4, f"{peak} bytes traced checking a {emb.nbytes}-byte matrix"


def _manifest(tmp_path, rows):
    frame = pd.DataFrame(rows, columns=["image_id", "class"])
    paths = []
    for image_id in frame["image_id"]:
        p = tmp_path / f"{image_id}.png"
        p.write_bytes(image_id.encode())
        paths.append(str(p))
    import hashlib

    return frame.assign(
        path=paths,
        sha256=[hashlib.sha256(i.encode()).hexdigest() for i in frame["image_id"]],
        source_split="val",
        source="test",
        reason="test",
    )


def test_manifest_checks_name_the_problem(tmp_path):
    good = _manifest(tmp_path, [("1", "a"), ("2", "a"), ("3", "b"), ("4", "b")])
    write_manifest(tmp_path / "m.parquet", good)
    assert len(read_manifest(tmp_path / "m.parquet")) == 4
    verify_files(good, tmp_path)
    with pytest.raises(ValueError, match="image '1' appears more than once.*classes a, b"):
        validate_manifest(_manifest(tmp_path, [("1", "a"), ("2", "a"), ("1", "b"), ("4", "b")]))
    with pytest.raises(ValueError, match="'b' has 1"):
        validate_manifest(_manifest(tmp_path, [("1", "a"), ("2", "a"), ("3", "b")]))
    (tmp_path / "2.png").write_bytes(b"changed")
    with pytest.raises(ValueError, match="2.png"):
        verify_files(good, tmp_path)
    (tmp_path / "2.png").unlink()
    with pytest.raises(FileNotFoundError, match="2.png"):
        verify_files(good, tmp_path)


def test_split_round_trip_and_unknown_label(tmp_path):
    frame = pd.DataFrame({"image_id": ["1", "2"], "path": ["a.png", "b.png"], "labels": [["car"], ["car", "person"]]})
    write_split(tmp_path / "s.parquet", Split("d", "train", ("car", "person"), frame))
    split = read_split(tmp_path / "s.parquet")
    assert split.classes == ("car", "person") and split.frame["labels"].tolist() == [["car"], ["car", "person"]]
    meta = json.loads(pq.read_schema(tmp_path / "s.parquet").metadata[b"biastransfer"])
    assert meta == {"dataset": "d", "split": "train", "classes": ["car", "person"]}
    with pytest.raises(ValueError, match="image '2' has label\\(s\\) \\['person'\\]"):
        write_split(tmp_path / "t.parquet", Split("d", "train", ("car",), frame))
    assert not (tmp_path / "t.parquet").exists()


def test_some_columns_of_a_split_are_read_alone_and_a_wrong_one_is_named(tmp_path):
    frame = pd.DataFrame({"image_id": ["1", "2"], "path": ["a.png", "b.png"], "labels": [["car"], ["car", "person"]]})
    write_split(tmp_path / "s.parquet", Split("d", "train", ("car", "person"), frame))
    ids = read_split_columns(tmp_path / "s.parquet", ["image_id"])
    assert ids.to_dict("list") == {"image_id": ["1", "2"]}
    both = read_split_columns(tmp_path / "s.parquet", ["image_id", "path"])
    assert both.to_dict("list") == {"image_id": ["1", "2"], "path": ["a.png", "b.png"]}
    with pytest.raises(ValueError, match=r"s\.parquet: a split file has no column\(s\) sha256"):
        read_split_columns(tmp_path / "s.parquet", ["image_id", "sha256"])
    pq.write_table(
        pa.table({"image_id": ["1"]}).replace_schema_metadata({b"biastransfer": b"{}"}), tmp_path / "x.parquet"
    )
    with pytest.raises(ValueError, match=r"x\.parquet: missing column\(s\) path"):
        read_split_columns(tmp_path / "x.parquet", ["image_id", "path"])
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(ValueError, match=r"bad\.parquet: not a readable split file"):
        read_split_columns(tmp_path / "bad.parquet", ["image_id"])


def test_the_leakage_check_compares_ids_and_the_files_of_hashed_splits(tmp_path, monkeypatch):
    """check_leakage.py reads only the ids (and, where it hashes, the paths) of each split: an analysis
    image's id in a split, or its file under another id in a hashed split, fails the check, naming it."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))
    import check_leakage

    monkeypatch.chdir(tmp_path)
    for name, data in (("a.png", b"A"), ("b.png", b"B"), ("c.png", b"C"), ("d.png", b"D")):
        Path(name).write_bytes(data)
    analysis = {"image_id": ["x1", "x2"], "class": ["car", "car"], "path": ["a.png", "d.png"]}
    analysis |= {"sha256": [file_digest("a.png"), file_digest("d.png")], "source_split": ["val", "val"]}
    write_manifest("m.parquet", pd.DataFrame({**analysis, "source": ["s", "s"], "reason": ["r", "r"]}))
    frame = pd.DataFrame({"image_id": ["1", "2"], "path": ["b.png", "c.png"], "labels": [["car"], []]})
    write_split("train.parquet", Split("d", "train", ("car",), frame))

    def leakage(hashed: list) -> LeakageSettings:
        return LeakageSettings(hash_files=hashed, evaluation=[])

    check_leakage.main("m.parquet", ["train.parquet"], "ok", leakage(["train.parquet"]))
    assert Path("ok").read_text().startswith("2 analysis images of m.parquet are in none of 2 split images")
    write_split("val.parquet", Split("d", "val", ("car",), frame.assign(path=["a.png", "c.png"])))
    check_leakage.main("m.parquet", ["train.parquet", "val.parquet"], "ok", leakage(["train.parquet"]))
    with pytest.raises(ValueError, match=r"split 'val.parquet': 1 image\(s\) with an analysis image's sha256: 1 "):
        check_leakage.main(
            "m.parquet", ["train.parquet", "val.parquet"], "ok", leakage(["train.parquet", "val.parquet"])
        )
    write_split("test.parquet", Split("d", "test", ("car",), frame.assign(image_id=["x1", "3"])))
    with pytest.raises(ValueError, match=r"split 'test.parquet': 1 analysis image id\(s\): x1"):
        check_leakage.main("m.parquet", ["train.parquet", "test.parquet"], "ok", leakage([]))
    # each evaluation split against its training splits, recorded in the settings' order
    for name, ids in (("eval_b.parquet", ["7", "8"]), ("eval_a.parquet", ["9"])):
        write_split(name, Split("d", "test", ("car",), frame.head(len(ids)).assign(image_id=ids)))
    pairs = [{"test": t, "training": ["train.parquet"]} for t in ("eval_b.parquet", "eval_a.parquet")]
    splits = ["train.parquet", "eval_b.parquet", "eval_a.parquet"]
    check_leakage.main("m.parquet", splits, "ok", LeakageSettings(hash_files=[], evaluation=pairs))
    assert Path("ok").read_text().splitlines()[1:] == [
        "evaluation split eval_b.parquet: 2 images, in none of train.parquet (2)",
        "evaluation split eval_a.parquet: 1 images, in none of train.parquet (2)",
    ]
    write_split("eval_a.parquet", Split("d", "test", ("car",), frame.head(1).assign(image_id=["2"])))
    with pytest.raises(ValueError, match=r"evaluation \(eval_a.parquet\) images leak .*\n  split 'train.parquet': 1"):
        check_leakage.main("m.parquet", splits, "ok", LeakageSettings(hash_files=[], evaluation=pairs))
