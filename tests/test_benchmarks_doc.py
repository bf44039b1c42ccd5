"""docs/benchmarks.md is rendered from benchmarks/results/*.json (benchmarks/render_benchmarks.py)."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("render_benchmarks", ROOT / "benchmarks" / "render_benchmarks.py")
render_benchmarks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(render_benchmarks)


def test_the_page_is_up_to_date_with_the_result_files():
    assert render_benchmarks.main(["--check"]) == 0, "run: python benchmarks/render_benchmarks.py"


def test_records_become_tables_and_a_scripts_output_its_flattened_keys(tmp_path):
    record = {"title": "T", "command": "make t", "commit": "abc1234", "machine": "2 cores", "figures": [["a", "1 s"]]}
    (tmp_path / "a.json").write_text(json.dumps(record))
    (tmp_path / "bench_stats.json").write_text(json.dumps({"ieat": {"ratio": 12.3456789, "p": [0.5, 1]}}))
    text = render_benchmarks.render(tmp_path)
    assert "## T\n" in text and "Measured with `make t` on commit `abc1234`, 2 cores" in text
    assert "| a | 1 s |" in text
    assert (
        "## `benchmarks/bench_stats.py`" in text and "| ieat.ratio | 12.35 |" in text and "| ieat.p | 0.5, 1 |" in text
    )
    assert text.index("## T") < text.index("bench_stats")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "not a readable JSON result file"),
        ("[1]", "a result file holds a JSON object"),
        (
            json.dumps({"title": "T", "command": "c", "commit": "x", "machine": "m", "figures": [["only what"]]}),
            "figures must be",
        ),
    ],
)
def test_a_bad_result_file_is_named(tmp_path, content, message):
    (tmp_path / "bad.json").write_text(content)
    with pytest.raises(ValueError, match=rf"bad\.json: {message}"):
        render_benchmarks.render(tmp_path)
