"""The model zoo: config/zoo.yaml (an overlay on config/paper.yaml)'s names and weights resolve offline, its DAG plans, the ranked table and
resources by size are right, and a small zoo (seven models from four sources) runs end to end with two broken
models that stop nothing."""

import copy
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import ROOT, run_snakemake, scratch
from test_tables import compile_latex, needs_latex
from zoo_toy import BROKEN, SMALL_ZOO, small_zoo_config

sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from biastransfer.report.zoo import ranking_table, status_table
from biastransfer.workflow.config import read_configs
from biastransfer.workflow.rules.analysis import ClaimsSettings
from biastransfer.zoo import embed_settings, read_status, write_failure, zoo_problems

ZOO = [ROOT / "config" / "paper.yaml", ROOT / "config" / "zoo.yaml"]  # the --configfile files, in order


@pytest.fixture(scope="module")
def zoo_config():
    return read_configs(ZOO)


def _library_weights(entry):
    """The Hugging Face hub id the library's own pretrained config gives."""
    import open_clip
    import timm

    if entry["source"] == "timm":
        cfg = timm.models.get_pretrained_cfg(f"{entry['arch']}.{entry['pretrained_tag']}", allow_unregistered=False)
        return cfg.hf_hub_id
    return open_clip.get_pretrained_cfg(entry["arch"], entry["pretrained_tag"])["hf_hub"].strip("/")


@pytest.mark.slow  # about 10 s of CPU (make test-fast leaves it out)
def test_every_zoo_model_is_a_library_name_whose_weights_resolve_offline(zoo_config):
    import open_clip
    import timm

    from biastransfer.models.resolve import model_spec

    models = zoo_config["models"]
    assert len(models) >= 50
    timm_names, clip_names = set(timm.list_pretrained()), set(open_clip.list_pretrained())
    families, clip_data = set(), set()
    for name, entry in models.items():
        spec = model_spec(name, entry)
        about = entry["about"]
        families.add(about["family"])
        if spec.source == "timm":
            assert f"{spec.arch}.{spec.pretrained_tag}" in timm_names, name
            hub = _library_weights(entry)
            assert spec.weights == f"https://huggingface.co/{hub}/resolve/main/model.safetensors", name
            crop = timm.models.get_pretrained_cfg(f"{spec.arch}.{spec.pretrained_tag}").input_size[-1]
            assert spec.preprocess.crop == crop, name
        elif spec.source == "open_clip":
            assert (spec.arch, spec.pretrained_tag) in clip_names, name
            hub = _library_weights(entry)
            assert spec.weights.startswith(f"https://huggingface.co/{hub}/resolve/main/"), name
            clip_data.add(about["data"].split()[0].split("-")[0])
        else:
            assert spec.weights.startswith("https://"), name  # the registry's MoCo checkpoints
        assert math.isclose(about["params_m"], _meta_params(spec) / 1e6, abs_tol=0.051), name
    assert {"supervised CNN", "supervised ViT", "self-supervised", "CLIP-family"} <= families
    assert {"OpenAI", "LAION", "DataComp", "MetaCLIP", "DFN", "CommonPool"} <= clip_data


def _meta_params(spec):
    """Parameters of a spec's image encoder, built on the meta device (no memory, no weights)."""
    import open_clip
    import torch

    from biastransfer.models.extractors import create_backbone

    with torch.device("meta"):
        if spec.source == "open_clip":
            quick = bool((open_clip.get_pretrained_cfg(spec.arch, spec.pretrained_tag) or {}).get("quick_gelu"))
            model = open_clip.create_model(
                spec.arch, pretrained=None, load_weights=False, device="meta", force_quick_gelu=quick
            ).visual
        else:
            model = create_backbone(spec, None)
    return sum(p.numel() for p in model.parameters())


def test_zoo_plans_offline_with_memory_by_model_size(tmp_path, zoo_config):
    done = run_snakemake("-n", "--cores", "2", "--configfile", *ZOO, cwd=tmp_path)
    counts = dict(
        line.split()[:2] for line in done.stdout.splitlines() if line.startswith(("zoo_status ", "zoo_table "))
    )
    assert counts == {"zoo_status": str(len(zoo_config["models"])), "zoo_table": "1"}
    assert "claims" not in planned(done.stdout)  # config/zoo.yaml tests none
    jobs = done.stdout.split("checkpoint zoo_status:")[1:]
    memory = {job.split("wildcards: model=")[1].split()[0]: int(job.split("mem_mb=")[1].split(",")[0]) for job in jobs}
    sizes = zoo_config["analysis"]["embed"]["sizes"]
    assert memory["resnet18_tv_in1k"] == sizes[0]["mem_mb"] and memory["clip_ViT_L_14_openai"] == sizes[-1]["mem_mb"]
    assert memory == {m: embed_settings(e, zoo_config["analysis"]["embed"])[1] for m, e in zoo_config["models"].items()}


def planned(output):
    """{rule: jobs} of a dry run's job table."""
    table = output.split("Job stats:", 1)[1].split("\n\n")[0]
    return {m[0]: int(m[1]) for m in (line.split() for line in table.splitlines()) if len(m) == 2 and m[1].isdigit()}


# Claims a zoo run can test (pretrained d, groups of zoo models) and ones it cannot (they need finetuning).
ZOO_CLAIMS = {
    "groups": {
        "cnn": ["resnet18_tv_in1k", "resnet50_tv_in1k", "densenet121_tv_in1k", "vgg16_tv_in1k"],
        "clip": ["clip_RN50_openai", "clip_ViT_B_32_openai", "clip_ViT_B_16_openai", "clip_ViT_L_14_openai"],
    },
    "tests": [
        {
            "name": "clip_more_biased",
            "measure": "d",
            "stage": "pretrained",
            "analysis_set": "coco",
            "test": "refrigerator_vs_surfboard",
            "compare": "groups",
            "x": "clip",
            "y": "cnn",
            "direction": "greater",
        },
    ],
}


def test_a_zoo_tests_claims_on_pretrained_d_and_refuses_any_other_naming_it():
    from biastransfer.workflow.config import merge_configs
    from biastransfer.workflow.config_check import validation_problems

    assert validation_problems({**merge_configs(ZOO), "claims": copy.deepcopy(ZOO_CLAIMS)}) == []
    claims = copy.deepcopy(ZOO_CLAIMS)
    good = claims["tests"][0]
    claims["tests"] += [
        {**good, "name": "finetuned_d", "stage": "finetuned"},
        {**good, "name": "change", "measure": "change_d"},
        {**good, "name": "retention", "measure": "bts_intra", "test": None},
    ]
    why = "needs finetuned networks, and a zoo run measures pretrained ones only"
    assert validation_problems({**merge_configs(ZOO), "claims": claims}) == [
        f"claims.tests.finetuned_d.stage: stage finetuned {why} (a zoo tests measure d at stage pretrained, "
        "compare groups)",
        f"claims.tests.change.measure: change_d {why} (a zoo tests measure d at stage pretrained, compare groups)",
        f"claims.tests.retention.measure: bts_intra {why} (a zoo tests measure d at stage pretrained, compare groups)",
    ]


def test_a_zoo_with_claims_plans_them(tmp_path):
    (tmp_path / "claims.yaml").write_text(yaml.safe_dump({"claims": ZOO_CLAIMS}))
    done = run_snakemake("-n", "--cores", "2", "--configfile", *ZOO, tmp_path / "claims.yaml", cwd=tmp_path)
    jobs = planned(done.stdout)
    assert jobs["claims"] == jobs["table_claims"] == jobs["plot_claims"] == jobs["zoo_findings"] == 1
    assert "summarise_change" not in jobs and "bts" not in jobs  # nothing a zoo cannot make


def test_a_zoos_claims_job_reads_the_ieats_and_leaves_out_the_models_that_failed(tmp_path):
    from claims import main

    groups = {"a": ["a1", "a2", "a3", "a_broken"], "b": ["b1", "b2", "b3"]}
    rows = [
        {**_ieat_rows(m, d, 0.01), "finetune_dataset": None, "seed": None}
        for m, d in zip(["a1", "a2", "a3", "b1", "b2", "b3"], [1.0, 1.1, 1.2, 0.1, 0.2, 0.3])
    ]
    pd.DataFrame(rows).to_csv(tmp_path / "ieat.csv", index=False)
    statuses = []
    for model in [m for members in groups.values() for m in members]:
        statuses.append(tmp_path / f"{model}.json")
        if model == "a_broken":
            write_failure(statuses[-1], model=model, error="ValueError: no weights\ntraceback")
        else:
            statuses[-1].write_text(json.dumps({"format": "biastransfer-weights/1", "model": model, "params": 1}))
    claim = {
        "name": "a_above_b",
        "measure": "d",
        "stage": "pretrained",
        "analysis_set": "s",
        "test": "t",
        "compare": "groups",
        "x": "a",
        "y": "b",
        "dataset": None,
        "models": [],
        "direction": "greater",
    }
    claims = {
        "groups": groups,
        "tests": [claim],
        "alpha": 0.05,
        "permutations": 1000,
        "level": 0.95,
        "power": 0.8,
        "simulations": 100,
        "seed": 0,
    }
    main(
        ieat=str(tmp_path / "ieat.csv"),
        settings=ClaimsSettings(claims=claims, datasets=[], adjust="holm"),
        table=str(tmp_path / "claims.csv"),
        values=str(tmp_path / "values.csv"),
        statuses=[str(p) for p in statuses],
    )
    table = pd.read_csv(tmp_path / "claims.csv")
    assert table[["claim", "n_x", "n_y"]].values.tolist() == [["a_above_b", 3, 3]]
    assert table["left_out"].tolist() == ["a_broken (failed its zoo check: ValueError: no weights)"]
    assert sorted(pd.read_csv(tmp_path / "values.csv")["model"]) == ["a1", "a2", "a3", "b1", "b2", "b3"]


def test_embed_settings_by_model_size():
    embed = {
        "batch_size": 8,
        "sizes": [
            {"up_to_m": 100, "batch_size": 64, "mem_mb": 9000},
            {"up_to_m": 30, "batch_size": 256, "mem_mb": 6000},
        ],
    }
    assert embed_settings({"about": {"params_m": 11.2}}, embed) == (256, 6000)
    assert embed_settings({"about": {"params_m": 30}}, embed) == (256, 6000)
    assert embed_settings({"about": {"params_m": 86}}, embed) == (64, 9000)
    assert embed_settings({"about": {"params_m": 304}}, embed) == (8, 4000)  # larger than every class
    assert embed_settings({}, embed) == (8, 4000)


def test_zoo_config_errors_are_named(zoo_config):
    conf = copy.deepcopy(zoo_config)
    assert zoo_problems(conf) == []
    conf["zoo"]["rank_by"]["test"] = "nope"
    conf["finetune"]["datasets"] = ["coco"]
    del conf["models"]["resnet18_tv_in1k"]["about"]["family"]
    assert zoo_problems(conf) == [
        "zoo.rank_by.test: 'nope' is not an iEAT test of analysis_sets.coco",
        "finetune.datasets: a zoo audit is pretrained-only; set it to []",
        "models.resnet18_tv_in1k.about: family missing (the ranked table states them)",
    ]
    conf.update(zoo=None, finetune={"datasets": []})
    assert "needs a zoo section" in zoo_problems(conf)[0]


def _ieat_rows(model, d, p):
    return {
        "analysis_set": "s",
        "model": model,
        "stage": "pretrained",
        "test": "t",
        "X": "x",
        "Y": "y",
        "A": "a",
        "B": "b",
        "effect_size": d,
        "ci_low": d - 0.5,
        "ci_high": d + 0.5,
        "ci_level": 0.95,
        "pvalue": p,
        "pvalue_two_sided": min(1.0, 2 * p),
        "pvalue_floor": 0.001,
        "alternative": "greater",
        "pvalue_holm": min(1.0, 3 * p),
        "pvalue_bh": min(1.0, 1.5 * p),
    }


def test_ranking_orders_by_d_and_leaves_out_failed_models(tmp_path):
    ieat = pd.DataFrame([_ieat_rows("m1", 0.2, 0.3), _ieat_rows("m2", 1.1, 0.001), _ieat_rows("m3", -0.4, 0.8)])
    write_failure(tmp_path / "m3.json", model="m3", error="ValueError: bad")
    records = [
        {"model": "m1", "ok": True, "params": 11_200_000},
        {"model": "m2", "ok": True, "params": 2_000_000},
        read_status(tmp_path / "m3.json"),
    ]
    status = status_table(records, {"m1": {"family": "f", "data": "d"}, "m2": {"family": "g", "data": "e"}})
    ranked = ranking_table(ieat, status, adjust="bh")
    assert ranked["model"].tolist() == ["m2", "m1"] and ranked["rank"].tolist() == [1, 2]
    assert ranked["pvalue_adjusted"].tolist() == pytest.approx([0.0015, 0.45])
    assert ranked["params_m"].tolist() == [2.0, 11.2] and ranked["family"].tolist() == ["g", "f"]
    assert status.loc[~status["ok"], "error"].tolist() == ["ValueError: bad"]
    with pytest.raises(ValueError, match="adjust must be one of"):
        ranking_table(ieat, status, adjust="bonferroni")


@needs_latex
def test_the_full_zoos_table_compiles_and_its_forest_plot_fits_the_page(tmp_path, zoo_config):
    from biastransfer.report.style import print_size_problems
    from biastransfer.report.zoo import forest_figure, ranking_latex

    names = list(zoo_config["models"])
    ieat = pd.DataFrame([_ieat_rows(m, 1.5 - 0.05 * k, 0.5 * 0.9**k) for k, m in enumerate(names)])
    records = [{"model": m, "ok": True, "params": 10**7} for m in names[3:]]
    records += [
        {"model": m, "ok": False, "error": f"ValueError: weights of {m} do not fit_it & more"} for m in names[:3]
    ]
    status = status_table(records, {m: e["about"] for m, e in zoo_config["models"].items()})
    ranked = ranking_table(ieat, status)
    assert len(ranked) == len(names) - 3
    compile_latex(ranking_latex(ranked, status, analysis_set="s", test="t"), tmp_path)
    fig = forest_figure(ranked, status, analysis_set="s", test="t")
    assert print_size_problems(fig) == []
    assert names[0] in fig.get_suptitle().replace("\n", "")


def test_a_passed_check_is_a_weights_record_the_embed_job_reads(tmp_path):
    from biastransfer.models.registry import REGISTRY
    from biastransfer.models.weights import (
        WEIGHTS_RECORD_FORMAT,
        weights_file_and_sha256,
        write_weights_record,
    )
    from biastransfer.zoo import PASSED_FORMAT

    assert PASSED_FORMAT == WEIGHTS_RECORD_FORMAT
    (tmp_path / "w.pth").write_bytes(b"weights")
    write_weights_record(tmp_path / "ok.json", REGISTRY["resnet18"], tmp_path / "w.pth", params=42)
    assert read_status(tmp_path / "ok.json") == {"model": "resnet18", "ok": True, "error": None, "params": 42}
    assert weights_file_and_sha256(tmp_path / "ok.json")[0] == tmp_path / "w.pth"
    write_weights_record(tmp_path / "fetched.json", REGISTRY["resnet18"], tmp_path / "w.pth")  # no params: not a check
    with pytest.raises(ValueError, match="fetched.json: not a zoo status record"):
        read_status(tmp_path / "fetched.json")


def test_a_status_record_is_checked(tmp_path):
    (tmp_path / "x.json").write_text('{"format": "other"}')
    for name in ("x.json", "missing.json"):
        with pytest.raises(ValueError, match=f"{name}: not a"):
            read_status(tmp_path / name)


# The small zoo's claim: CNNs against the other models on pretrained d, a broken model in each group.
SMALL_ZOO_CLAIMS = {
    "groups": {
        "cnn": ["resnet18", "tv_mobilenet_v3_small", "resnet10t_c3_in1k", "regnetx_002_pycls_in1k", "broken_tag"],
        "other": ["deit_tiny_patch16_224_fb_in1k", "clip_RN50_openai", "user_resnet18", "broken_weights"],
    },
    "tests": [
        {
            "name": "cnn_differs",
            "measure": "d",
            "stage": "pretrained",
            "analysis_set": "synthetic",
            "test": "surfboard_vs_car",
            "compare": "groups",
            "x": "cnn",
            "y": "other",
            "direction": "two-sided",
        },
    ],
}


@pytest.fixture(scope="module")
def small_zoo(tmp_path_factory):
    with scratch(tmp_path_factory, "zoo") as root:
        config = root / "zoo.yaml"
        config.write_text(yaml.safe_dump({**small_zoo_config(root), "claims": SMALL_ZOO_CLAIMS}, sort_keys=False))
        work = root / "work"
        work.mkdir()
        run_snakemake("--cores", "2", "--configfile", config, cwd=work)
        yield work


@pytest.mark.slow
def test_small_zoo_ranks_every_good_model_and_names_the_broken_ones(small_zoo):
    status = pd.read_csv(small_zoo / "results" / "zoo" / "status.csv", keep_default_na=False, na_values=[""])
    failed = status[~status["ok"]].set_index("model")["error"]
    assert sorted(failed.index) == sorted(BROKEN)
    for model, words in BROKEN.items():
        assert words in failed[model]
    ranked = pd.read_csv(small_zoo / "results" / "zoo" / "ranking.csv")
    good = sorted(set(SMALL_ZOO) - set(BROKEN))
    assert sorted(set(ranked["model"])) == good and len(ranked) == 2 * len(good)
    for _, rows in ranked.groupby("test"):
        assert rows["rank"].tolist() == list(range(1, len(good) + 1))
        assert rows["effect_size"].is_monotonic_decreasing
        assert (rows["ci_low"] <= rows["effect_size"]).all() and (rows["effect_size"] <= rows["ci_high"]).all()
    summary = pd.read_csv(small_zoo / "results" / "summary" / "ieat.csv")
    merged = ranked.merge(summary, on=["model", "test"])
    assert (merged["pvalue_adjusted"] == merged["pvalue_holm"]).all()
    counted = status.set_index("model")["params_m"]
    assert counted["resnet18"] == pytest.approx(11.176512) and counted["clip_RN50_openai"] == pytest.approx(38.316896)
    for model in BROKEN:
        assert not list((small_zoo / "results" / "embeddings").glob(f"*/{model}/*"))
    latex = (small_zoo / "results" / "zoo" / "ranking.tex").read_text()
    assert "longtable" in latex and "Not audited" in latex and "broken\\_tag" in latex
    findings = (small_zoo / "results" / "zoo" / "findings.rst").read_text()
    assert (
        f"{len(SMALL_ZOO)} models configured, {len(good)} audited, 2 failed" in findings
        and "broken_weights" in findings
    )
    assert (small_zoo / "results" / "figures" / "zoo_forest.pdf").stat().st_size > 0
    claims = pd.read_csv(small_zoo / "results" / "summary" / "claims.csv").iloc[0]
    assert (claims["claim"], claims["n_x"], claims["n_y"]) == ("cnn_differs", 4, 3)
    left_out = claims["left_out"]  # each model with the first line of its error
    assert left_out.startswith("broken_tag (failed its zoo check: ") and "; broken_weights (failed its" in left_out
    assert "**cnn_differs** (d: cnn - other ≠ 0, on synthetic; 4 and 3 models)" in findings
    assert "Left out of its groups: broken_tag (failed its zoo check:" in findings
    assert (small_zoo / "results" / "figures" / "claims.pdf").stat().st_size > 0
    assert (small_zoo / "results" / "tables" / "claims.tex").stat().st_size > 0


@pytest.mark.slow
def test_small_zoo_shares_one_weights_cache_and_reruns_nothing(small_zoo):
    cache = Path(yaml.safe_load((small_zoo.parent / "zoo.yaml").read_text())["weights"]["cache_dir"])
    assert len(list((cache / "resnet10t_c3_in1k").glob("timm-*/model.safetensors"))) == 1
    assert len(list((cache / "clip_RN50_openai").glob("open_clip-openai-*/open_clip_model.safetensors"))) == 1
    # a rerun finds everything done, failed models included: their records are results, not errors
    done = run_snakemake("-n", "--cores", "2", "--configfile", small_zoo.parent / "zoo.yaml", cwd=small_zoo)
    assert "Nothing to be done" in done.stdout + done.stderr


@pytest.mark.slow
def test_small_zoo_report_builds_without_finetuning(small_zoo):
    import zipfile

    report = small_zoo / "report.zip"
    run_snakemake("--configfile", small_zoo.parent / "zoo.yaml", "--report", report, cwd=small_zoo)
    files = {Path(n).name for n in zipfile.ZipFile(report).namelist()}
    assert {
        "report.html",
        "ranking.csv",
        "ranking.tex",
        "zoo_forest.png",
        "findings.html",
        "ieat_heatmap.png",
        "claims.csv",
        "claims.png",
    } <= files


def test_the_zoo_findings_count_significant_models_by_the_runs_one_rule():
    from biastransfer.report.findings import describe_zoo

    rows = [
        ("m1", "cnn", 1.2, 0.6, 1.7, 1e-4, 0.003),
        ("m2", "cnn", 0.4, -0.2, 0.9, 0.02, 0.04),
        ("m3", "vit", -0.8, -1.3, -0.2, 0.99, 1.0),
        ("m4", "vit", np.nan, np.nan, np.nan, np.nan, np.nan),
    ]
    ranking = pd.DataFrame(
        rows, columns=["model", "family", "effect_size", "ci_low", "ci_high", "pvalue", "pvalue_adjusted"]
    ).assign(
        data="d",
        pvalue_floor=1e-4,
        adjust="holm",
        ci_level=0.95,
        analysis_set="s",
        test="t",
        X="x",
        Y="y",
        A="a",
        B="b",
        alternative="greater",
    )
    status = pd.DataFrame(
        {
            "model": ["m1", "m2", "m3", "m4", "m5"],
            "ok": [True] * 4 + [False],
            "error": [""] * 4 + ["weights not found\nmore"],
        }
    )
    text = describe_zoo(ranking, status, analysis_set="s", test="t", alpha=0.01)
    # at alpha 0.01 only m1 is significant (m2's adjusted p 0.04 is not; m4's missing p counts as not)
    assert "cnn (2 models): median d 0.80" in text and "1 with adjusted p < 0.01" in text
    assert "s: t: 1 of 4 models have an interval above 0 and 1 below 0; 1 have adjusted p < 0.01" in text
    assert "**m5**: weights not found" in text and "d is undefined (no spread of association scores) for: m4" in text
    with pytest.raises(ValueError, match="alpha"):
        describe_zoo(ranking, status, analysis_set="s", test="t", alpha=1.5)
