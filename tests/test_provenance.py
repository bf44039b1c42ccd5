"""The workflow version and git commit in every provenance record, read at run time (biastransfer.provenance)."""

import dataclasses
import json
import shutil
import subprocess
import sys
from datetime import UTC
from pathlib import Path

import pytest

from biastransfer import __version__
from biastransfer.models.features import embedding_provenance
from biastransfer.models.spec import ModelSpec
from biastransfer.models.weights import write_weights_record
from biastransfer.provenance import CHECKOUT, RUN_DEPENDENT_FIELDS, UNKNOWN, workflow_provenance
from biastransfer.train.config import EpochRecord
from biastransfer.zoo import write_failure

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "src" / "biastransfer"
PRINT = "import json; from biastransfer.provenance import workflow_provenance as w; print(json.dumps(w()))"
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]


def _provenance_of(checkout: Path) -> dict:
    """workflow_provenance() of a copy of the library under ``checkout``, in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", PRINT],
        env={"PYTHONPATH": str(checkout / "src"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


@pytest.fixture
def checkout(tmp_path):
    """A copy of the workflow's library and Snakefile, not (yet) a git checkout."""
    shutil.copytree(LIBRARY, tmp_path / "src" / "biastransfer", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "Snakefile", tmp_path / "Snakefile")
    return tmp_path


def test_a_copy_that_is_not_a_git_checkout_says_unknown(checkout):
    assert _provenance_of(checkout) == {"workflow_version": __version__, "git_commit": UNKNOWN, "git_dirty": UNKNOWN}


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_git_checkout_gives_its_commit_and_whether_tracked_files_changed(checkout):
    subprocess.run([*GIT, "init", "-q", str(checkout)], check=True)
    (checkout / ".gitignore").write_text("__pycache__/\nresults/\n")
    subprocess.run([*GIT, "-C", str(checkout), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(checkout), "commit", "-q", "-m", "c"], check=True)
    head = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    clean = {"workflow_version": __version__, "git_commit": head, "git_dirty": "false"}
    assert _provenance_of(checkout) == clean
    (checkout / "results").mkdir()
    (checkout / "results" / "out.csv").write_text("a\n")  # a run's outputs
    (checkout / "notes.txt").write_text("untracked\n")
    assert _provenance_of(checkout) == clean
    with open(checkout / "Snakefile", "a") as fh:
        fh.write("# edited\n")
    assert _provenance_of(checkout) == {**clean, "git_dirty": "true"}


def test_this_library_reports_its_own_checkout():
    record = workflow_provenance()
    assert CHECKOUT == ROOT and record["workflow_version"] == __version__
    assert record["git_commit"] == UNKNOWN or len(record["git_commit"]) == 40


def test_the_run_dependent_fields_are_the_timings_and_the_workflow_provenance():
    timings = {f.name for f in dataclasses.fields(EpochRecord)} & RUN_DEPENDENT_FIELDS
    assert timings == {"seconds", "images_per_s", "data_seconds"}
    assert RUN_DEPENDENT_FIELDS == timings | set(workflow_provenance())


def test_embeddings_weights_and_zoo_status_records_carry_it(tmp_path):
    spec = ModelSpec(name="m", source="timm", arch="resnet18")
    expected = workflow_provenance()
    assert expected.items() <= embedding_provenance(spec, None, stage="pretrained").items()
    weights = tmp_path / "w.pth"
    weights.write_bytes(b"weights")
    write_weights_record(tmp_path / "w.json", spec, weights)
    write_failure(tmp_path / "f.json", model="m", error="ValueError: bad")
    for name in ("w.json", "f.json"):
        assert expected.items() <= json.loads((tmp_path / name).read_text()).items()


def test_the_run_record_names_the_settings_seeds_versions_and_time(tmp_path):
    from datetime import datetime
    from importlib.metadata import version

    from biastransfer.provenance import run_record
    from biastransfer.workflow import config as cfg

    conf = cfg.fill_defaults(cfg.read_configs([ROOT / "config" / "config.yaml"]))
    record = run_record(conf, now=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    assert record["report built (UTC)"] == "2026-01-02 03:04:05"
    assert record["workflow"].startswith(f"biastransfer {__version__}, git commit ")
    assert f"snakemake {version('snakemake')}" in record["libraries"]
    assert record["finetuning"] == (
        f"on {', '.join(conf['finetune']['datasets'])}, seeds {', '.join(map(str, conf['finetune']['seeds']))}"
    )
    ieat = conf["analysis"]["ieat"]
    assert f"seed {ieat['seed']}" in record["statistics: ieat"] and f"alpha {ieat['alpha']}" in record["significance"]
    no_finetuning = {**conf, "finetune": {**conf["finetune"], "datasets": []}}
    assert run_record(no_finetuning)["finetuning"] == "none (pretrained networks only)"


def test_the_provenance_table_says_where_the_weights_came_from(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("provenance_script", ROOT / "workflow" / "scripts" / "provenance.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    weights = tmp_path / "w.pth"
    weights.write_bytes(b"weights")
    record = tmp_path / "weights.done"
    write_weights_record(
        record, ModelSpec(name="m", source="timm", arch="resnet18", weights="https://x/w.pth"), weights
    )
    digest = json.loads(record.read_text())["sha256"]
    assert script.weights_source(str(record)) == f"https://x/w.pth (sha256 {digest})"
    metrics = tmp_path / "metrics.json"
    metrics.write_text(json.dumps({"dataset": "synthetic_biased", "train_sha256": "ab" * 32, "seed": 0}))
    assert script.weights_source(str(metrics)) == (
        f"pretrained by this workflow on synthetic_biased (training split sha256 {'ab' * 32}, seed 0)"
    )
    (tmp_path / "other.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="other.json: neither a weights record nor a pretraining metrics.json"):
        script.weights_source(str(tmp_path / "other.json"))
