"""The embeddings reader and the ``biastransfer`` command on bad input (issue 17, defect 5): every
problem is named (file, column, row, class), and every command-line failure is one line on stderr
with exit status 2."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from biastransfer.cli import main as cli
from biastransfer.embeddings import read_embeddings, write_embeddings

F32x2 = pa.list_(pa.float32(), 2)


def table_file(path, ids, classes, embedding) -> str:
    pq.write_table(
        pa.table(
            {"image_id": pa.array(ids, pa.string()), "class": pa.array(classes, pa.string()), "embedding": embedding}
        ),
        path,
    )
    return str(path)


@pytest.fixture
def good(tmp_path) -> str:
    rng = np.random.default_rng(0)
    path = tmp_path / "good.parquet"
    classes = [c for c in ("man", "woman", "car", "boat") for _ in range(5)]  # 5 each: enough to resample
    write_embeddings(path, [f"i{k}" for k in range(20)], classes, rng.standard_normal((20, 4)))
    return str(path)


def run(capsys, *argv) -> tuple[int, str, str]:
    status = cli(list(map(str, argv)))
    out, err = capsys.readouterr()
    return status, out, err


def fails(capsys, *argv) -> str:
    """Run the command, check it failed with status 2 and one line on stderr; return that line."""
    status, _, err = run(capsys, *argv)
    assert status == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    return err


BAD_FILES = {
    "null embedding row": (
        ["a", "b", "c"],
        ["x", "x", "y"],
        pa.array([[1, 2], None, [3, 4]], F32x2),
        "column 'embedding' is null in row 1 (image 'b')",
    ),
    "null embedding value": (
        ["a", "b"],
        ["x", "x"],
        pa.array([[1, 2], [None, 4]], pa.list_(pa.float64())),
        "column 'embedding' holds a null value in row 1 (image 'b')",
    ),
    "null class": (["a", "b", "c"], ["x", None, "x"], pa.array([[1, 2]] * 3, F32x2), "column 'class' is null in row 1"),
    "null id": ([None, "b"], ["x", "x"], pa.array([[1, 2]] * 2, F32x2), "column 'image_id' is null in row 0"),
    "duplicate id": (
        ["a", "b", "a"],
        ["x", "x", "y"],
        pa.array([[1, 2], [2, 1], [3, 4]], F32x2),
        "column 'image_id' repeats 'a' (rows 0, 2)",
    ),
    "no rows": ([], [], pa.array([], F32x2), "no rows"),
    "ragged lists": (
        ["a", "b"],
        ["x", "x"],
        pa.array([[1, 2], [1, 2, 3]], pa.list_(pa.float64())),
        "column 'embedding' has 3 values in row 1 (image 'b') but 2 in row 0",
    ),
}


@pytest.mark.parametrize("case", BAD_FILES)
def test_the_reader_names_file_column_and_row_and_the_command_says_it_in_one_line(tmp_path, capsys, case):
    ids, classes, embedding, message = BAD_FILES[case]
    path = table_file(tmp_path / "bad.parquet", ids, classes, embedding)
    with pytest.raises(ValueError, match=f"^{path}: .*{message.replace('(', '.').replace(')', '.')}"):
        read_embeddings(path)
    for command in ("info", "similarity"):
        assert message in fails(capsys, command, path)


def test_list_double_input_is_read_in_batches_with_the_same_values(tmp_path, monkeypatch):
    """Several batches (of 3 rows here) of a list<double> column give exactly the float32 matrix."""
    import biastransfer.embeddings as emb

    monkeypatch.setattr(emb, "_BATCH_ROWS", 3)
    values = np.random.default_rng(1).standard_normal((10, 5))
    path = table_file(
        tmp_path / "d.parquet",
        [f"i{k}" for k in range(10)],
        ["x"] * 10,
        pa.array(values.tolist(), pa.list_(pa.float64())),
    )
    table = read_embeddings(path)
    assert table.embeddings.dtype == np.float32
    np.testing.assert_array_equal(table.embeddings, values.astype(np.float32))
    bad = values.tolist()
    bad[7] = bad[7][:4]
    path = table_file(
        tmp_path / "r.parquet", [f"i{k}" for k in range(10)], ["x"] * 10, pa.array(bad, pa.list_(pa.float64()))
    )
    with pytest.raises(ValueError, match="has 4 values in row 7 .image 'i7'. but 5 in row 0"):
        read_embeddings(path)


def test_a_missing_input_says_no_such_file(tmp_path, capsys):
    err = fails(capsys, "info", tmp_path / "nope.parquet")
    assert f"{tmp_path / 'nope.parquet'}: no such file" in err and "Parquet" not in err
    assert "is a directory" in fails(capsys, "similarity", tmp_path)
    (tmp_path / "junk.parquet").write_text("not parquet")
    assert "not a readable Parquet file" in fails(capsys, "info", tmp_path / "junk.parquet")


def test_output_paths_that_are_directories_or_symlinks_are_refused_before_any_work(good, tmp_path, capsys):
    folder = tmp_path / "out"
    folder.mkdir()
    assert f"output {folder} is a directory" in fails(capsys, "similarity", good, "-o", folder)
    target = tmp_path / "elsewhere.csv"
    target.write_text("keep me")
    link = tmp_path / "link.csv"
    os.symlink(target, link)
    assert f"output {link} is a symbolic link" in fails(capsys, "similarity", good, "-o", link)
    assert target.read_text() == "keep me" and link.is_symlink()
    status, _, err = run(capsys, "similarity", good, "-o", tmp_path / "sim.csv")
    assert status == 0 and (tmp_path / "sim.csv").is_file()


def test_a_class_too_small_for_a_statistic_is_named(tmp_path, capsys):
    path = table_file(
        tmp_path / "small.parquet",
        ["a", "b", "c"],
        ["man", "man", "giraffe"],
        pa.array([[1, 2], [2, 1], [3, 4]], F32x2),
    )
    message = "class 'giraffe' has 1 image; intra-class similarity needs at least 2"
    assert message in fails(capsys, "similarity", path)
    assert message in fails(capsys, "bts", path, path)
    err = fails(capsys, "ieat", path, "--X", "man", "--Y", "giraffe", "--A", "car", "--B", "man")
    assert "class 'car' is not in the file (classes: man, giraffe)" in err


def test_an_ieat_with_a_class_in_two_roles_is_refused(good, capsys):
    assert "X and B are both 'man' (a class takes one role)" in fails(
        capsys, "ieat", good, "--X", "man", "--Y", "woman", "--A", "car", "--B", "man"
    )


def test_ieat_says_when_a_set_is_too_small_for_an_interval(good, capsys, tmp_path):
    small = tmp_path / "small.parquet"
    rng = np.random.default_rng(0)
    write_embeddings(
        small,
        [f"i{k}" for k in range(8)],
        [c for c in ("man", "woman", "car", "boat") for _ in range(2)],
        rng.standard_normal((8, 4)),
    )
    status, _, err = run(capsys, "ieat", small, "--X", "man", "--Y", "woman", "--A", "car", "--B", "boat")
    assert status == 0 and "95% CI not estimable (a set under 5 images)" in err


def test_ieat_prints_the_interval_and_both_p_values(good, capsys):
    status, out, err = run(
        capsys, "ieat", good, "--X", "man", "--Y", "woman", "--A", "car", "--B", "boat", "--bootstrap", "200"
    )
    assert status == 0 and "ci_low" in out and "pvalue_two_sided" in out
    assert "95% CI" in err and "greater p" in err and "two-sided p" in err
