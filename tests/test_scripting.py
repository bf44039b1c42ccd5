"""Workflow scripts run from Snakemake's object or, for a reviewer, from the command line."""

import ast
import logging
import re
import runpy
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import planned_dag

from biastransfer.scripting import SECTIONS, dataset_files, handoff_problems, run

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
        input=Named(values=["a", "b"]),
        output=Named(table="t.csv"),
        params=Named(options={"k": 1}),
        threads=3,
        wildcards=Named(),
        log=[str(tmp_path / "job.log")],
    )
    assert run(demo_main, smk) == ("t.csv", ["a", "b"], {"k": 1}, 1, 3)
    assert "running" in (tmp_path / "job.log").read_text()


def test_arguments_come_from_the_command_line():
    out = run(demo_main, None, ["--table", "t.csv", "--values", "a", "b", "--options", '{"k": 2}', "--count", "4"])
    assert out == ("t.csv", ["a", "b"], {"k": 2}, 4, 1)


def test_a_list_given_as_one_json_array_is_that_list():
    tests = '[{"name": "t", "X": "man", "Y": "woman"}, {"name": "u", "X": "car"}]'
    out = run(demo_main, None, ["--table", "t.csv", "--values", tests, "--options", "{}", "--count", "1"])
    assert out[1] == [{"name": "t", "X": "man", "Y": "woman"}, {"name": "u", "X": "car"}]
    out = run(
        demo_main, None, ["--table", "t.csv", "--values", '{"a": 1}', '{"b": 2}', "--options", "{}", "--count", "1"]
    )
    assert out[1] == [{"a": 1}, {"b": 2}]
    with pytest.raises(SystemExit):
        run(demo_main, None, ["--table", "t.csv", "--values", "[1, 2", "--options", "{}", "--count", "1"])


def failing_main(table: str, error: str):
    raise {"ValueError": ValueError, "OSError": OSError, "KeyError": KeyError}[error](
        f"{table}: line 3: class 'x' is not in the class list"
    )


def job(tmp_path, error):
    log = tmp_path / "job.log"
    smk = SimpleNamespace(
        input=Named(table="t.csv"),
        output=Named(),
        params=Named(error=error),
        threads=1,
        wildcards=Named(),
        log=[str(log)],
    )
    return smk, log


@pytest.mark.parametrize("error", ["ValueError", "OSError"])
def test_a_named_error_ends_the_job_with_its_one_line_message(tmp_path, capsys, error):
    smk, log = job(tmp_path, error)
    with pytest.raises(SystemExit) as stop:
        run(failing_main, smk)
    assert stop.value.code == 1
    message = f"{error}: t.csv: line 3: class 'x' is not in the class list"
    assert log.read_text().rstrip().splitlines()[-1].endswith(f"ERROR {message}")
    assert "Traceback" in log.read_text()  # kept above it, for a developer
    err = capsys.readouterr().err
    assert err == f"test_scripting.py: {message}\n"


def test_any_other_error_keeps_its_traceback(tmp_path):
    smk, log = job(tmp_path, "KeyError")
    with pytest.raises(KeyError):
        run(failing_main, smk)
    assert log.read_text().rstrip().splitlines()[-1].startswith("KeyError")


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
        [
            sys.executable,
            str(ROOT / "workflow" / "scripts" / "synthetic_analysis_set.py"),
            "--classes",
            "car",
            "person_a",
            "--n_per_class",
            "2",
            "--size",
            "32",
            "--seed",
            "0",
            "--manifest",
            str(tmp_path / "m.parquet"),
            "--images",
            str(tmp_path / "img"),
            "--log",
            str(tmp_path / "x.log"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "m.parquet").is_file() and "2 images" in (tmp_path / "x.log").read_text()


def _demo_job(**parts) -> SimpleNamespace:
    """The ``snakemake`` object of a demo_rule job (input ``values``, output ``table``, one thread, no params,
    wildcards or log); ``parts`` replace any of them."""
    job = dict(
        rule="demo_rule",
        input=Named(values=["a"]),
        output=Named(table="t.csv"),
        params=Named(),
        threads=1,
        wildcards=Named(),
        log=[],
    )
    return SimpleNamespace(**{**job, **parts})


def test_a_name_given_twice_is_an_error_naming_rule_name_and_script():
    smk = _demo_job(params=Named(table="x"))
    with pytest.raises(
        TypeError, match=r"rule demo_rule: 'table' is named in both output and params \(test_scripting.py\)"
    ):
        run(demo_main, smk)


def test_a_name_main_does_not_take_is_an_error():
    smk = _demo_job(input=Named(values=["a"], extra="e"))
    with pytest.raises(TypeError, match=r"rule demo_rule: input 'extra' is not a parameter of main"):
        run(demo_main, smk)


def test_a_wildcard_that_shadows_a_named_file_is_an_error():
    smk = _demo_job(wildcards=Named(table="x"))
    with pytest.raises(TypeError, match=r"'table' is named in both output and wildcards"):
        run(demo_main, smk)


def test_wildcards_arrive_as_named_parameters_of_the_declared_type():
    smk = _demo_job(wildcards=Named(count="7", model="m"))  # model: a wildcard main does not take
    assert run(demo_main, smk) == ("t.csv", ["a"], None, 7, 1)


def _main_parameters(script: Path) -> dict[str, bool]:
    """``{name: required}`` of a script's ``main``, read without importing it (scripts import torch)."""
    tree = ast.parse(script.read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main")
    required = len(fn.args.args) - len(fn.args.defaults)
    return {a.arg: i < required for i, a in enumerate(fn.args.args)}


def _problems(item, wildcards) -> list[str]:
    """Handoff problems of a job (names after input functions ran) or of a rule (names as declared)."""
    rule = getattr(item, "rule", item)
    script = (ROOT / "rules" / rule.script).resolve()
    named = {s: list(getattr(item, s)._names) for s in SECTIONS}
    return handoff_problems(rule.name, script.name, _main_parameters(script), named, list(wildcards))


def test_every_rule_hands_its_script_exactly_what_main_takes(tmp_path):
    """The demo's and the paper's jobs, with their input functions evaluated; then every other rule
    (optional features neither config turns on) as declared."""
    problems, planned, rules = [], set(), {}
    for name in ("config.yaml", "paper.yaml"):
        jobs, all_rules = planned_dag([ROOT / "config" / name], tmp_path / name)
        rules.update({r.name: r for r in all_rules if r.script})
        for job in jobs:
            if job.rule.script:
                problems += _problems(job, job.wildcards_dict)
                planned.add(job.rule.name)
    for name, rule in rules.items():
        if name not in planned:
            problems += _problems(rule, rule.wildcard_names)
    assert not sorted(set(problems))
    assert {"finetune", "embed", "bts", "curate_analysis_set", "synthetic_analysis_set"} <= planned


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_the_standalone_example_uses_only_arguments_main_takes(script):
    """A docstring must not advertise an option the script does not accept (``--log``/``--help`` aside)."""
    doc = ast.get_docstring(ast.parse(script.read_text())) or ""
    example = doc[doc.find("Standalone") :] if "Standalone" in doc else ""
    advertised = set(re.findall(r"(?<![\w-])--([A-Za-z]\w*)", example))
    unknown = advertised - set(_main_parameters(script)) - {"log", "help"}
    assert not unknown, f"{script.name}: the docstring's example passes {sorted(unknown)}, which main does not take"


def test_each_file_goes_to_the_dataset_its_stage_names_in_order():
    files = ["e/ft-b-seed0.csv", "e/ft-a-seed1.parquet", "e/scratch-a-seed0.csv", "e/ft-a-seed0.csv"]
    assert dataset_files(["a", "b", "c"], files) == {
        "a": ["e/ft-a-seed1.parquet", "e/scratch-a-seed0.csv", "e/ft-a-seed0.csv"],
        "b": ["e/ft-b-seed0.csv"],
        "c": [],
    }


@pytest.mark.parametrize(
    "name, message",
    [
        ("e/ft-other-seed0.csv", r"e/ft-other-seed0.csv: a network of dataset 'other', not one of the datasets"),
        ("e/pretrained.csv", r"e/pretrained.csv: the pretrained network"),
        ("e/B.csv", r"e/B.csv: the file is not named by its stage"),
    ],
)
def test_a_file_of_no_listed_dataset_is_named(name, message):
    with pytest.raises(ValueError, match=message):
        dataset_files(["a"], ["e/ft-a-seed0.csv", name])
