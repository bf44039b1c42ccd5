"""benchmarks/compare_runs.py: two runs the same but for provenance and timing pass; any other change fails."""

import importlib.util
import io
import json
import zipfile

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from conftest import ROOT


def compare_runs():
    spec = importlib.util.spec_from_file_location("compare_runs", ROOT / "benchmarks" / "compare_runs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_run(root, commit, seconds, value=0.5):
    (root / "summary").mkdir(parents=True)
    pd.DataFrame({"test": ["t"], "effect_size": [value], "git_commit": [commit]}).to_csv(
        root / "summary" / "ieat.csv", index=False
    )
    table = pa.table({"x": [1.0, value]}).replace_schema_metadata({"provenance": json.dumps({"git_commit": commit})})
    pq.write_table(table, root / "summary" / "e.parquet")
    (root / "summary" / "m.json").write_text(json.dumps({"metric": value, "history": [{"seconds": seconds}]}))
    page = f"<p>commit {commit} at 2026-12-0{int(seconds)} 10:00:00</p>"
    (root / "summary" / "p.html").write_text(page)
    with zipfile.ZipFile(root / "report.zip", "w") as z:
        z.writestr("report/p.html", page)
    (root / "benchmarks").mkdir()
    (root / "benchmarks" / "job.tsv").write_text(f"s\n{seconds}\n")


def test_provenance_and_timing_alone_pass_and_a_changed_value_is_named(tmp_path, capsys):
    main = compare_runs().main
    write_run(tmp_path / "ref", "82d266d14b2ee64b", 1.0)
    write_run(tmp_path / "same", "384e7bde84ccc3d6", 2.0)
    assert main([str(tmp_path / "ref"), str(tmp_path / "same")]) == 0
    write_run(tmp_path / "changed", "384e7bde84ccc3d6", 2.0, value=0.6)
    assert main([str(tmp_path / "ref"), str(tmp_path / "changed")]) == 1
    out = capsys.readouterr().out
    assert "summary/ieat.csv: columns ['effect_size']" in out and "summary/e.parquet: table data" in out
    assert "summary/m.json: keys ['metric']" in out
    (tmp_path / "same" / "summary" / "extra.csv").write_text("a\n1\n")
    assert main([str(tmp_path / "ref"), str(tmp_path / "same")]) == 1
    assert "only in" in capsys.readouterr().out


def test_only_timing_names_and_digests_are_ignored():
    difference = compare_runs().difference
    assert difference("m.json", b'{"seconds": 1, "images_per_s": 2}', b'{"seconds": 3, "images_per_s": 4}') is None
    assert difference("m.json", b'{"spread_per_seed": 1}', b'{"spread_per_seed": 2}') == "keys ['spread_per_seed']"
    assert difference("p.html", b"<p>commit 82d266d</p>", b"<p>commit 384e7bd</p>") is None
    assert difference("p.html", b"<p>1234567 images</p>", b"<p>1234568 images</p>") == "page text"


def test_an_archive_is_compared_member_by_member():
    difference = compare_runs().difference

    def archive(text):
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as z:
            z.writestr("a.csv", text)
        return buffer.getvalue()

    assert difference("r.zip", archive("x,git_commit\n1,abc1234\n"), archive("x,git_commit\n1,def5678\n")) is None
    assert difference("r.zip", archive("x\n1\n"), archive("x\n2\n")) == "members ['a.csv']"
