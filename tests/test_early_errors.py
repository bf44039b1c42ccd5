"""Errors that used to come late, inside a job, or unnamed: each is now named, before any job runs."""

import copy

import pytest
import yaml
from conftest import ROOT
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from biastransfer.data.download import Download, fetch_many
from biastransfer.schema_types import non_integer_problems

SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
TINY = yaml.safe_load((ROOT / "tests" / "configs" / "tiny.yaml").read_text())
PAPER = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())


@pytest.mark.parametrize("name", ["config/config.yaml", "config/paper.yaml", "config/zoo.yaml", "tests/configs/tiny.yaml"])
def test_the_shipped_configs_have_integers_where_integers_are_due(name):
    assert non_integer_problems(yaml.safe_load((ROOT / name).read_text()), SCHEMA) == []


def test_a_float_where_an_integer_is_due_is_named_by_its_key():
    conf = copy.deepcopy(TINY)
    conf["finetune"]["defaults"]["epochs"] = 2.0
    conf["analysis"]["ieat"]["permutations"] = 2000.0
    conf["analysis_sets"]["synthetic"]["n_per_class"] = 6.0
    conf["models"]["tinycnn"]["pretrain"]["batch_size"] = 32.0
    validate(copy.deepcopy(conf), str(SCHEMA))  # JSON Schema counts 2.0 as an integer
    assert non_integer_problems(conf, SCHEMA) == [
        "analysis.ieat.permutations: 2000.0 is not an integer (write 2000)",
        "analysis_sets.synthetic.n_per_class: 6.0 is not an integer (write 6)",
        "finetune.defaults.epochs: 2.0 is not an integer (write 2)",
        "models.tinycnn.pretrain.batch_size: 32.0 is not an integer (write 32)",
    ]


@pytest.mark.parametrize("name", ["../escaped", "a/b", "..", "a\\b"])
def test_a_paper_list_class_that_is_not_a_file_name_is_refused(name):
    conf = copy.deepcopy(PAPER)
    conf["analysis_sets"]["coco"]["paper"]["files"][name] = "0" * 64
    with pytest.raises(WorkflowError, match="files"):
        validate(conf, str(SCHEMA))


@pytest.mark.parametrize("dest", ["../escaped.txt", "/tmp/abs.txt", "a/../../b.txt", ""])
def test_a_download_is_never_written_outside_its_folder(tmp_path, dest):
    source = tmp_path / "src.txt"
    source.write_text("x")
    with pytest.raises(ValueError, match="is not a path inside"):
        fetch_many([Download(str(source), dest)], tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src.txt"]
