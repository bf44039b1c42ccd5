"""Workflow scripts run from Snakemake's object or, for a reviewer, from the command line."""

import logging
import runpy
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from biastransfer.scripting import run

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for p in (ROOT / "workflow" / "scripts").glob("*.py"))


class Named(list):
    """A stand-in for Snakemake's named lists."""

    def __init__(self, **named):
        super().__init__(named.values())
        self._named = named

    def items(self):
        return self._named.items()


def demo_main(table: str, values: list, options: dict | None = None, count: int = 1, threads: int = 1):
    logging.getLogger("demo").info("running")
    return table, values, options, count, threads


def test_arguments_come_from_the_snakemake_object(tmp_path):
    smk = SimpleNamespace(
        input=Named(values=["a", "b"]), output=Named(table="t.csv"), params=Named(options={"k": 1}),
        threads=3, wildcards=Named(), log=[str(tmp_path / "job.log")],
    )
    assert run(demo_main, smk) == ("t.csv", ["a", "b"], {"k": 1}, 1, 3)
    assert "running" in (tmp_path / "job.log").read_text()


def test_arguments_come_from_the_command_line():
    out = run(demo_main, None, ["--table", "t.csv", "--values", "a", "b", "--options", '{"k": 2}', "--count", "4"])
    assert out == ("t.csv", ["a", "b"], {"k": 2}, 4, 1)


def test_a_rule_missing_an_argument_is_named():
    smk = SimpleNamespace(input=Named(), output=Named(), params=Named(), threads=1, wildcards=Named(), log=[])
    with pytest.raises(TypeError, match=r"needs \['table', 'values'\]"):
        run(demo_main, smk)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_every_script_explains_itself_standalone(script, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [str(script), "--help"])
    with pytest.raises(SystemExit) as stop:
        runpy.run_path(str(script), run_name="__main__")
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert "Standalone" in out and "--log" in out


def test_a_script_runs_standalone_on_real_files(tmp_path):
    done = subprocess.run(
        [sys.executable, str(ROOT / "workflow" / "scripts" / "synthetic_analysis_set.py"),
         "--spec", '{"dataset": "d", "source": "synthetic", "classes": ["car", "person_a"], "n_per_class": 2, "size": 32}',
         "--manifest", str(tmp_path / "m.parquet"), "--images", str(tmp_path / "img"), "--log", str(tmp_path / "x.log")],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "m.parquet").is_file() and "2 images" in (tmp_path / "x.log").read_text()
