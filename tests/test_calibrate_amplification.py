"""benchmarks/calibrate_amplification.py at a toy size: the record it writes and renders."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_toy_calibration_writes_a_complete_record_that_renders(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # as when run as a script: render_benchmarks beside it
    calibrate = _module("calibrate_amplification")
    out = tmp_path / "amplification_calibration.json"
    toy = [
        "--seeds",
        "1",
        "--epochs",
        "1",
        "--n-train",
        "40",
        "--n-val",
        "16",
        "--n-test",
        "60",
        "--replicates",
        "100",
        "--planted",
        "0.8",
        "--json",
        str(out),
    ]
    assert calibrate.main([*toy, "--datasets", "0"]) == 0
    alone = json.loads(out.read_text())  # the planted arm alone, at another co-occurrence
    assert alone["unbiased"] == [] and alone["verdicts"]["answer_2"] == "not measured in this run (--datasets 0)"
    assert alone["settings"]["planted_cooccurrence"] == {"surfboard": 0.8} and "planted at 80%" in alone["title"]
    assert alone["verdicts"]["coverage"] == "not measured in this run (--coverage 0)"
    toy += ["--datasets", "2", "--coverage", "2"]
    assert calibrate.main(toy) == 0
    record = json.loads(out.read_text())
    for r in record["planted"] + record["unbiased"]:  # two test splits of 60 images each, each checked
        assert len(r["coverage"]) == 2
        for c in r["coverage"]:
            assert set(c) == {"y_at", "reference_y_at", "term", "shift"}
            assert {"estimate", "ci_low", "ci_high", "reference", "covers"} <= set(c["term"]) == set(c["shift"])
        assert sum(r["images_per_attribute"].values()) <= 60  # the answers: on the first split alone
    assert record["verdicts"]["coverage"].startswith("term: ")
    assert "a calibrated 95% interval would in about 83%" in record["verdicts"]["coverage"]
    assert abs(calibrate.expected_coverage(5) - 0.92) < 0.005 and abs(calibrate.expected_coverage(1e9) - 0.95) < 1e-3
    assert record["settings"]["datasets"] == 2 and record["settings"]["pair"] == ["person_a", "surfboard"]
    assert [r["data_seed"] for r in record["planted"]] == [1000]
    assert [r["data_seed"] for r in record["unbiased"]] == [2000, 2001]
    for r in record["planted"] + record["unbiased"]:
        assert set(r["images_per_attribute"]) == {"person_a", "person_b"}
        for threshold in ("base_rate", "0.5"):
            for what in ("term", "shift", "biasamp"):
                got = r[threshold][what]
                assert set(got) == {"estimate", "ci_low", "ci_high", "holds_0", "excludes_0_above"}
                if got["ci_low"] is not None:
                    assert got["holds_0"] == (got["ci_low"] <= 0 <= got["ci_high"])
    planted_skew = record["planted"][0]["truth_rate"]
    assert planted_skew["person_a"] > planted_skew["person_b"]  # the planted skew reached the test split
    assert record["verdicts"]["answer_1"].startswith(("holds: ", "fails: "))
    assert record["verdicts"]["answer_2"].endswith("(2 needed)")
    assert record["cpu_seconds"] > 0 and record["wall_seconds"] > 0
    assert all(len(f) == 2 for f in record["figures"]) and len(record["figures"]) == 3 + 4 + 3 + 2
    section = _module("render_benchmarks").section(out)
    assert section.startswith("## Bias amplification on trained networks: issue 27") and "| known answer 2" in section
