"""Config validation: the JSON schema names the bad key; check_config names the undefined reference."""

import copy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import snakemake_command
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from biastransfer.workflow import config as cfg

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = str(ROOT / "workflow" / "schemas" / "config.schema.yaml")


def load(name):
    return yaml.safe_load((ROOT / name).read_text())


@pytest.fixture
def demo():
    return load("config/config.yaml")


@pytest.mark.parametrize("name", ["config/config.yaml", "config/paper.yaml", "tests/configs/tiny.yaml"])
def test_shipped_configs_are_valid(name):
    cfg.check_config(cfg.fill_defaults(load(name)))


def test_unknown_key_is_named(demo):
    demo["analysis"]["ieat"]["permutation"] = 10
    with pytest.raises(WorkflowError, match="'permutation' was unexpected"):
        validate(demo, SCHEMA)


def test_wrong_type_is_named(demo):
    demo["datasets"]["synthetic_target"]["n_train"] = "many"
    with pytest.raises(WorkflowError, match="'many' is not of type 'integer'"):
        validate(demo, SCHEMA)


def test_too_few_images_per_class_is_refused(demo):
    demo["analysis_sets"]["synthetic"]["n_per_class"] = 1
    with pytest.raises(WorkflowError, match="1 is less than the minimum of 2"):
        validate(demo, SCHEMA)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda c: c["finetune"]["datasets"].append("nope"), "finetune.datasets: unknown dataset 'nope'"),
        (
            lambda c: c["analysis_sets"]["synthetic"]["ieat"][0].update(A="boat"),
            "analysis_sets.synthetic.ieat.surfboard_vs_car.A: class 'boat'",
        ),
        (lambda c: c["analysis_sets"]["synthetic"]["bts"]["intra"].append("boat"), "bts.intra: class 'boat'"),
        (lambda c: c["models"]["democnn"]["pretrain"].update(dataset="nope"), "models.democnn.pretrain.dataset"),
        (lambda c: c["finetune"]["overrides"].update(nope={}), "finetune.overrides: unknown model 'nope'"),
        (lambda c: c["finetune"].update(seeds={"nope": [0]}), "no seeds for finetune dataset 'synthetic_target'"),
        (
            lambda c: c["finetune"].update(seeds={"synthetic_target": [0], "nope": [1]}),
            "finetune.seeds: 'nope' is not in finetune.datasets",
        ),
    ],
)
def test_undefined_references_are_named(demo, edit, message):
    conf = copy.deepcopy(demo)
    edit(conf)
    with pytest.raises(ValueError, match=message):
        cfg.check_config(cfg.fill_defaults(conf))


def test_stages_and_parameters(demo):
    assert cfg.stages(demo) == ["pretrained", *(f"ft-synthetic_target-seed{s}" for s in (0, 1, 2))]
    assert cfg.parse_stage("ft-synthetic_target-seed2") == ("synthetic_target", 2)
    assert cfg.parse_stage("pretrained") == (None, None)
    with pytest.raises(ValueError, match="'finetuned'"):
        cfg.parse_stage("finetuned")
    demo["finetune"]["overrides"] = {"democnn": {"synthetic_target": {"lr": 0.5}}}
    assert cfg.finetune_params(demo, "democnn", "synthetic_target")["lr"] == 0.5
    demo["models"]["other"] = {"source": "timm", "arch": "resnet18"}
    assert cfg.finetune_params(demo, "other", "synthetic_target")["lr"] == demo["finetune"]["defaults"]["lr"]
    assert cfg.pretrain_params(demo, "democnn")["epochs"] == 4
    assert cfg.training_datasets(demo) == ["synthetic_biased", "synthetic_target"]


def test_seeds_per_dataset(demo):
    demo["datasets"]["other"] = dict(demo["datasets"]["synthetic_target"])
    demo["finetune"].update(datasets=["synthetic_target", "other"], seeds={"synthetic_target": [0, 2], "other": [5]})
    cfg.check_config(cfg.fill_defaults(demo))
    assert cfg.finetune_seeds(demo, "synthetic_target") == [0, 2] and cfg.finetune_seeds(demo, "other") == [5]
    assert cfg.finetuned_stages(demo) == ["ft-synthetic_target-seed0", "ft-synthetic_target-seed2", "ft-other-seed5"]
    demo["finetune"]["seeds"] = {"synthetic_target": [0, 0], "other": [5]}
    with pytest.raises(WorkflowError, match="finetune"):
        validate(demo, SCHEMA)


def test_workflow_model_spec_never_downloads(demo):
    from biastransfer.models.resolve import model_spec

    spec = model_spec("democnn", demo["models"]["democnn"])
    assert spec.source == "timm" and spec.arch == "resnet18" and spec.weights is None
    assert spec.preprocess.crop == 64


def test_the_download_job_sees_no_split_only_key():
    paper = load("config/paper.yaml")
    validate(paper, SCHEMA, set_default=True)
    spec = cfg.download_spec(paper["datasets"]["openimages"])
    assert {"kind", "root", "images", "mirror"} <= set(spec)
    assert not {"seed", "train_subset", "val_subset", "verified_only", "workers"} & set(spec)
    table = {"kind": "table", "table": "t.csv", "seed": 3}
    assert cfg.download_spec(table) == table
    declared = {**table, "attributes": ["man", "woman"]}  # only the attribute files read them
    assert cfg.download_spec(declared) == table and cfg.split_spec(declared) == table


def test_canonical_sorts_mappings_and_keeps_lists():
    value = {"b": [{"y": 1, "x": 2}, 3], "a": {"d": 0, "c": 1}}
    out = cfg.canonical(value)
    assert list(out) == ["a", "b"] and list(out["a"]) == ["c", "d"] and list(out["b"][0]) == ["x", "y"]
    assert out == value


def schema_defs():
    return yaml.safe_load(Path(SCHEMA).read_text())["$defs"]


def test_the_schema_fills_every_section_and_default():
    """The toy config names no report, weights, similarity or overrides: all exist after validation."""
    conf = load("tests/configs/tiny.yaml")
    validate(conf, SCHEMA, set_default=True)
    assert conf["report"] == {
        "control_class": None,
        "p_adjust": "holm",
        "alpha": 0.05,
        "tolerances": {},
        "ieat_targets": None,
    }
    assert conf["weights"] == {"cache_dir": "resources/weights", "mirror": None}
    assert conf["analysis"]["similarity"] == {"method": "exact", "iterations": 50, "seed": 0}
    assert conf["analysis"]["embed"]["device"] == "auto" and conf["analysis"]["ieat"]["alpha"] == 0.05
    assert conf["finetune"]["overrides"] == {} and conf["finetune"]["device"] == "auto"
    aset = conf["analysis_sets"]["synthetic"]
    assert aset["n_per_class"] == 6 and aset["seed"] == 14  # given values stay
    train_keys = set(schema_defs()["train_defaults"]["properties"])
    assert set(conf["finetune"]["defaults"]) == train_keys
    assert conf["finetune"]["defaults"]["epochs"] == 1 and conf["finetune"]["defaults"]["momentum"] == 0.9
    assert set(conf["models"]["tinycnn"]["pretrain"]) == train_keys | {"dataset", "seed"}


def test_a_synthetic_analysis_set_gets_its_drawing_defaults_and_a_real_one_does_not(demo):
    for key in ("n_per_class", "size"):
        del demo["analysis_sets"]["synthetic"][key]
    validate(demo, SCHEMA, set_default=True)
    assert (demo["analysis_sets"]["synthetic"]["n_per_class"], demo["analysis_sets"]["synthetic"]["size"]) == (40, 64)
    paper = load("config/paper.yaml")
    validate(paper, SCHEMA, set_default=True)
    assert all("n_per_class" not in s for s in paper["analysis_sets"].values())


def test_training_defaults_are_written_once_and_agree_with_trainconfig():
    import dataclasses

    from biastransfer.train.config import TrainConfig

    schema = {k: v["default"] for k, v in schema_defs()["train_defaults"]["properties"].items()}
    fields = {f.name: f.default for f in dataclasses.fields(TrainConfig)}
    # every hyper-parameter a run takes from the workflow (seed and workers come from elsewhere)
    assert set(schema) == set(fields) - {"seed", "num_workers"}
    assert {k: fields[k] for k in schema if fields[k] is not dataclasses.MISSING} == {
        k: v for k, v in schema.items() if fields[k] is not dataclasses.MISSING
    }
    assert not hasattr(cfg, "TRAIN_DEFAULTS")


def test_the_ieat_permutation_default_is_the_library_default():
    from biastransfer.stats.ieat import PERMUTATIONS

    ieat = yaml.safe_load(Path(SCHEMA).read_text())["properties"]["analysis"]["properties"]["ieat"]
    assert ieat["properties"]["permutations"]["default"] == PERMUTATIONS == 100_000


def test_finetune_params_come_from_the_filled_defaults_then_the_overrides(demo):
    demo["finetune"]["defaults"] = {"epochs": 3}
    demo["finetune"]["overrides"] = {"democnn": {"synthetic_target": {"lr": 0.5}}}
    validate(demo, SCHEMA, set_default=True)
    params = cfg.finetune_params(demo, "democnn", "synthetic_target")
    assert params["epochs"] == 3 and params["lr"] == 0.5 and params["batch_size"] == 32


def test_paper_intervention_is_off_until_switched_on_and_trained_as_coco():
    """config/paper.yaml's coco_independent: switched off, it leaves no trace in the filled config; on, it is
    finetuned on coco's seeds with coco's per-model settings (Table 7), unless an override names it."""
    off = load("config/paper.yaml")
    off["finetune"]["overrides"]["resnet50"]["coco_independent"] = {"epochs": 3}
    cfg.check_config(cfg.fill_defaults(off))
    assert "coco_independent" not in off["datasets"] and off["finetune"]["datasets"] == ["coco", "openimages"]
    assert off["finetune"]["seeds"] == {"coco": [0, 1, 2], "openimages": [0]}
    assert set(off["finetune"]["overrides"]["resnet50"]) == {"coco", "openimages"}
    paper = load("config/paper.yaml")
    paper["datasets"]["coco_independent"]["enabled"] = True
    paper["finetune"]["overrides"]["resnet50"]["coco_independent"] = {"epochs": 3}
    on = cfg.fill_defaults(paper)
    cfg.check_config(on)
    assert on["finetune"]["datasets"][-1] == "coco_independent"
    assert cfg.finetune_seeds(on, "coco_independent") == cfg.finetune_seeds(on, "coco")
    for model in ("resnet18", "simclr_r50_v1"):
        assert cfg.finetune_params(on, model, "coco_independent") == cfg.finetune_params(on, model, "coco")
    assert cfg.finetune_params(on, "resnet18", "coco_independent")["lr"] == 0.1  # not the defaults' 0.01
    assert cfg.finetune_params(on, "resnet50", "coco_independent")["epochs"] == 3


@pytest.mark.parametrize(
    "edit, where",
    [
        (lambda c: c["analysis"]["ieat"].update(seed=-1), "['analysis']['ieat']['seed']"),
        (lambda c: c["analysis"]["similarity"].update(seed=-3), "['analysis']['similarity']['seed']"),
        (lambda c: c["analysis_sets"]["synthetic"].update(seed=-1), "['analysis_sets']['synthetic']['seed']"),
        (lambda c: c["datasets"]["synthetic_target"].update(seed=-2), "['datasets']['synthetic_target']"),
        (lambda c: c["models"]["democnn"]["pretrain"].update(seed=-1), "['models']['democnn']['pretrain']['seed']"),
    ],
)
def test_negative_seeds_are_refused_naming_the_key(demo, edit, where):
    edit(demo)
    with pytest.raises(WorkflowError) as err:
        validate(demo, SCHEMA)
    assert "less than the minimum of 0" in str(err.value.args) and where in str(err.value.args)


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda c: c["analysis_sets"]["synthetic"]["ieat"][0].update(Y="person_a"),
            "analysis_sets.synthetic.ieat.surfboard_vs_car: X and Y are both 'person_a'",
        ),
        (
            lambda c: c["analysis_sets"]["synthetic"]["ieat"][0].update(B="surfboard"),
            "analysis_sets.synthetic.ieat.surfboard_vs_car: A and B are both 'surfboard'",
        ),
        (
            lambda c: c["analysis_sets"]["synthetic"]["ieat"][0].update(A="person_a"),
            r"analysis_sets.synthetic.ieat.surfboard_vs_car: X and A are both 'person_a' \(a class takes one role\)",
        ),
        (
            lambda c: c["analysis_sets"]["synthetic"]["ieat"][0].update(B="person_b"),
            "analysis_sets.synthetic.ieat.surfboard_vs_car: Y and B are both 'person_b'",
        ),
        (
            lambda c: c["analysis_sets"]["synthetic"]["classes"].append("giraffe"),
            r"analysis_sets.synthetic.classes: \['giraffe'\] are no synthetic classes",
        ),
        (
            lambda c: c.update(report={"control_class": "noise"}),
            "report.control_class: class 'noise' is in no analysis set",
        ),
        (lambda c: c.update(report={"ieat_targets": ["man", "woman"]}), "report.ieat_targets: class 'man'"),
    ],
)
def test_what_a_job_would_reject_is_refused_naming_the_key(demo, edit, message):
    edit(demo)
    with pytest.raises(ValueError, match=message):
        cfg.check_config(cfg.fill_defaults(demo))


@pytest.mark.parametrize("source, section, key", [("paper", "paper", "files"), ("curated", "curation", "sizes")])
def test_a_real_class_without_its_list_or_size_is_refused(source, section, key):
    paper = load("config/paper.yaml")
    aset = paper["analysis_sets"]["coco"]
    aset["source"] = source
    cfg.check_config(cfg.fill_defaults(copy.deepcopy(paper)))
    del aset[section][key]["car_man"]
    with pytest.raises(
        ValueError, match=rf"analysis_sets.coco.{section}.{key}: no entry for class\(es\) \['car_man'\]"
    ):
        cfg.check_config(cfg.fill_defaults(paper))


def test_a_yaml_syntax_error_names_the_file_and_the_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("datasets:\n  a: {kind: synthetic\n  b: 1\n")
    with pytest.raises(ValueError, match=r"bad.yaml, line 3, column 4: "):
        cfg.read_config_file(bad)
    done = subprocess.run(
        [sys.executable, "-m", "biastransfer.workflow.config", str(bad)], capture_output=True, text=True
    )
    assert done.returncode == 2 and f"{bad}, line 3" in done.stderr and "Traceback" not in done.stderr
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    with pytest.raises(ValueError, match="list.yaml: a config file holds a mapping of keys, not list"):
        cfg.read_config_file(tmp_path / "list.yaml")


def test_a_bts_pair_of_a_class_with_itself_is_refused_by_the_schema(demo):
    demo["analysis_sets"]["synthetic"]["bts"]["inter"][0] = ["car", "car"]
    with pytest.raises(WorkflowError) as err:
        validate(demo, SCHEMA)
    assert "['car', 'car'] has non-unique elements" in str(err.value.args) and "'inter'" in str(err.value.args)


def test_a_key_given_twice_names_the_file_and_both_lines(tmp_path):
    twice = tmp_path / "twice.yaml"
    twice.write_text("analysis:\n  bts: {}\nmodels: {}\nanalysis:\n  ieat: {}\n")
    with pytest.raises(
        ValueError, match=r"twice.yaml, line 4, column 1: duplicate key 'analysis' \(first given on line 1\)"
    ):
        cfg.read_config_file(twice)
    nested = tmp_path / "nested.yaml"
    nested.write_text("models:\n  a:\n    lr: 1\n    lr: 2\n")
    with pytest.raises(ValueError, match=r"nested.yaml, line 4, column 5: duplicate key 'lr'"):
        cfg.read_config_file(nested)
    merged = tmp_path / "merged.yaml"
    merged.write_text("base: &b {lr: 1, epochs: 2}\nmodels:\n  a:\n    <<: *b\n    lr: 3\n")
    assert cfg.read_config_file(merged)["models"]["a"] == {"lr": 3, "epochs": 2}, "a merge key may be overridden"


def test_a_key_given_twice_in_a_configfile_stops_the_workflow(tmp_path):
    twice = tmp_path / "twice.yaml"
    twice.write_text((ROOT / "config" / "config.yaml").read_text() + "\nanalysis: {}\n")
    done = subprocess.run(
        snakemake_command("-n", "--cores", "1", "--configfile", twice),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0
    assert f"{twice}, line" in done.stdout + done.stderr and "duplicate key 'analysis'" in done.stdout + done.stderr


def test_a_broken_default_config_is_named_by_the_workflow(tmp_path):
    """Snakemake's own message ("not valid JSON or YAML") names no file; the Snakefile reads it first."""
    for part in ("Snakefile", "rules", "workflow", "config"):
        copy_tree = shutil.copytree if (ROOT / part).is_dir() else shutil.copy
        copy_tree(ROOT / part, tmp_path / part)
    (tmp_path / "config" / "config.yaml").write_text("datasets:\n  a: [1, 2\nmodels: {}\n")
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "1"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "config/config.yaml, line 3, column 7: expected ',' or ']'" in done.stdout + done.stderr


def test_every_problem_of_every_section_is_named_at_once(demo, tmp_path):
    demo["finetune"]["datasets"].append("nope")
    demo["analysis_sets"]["synthetic"]["ieat"][0].update(A="boat")
    demo["analysis_sets"]["own"] = {"source": "folder", "root": str(tmp_path / "missing"), "classes": ["a", "b"]}
    demo["report"] = {"control_class": "noise"}
    demo["zoo"] = {"rank_by": {"analysis_set": "synthetic", "test": "nope"}}
    with pytest.raises(ValueError) as err:
        cfg.check_config(cfg.fill_defaults(demo))
    lines = str(err.value).splitlines()
    assert lines[0] == "invalid configuration:"
    assert [line.strip().split(":")[0] for line in lines[1:]] == [
        "analysis_sets.own.root",
        "finetune.datasets",
        "analysis_sets.synthetic.ieat.surfboard_vs_car.A",
        "report.control_class",
        "zoo.rank_by.test",
        "finetune.datasets",  # a zoo is pretrained-only
        "models.democnn",  # and audits no model trained here
        "models.democnn.about",
    ]


def test_the_checks_read_the_filled_config_only(demo):
    """A section the config leaves out is there after filling; the checks need no defaults of their own."""
    for section in ("report", "weights"):
        demo.pop(section, None)
    del demo["finetune"]["trajectory"]
    with pytest.raises(KeyError):
        cfg.check_config(demo)
    cfg.check_config(cfg.fill_defaults(demo))


def test_null_in_a_later_config_file_removes_a_section_or_an_entry(demo):
    from snakemake.utils import update_config

    overlay = {
        "finetune": None,
        "models": {"democnn": None, "resnet18": {}},
        "analysis": {"layers": {"enabled": False}},
    }
    update_config(demo, overlay)
    assert demo["finetune"] is None and demo["models"]["democnn"] is None
    cfg.drop_removed(demo)
    assert "finetune" not in demo and list(demo["models"]) == ["resnet18"]
    cfg.fill_defaults(demo)
    assert demo["finetune"]["datasets"] == [] and demo["finetune"]["trajectory"] == "off"
    assert demo["zoo"] is None  # null is a value where the schema allows it


def test_the_zoo_is_an_overlay_on_the_papers_datasets_and_analysis_sets():
    paper = cfg.read_configs([ROOT / "config" / "paper.yaml"])
    zoo = cfg.read_configs([ROOT / "config" / "paper.yaml", ROOT / "config" / "zoo.yaml"])
    assert load("config/zoo.yaml").keys().isdisjoint({"datasets", "analysis_sets"})
    assert zoo["datasets"] == paper["datasets"] and zoo["analysis_sets"] == paper["analysis_sets"]
    assert zoo["finetune"] == cfg.fill_defaults({**load("tests/configs/tiny.yaml"), "finetune": {}})["finetune"]
    assert zoo["analysis"]["layers"]["enabled"] is False and zoo["zoo"]["rank_by"]["analysis_set"] == "coco"
    assert not (set(paper["models"]) - {"moco_r50_v1"}) & set(zoo["models"])
    assert all(entry["about"]["family"] for entry in zoo["models"].values())
    cfg.check_config(zoo)
