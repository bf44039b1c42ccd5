"""One config checker (biastransfer.workflow.config_check.validate_config): what the workflow refuses before any job,
``python -m biastransfer.workflow.config FILE...`` refuses with the same lines; every shipped config passes both."""

import os
import re
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT, run_snakemake
from fake_datasets import export_own_images

from biastransfer.workflow import config as cfg
from biastransfer.workflow.config_check import main, validate_config, validation_problems

DEMO = ROOT / "config" / "config.yaml"

# The configs that the command line passed and the workflow refused (issue 41), as overlays on the demo,
# with the line each is refused with.
REFUSED = {
    "bootstrap_1": (
        {"analysis": {"ieat": {"bootstrap": 1}}},
        "analysis.ieat.bootstrap: 1 replicate(s) cannot give a 0.95 interval; use 0 (no intervals) or at least 40",
    ),
    "unknown_layer": (
        {"models": {"democnn": {"layers": ["layer2", "layer9"]}}},
        "models.democnn.layers: model 'democnn': unknown layer(s) 'layer9' of ResNet",
    ),
    "float_for_int": ({"finetune": {"defaults": {"epochs": 2.0}}}, "finetune.defaults.epochs: 2.0 is not an integer"),
    "x_is_a": (
        {
            "analysis_sets": {
                "synthetic": {"ieat": [{"name": "same", "X": "person_a", "Y": "person_b", "A": "person_a", "B": "car"}]}
            }
        },
        "analysis_sets.synthetic.ieat.same: X and A are both 'person_a' (a class takes one role)",
    ),
}

# Every shipped config, as it is run: alone, or an overlay after the config it overlays (config/*.yaml say which).
SHIPPED = [
    ["config/config.yaml"],
    ["config/config.yaml", "config/controls.yaml"],
    ["config/config.yaml", "config/mitigation.yaml"],
    ["config/paper.yaml"],
    ["config/paper.yaml", "config/zoo.yaml"],
    ["config/paper.yaml", "config/claims.yaml"],
    ["config/examples/intervention_planted.yaml"],
    ["config/examples/own_images.yaml"],
    ["tests/configs/tiny.yaml"],
]


@pytest.fixture(autouse=True, scope="module")
def own_check_cache(tmp_path_factory):
    """A cache of passed checks of this module's own (biastransfer.check_cache): each check passes here
    before it is remembered."""
    before = os.environ.get("BIASTRANSFER_CACHE_DIR")
    os.environ["BIASTRANSFER_CACHE_DIR"] = str(tmp_path_factory.mktemp("check-cache"))
    yield
    if before is None:
        del os.environ["BIASTRANSFER_CACHE_DIR"]
    else:
        os.environ["BIASTRANSFER_CACHE_DIR"] = before


def overlay(tmp_path, name, content):
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(content))
    return path


def check_files(*paths, cwd):
    """``python -m biastransfer.workflow.config PATH...`` run in ``cwd``."""
    return subprocess.run(
        [sys.executable, "-m", "biastransfer.workflow.config", *map(str, paths)],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=os.environ,
        timeout=300,
    )


def check_here(*paths, capsys, monkeypatch, cwd):
    """``check_files`` in this process (``biastransfer.workflow.config_check.main``, what the command runs), so that
    torch and the model libraries are imported once, not by each check: (exit status, stdout, stderr)."""
    monkeypatch.chdir(cwd)
    capsys.readouterr()
    status = main([str(p) for p in paths])
    out, err = capsys.readouterr()
    return status, out, err


def problem_lines(text):
    """The problem lines of a ConfigError's message found in ``text`` (a command's output)."""
    lines = text.splitlines()
    start = lines.index(next(line for line in lines if line.endswith("invalid configuration:"))) + 1
    return [line.strip() for line in lines[start:] if line.startswith("  ") and not line.startswith("  File ")]


@pytest.mark.parametrize("case", REFUSED)
def test_what_the_workflow_refuses_the_checker_refuses_naming_key_and_value(tmp_path, case, capsys, monkeypatch):
    edit, message = REFUSED[case]
    extra = overlay(tmp_path, case, edit)
    with pytest.raises(cfg.ConfigError) as err:
        validate_config(cfg.merge_configs([DEMO, extra]))
    assert [p for p in err.value.problems if p.startswith(message)], err.value.problems
    status, out, err_text = check_here(DEMO, extra, capsys=capsys, monkeypatch=monkeypatch, cwd=tmp_path)
    assert status == 2 and out == ""
    assert problem_lines(err_text) == err.value.problems


def test_every_problem_after_the_schema_is_named_at_once(tmp_path, capsys, monkeypatch):
    """A bootstrap, a layer and an iEAT problem in one config: three lines from three checks, one run."""
    merged = {}
    for case in ("bootstrap_1", "unknown_layer", "x_is_a"):
        merged = {**merged, **REFUSED[case][0]}
    status, _, err = check_here(
        DEMO, overlay(tmp_path, "all", merged), capsys=capsys, monkeypatch=monkeypatch, cwd=tmp_path
    )
    lines = problem_lines(err)
    assert status == 2 and len(lines) == 3
    for case in ("bootstrap_1", "unknown_layer", "x_is_a"):
        assert [line for line in lines if line.startswith(REFUSED[case][1])], case


def test_every_schema_problem_is_named_and_nothing_is_filled_after_one(tmp_path):
    """Snakemake's own check stops at the first; the later checks need a config the schema accepts."""
    bad = {
        "finetune": {"defaults": {"epochs": 2.0}},
        "analysis": {"ieat": {"permutation": 10, "bootstrap": 1}},
        "models": {"democnn": None},
    }
    config = cfg.merge_configs([DEMO, overlay(tmp_path, "bad", bad)])
    assert validation_problems(config) == [
        "analysis.ieat: Additional properties are not allowed ('permutation' was unexpected)",
        "finetune.defaults.epochs: 2.0 is not an integer (write 2)",
        "models: {} should be non-empty",
    ]
    assert "democnn" not in config["models"] and "weights" not in config and "claims" not in config


def test_the_files_merge_in_order_and_a_good_config_gets_one_ok_line(tmp_path):
    later = overlay(tmp_path, "later", {"analysis": {"ieat": {"bootstrap": 0}}})
    earlier = overlay(tmp_path, "earlier", REFUSED["bootstrap_1"][0])
    done = check_files(DEMO, earlier, later, cwd=tmp_path)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.splitlines() == [
        f"OK: {DEMO} + {earlier} + {later}: 1 model(s), 1 analysis set(s), 1 finetuning dataset(s)"
    ]
    assert check_files(DEMO, later, earlier, cwd=tmp_path).returncode == 2


def test_a_missing_file_or_none_is_refused_without_a_traceback(tmp_path):
    done = check_files(DEMO, tmp_path / "missing.yaml", cwd=tmp_path)
    assert done.returncode == 2 and "missing.yaml" in done.stderr and "Traceback" not in done.stderr
    done = check_files(cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith("usage: python -m biastransfer.workflow.config FILE...")


@pytest.mark.parametrize("files", SHIPPED, ids=lambda files: "+".join(f.split("/")[-1] for f in files))
def test_every_shipped_config_passes_every_check(tmp_path, monkeypatch, files):
    if "config/examples/own_images.yaml" in files:  # its images: written as its header says, at toy size
        export_own_images(tmp_path, n_per_class=2, size=16)
    monkeypatch.chdir(tmp_path)
    assert validation_problems(cfg.merge_configs([ROOT / f for f in files])) == []


def test_every_shipped_config_file_is_checked():
    shipped = {p.relative_to(ROOT).as_posix() for p in (ROOT / "config").rglob("*.yaml")}
    assert shipped <= {f for files in SHIPPED for f in files}


def test_the_workflow_checks_its_config_with_the_checker_alone():
    """rules/common.smk calls validate_config before anything reads the config, and no rule file or the
    Snakefile calls another check, so the workflow and the command line refuse the same configs."""
    code = [
        line
        for line in (ROOT / "rules" / "common.smk").read_text().splitlines()
        if line.strip() and not line.startswith(("#", "import ", "from "))
    ]
    assert next(line for line in code if re.search(r"\bconfig\b", line)) == "validate_config(config)"
    others = (
        "check_config",
        "fill_defaults",
        "section_problems",
        "schema_problems",
        "layer_problems",
        "passed_check",
        "validation_problems",
        "drop_removed",
    )
    for path in [ROOT / "Snakefile", *sorted((ROOT / "rules").glob("*.smk"))]:
        text = path.read_text()
        assert not [name for name in others if name in text], path


def test_the_workflow_prints_the_checkers_lines(tmp_path):
    """The four configs refused by a dry run of the workflow, with the command line's lines."""
    for case, (edit, _) in REFUSED.items():
        extra = overlay(tmp_path, case, edit)
        expected = problem_lines(check_files(DEMO, extra, cwd=tmp_path).stderr)
        done = run_snakemake("-n", "--configfile", DEMO, extra, cwd=tmp_path, check=False)
        assert done.returncode != 0 and "Job stats" not in done.stdout, case
        assert problem_lines(done.stdout + done.stderr) == expected, case
    assert not (tmp_path / "results").exists()
