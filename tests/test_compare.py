"""The paper's reference values and the side-by-side comparison: rows line up, mismatches are flagged."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from biastransfer.report import compare
from biastransfer.report.latex import tabular_of
from biastransfer.scripting import run

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "resources" / "paper_reference.csv"
PAPER_MODELS = ("resnet18", "resnet50", "bit_m_r50x1", "clip_vit_b32", "moco_r50_v1", "simclr_r50_v1")


@pytest.fixture(scope="module")
def reference():
    return compare.read_reference(REFERENCE)


def test_reference_covers_the_papers_tables(reference):
    counts = reference.groupby("table").size().to_dict()
    # Table 2: 6 models x 2 tests x (d, p) x 2 stages; 3/4: 6 x 4; 9: 6 x 6 tests x 4; 5/6: classes; 7: 6 x 4; 8: 6 x 3.
    assert counts == {"2": 48, "3": 24, "4": 24, "5": 13, "6": 16, "7": 24, "8": 18, "9": 144}
    assert set(reference["model"]) - {""} == set(PAPER_MODELS)
    assert reference["provenance"].str.match(r"Table \d, row ").all()


def test_reference_spot_values_from_the_paper(reference):
    def value(table, **where):
        rows = reference[reference["table"] == table]
        for col, v in where.items():
            rows = rows[rows[col] == v]
        return rows["value"].item()

    assert value("3", model="bit_m_r50x1", measure="bts_intra") == 0.893  # also Fig. 2's caption
    assert value("3", model="bit_m_r50x1", measure="bts_inter") == 0.8
    assert value("4", model="bit_m_r50x1", measure="bts_intra_p") == 1e-4
    assert value("4", model="clip_vit_b32", measure="bts_intra") == 0.429  # quoted in Section 7.4
    assert value("9", model="resnet18", measure="ieat_d", stage="pretrained", concept_pair="mammal|fashion") == -1e-4
    assert value("9", model="bit_m_r50x1", measure="ieat_d", stage="finetuned", concept_pair="car|mammal") == 0.788
    assert value("7", model="moco_r50_v1", measure="mAP_sd") == 0.038
    assert value("8", model="resnet18", measure="epochs") == 30
    assert value("6", concept_pair="fashion_woman") == 150


def test_table_2_repeats_table_9(reference):
    keys = list(compare.JOIN_KEYS)
    t2 = reference[reference["table"] == "2"].set_index(keys)["value"]
    t9 = reference[reference["table"] == "9"].set_index(keys)["value"]
    assert t2.index.isin(t9.index).all()
    assert (t9.loc[t2.index] == t2).all()


def reproducing_run(reference: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Summary tables whose numbers equal the paper's: BTS of Table 4, iEAT of Table 9 for BiT and CLIP,
    finetuning of Tables 7 (three seeds: mean - sd, mean, mean + sd) and 8, and Table 6's class sizes."""
    t4 = reference[reference["table"] == "4"]
    bts = []
    for model, part in t4.groupby("model", sort=False):
        v = part.set_index("measure")["value"]
        for kind in ("intra", "inter"):
            bts.append(
                dict(
                    analysis_set="openimages",
                    model=model,
                    stage="ft-openimages",
                    finetune_dataset="openimages",
                    seed="pooled",
                    kind=kind,
                    statistic=v[f"bts_{kind}"],
                    pvalue=1.0,
                    pvalue_t=v[f"bts_{kind}_p"],
                    n=7,
                )
            )
    t9 = reference[(reference["table"] == "9") & reference["model"].isin(["bit_m_r50x1", "clip_vit_b32"])]
    ieat = []
    for (model, pair, stage), part in t9.groupby(["model", "concept_pair", "stage"], sort=False):
        v = part.set_index("measure")["value"]
        a, b = pair.split("|")
        ieat.append(
            dict(
                analysis_set="openimages",
                model=model,
                stage="pretrained" if stage == "pretrained" else "ft-openimages-seed0",
                finetune_dataset="" if stage == "pretrained" else "openimages",
                seed="" if stage == "pretrained" else "0",
                test=f"{a}_vs_{b}",
                X="man",
                Y="woman",
                A=a,
                B=b,
                effect_size=v["ieat_d"],
                pvalue=v["ieat_p"],
                pvalue_holm=v["ieat_p"],
                pvalue_bh=v["ieat_p"],
                pvalue_two_sided=1.0,
                pvalue_floor=1e-5,
                ci_low=float("nan"),
                ci_high=float("nan"),
                alternative="greater",
            )
        )
    metrics = []
    for table, dataset, metric, seeds in (("7", "coco", "mAP", (0, 1, 2)), ("8", "openimages", "micro_f1", (0,))):
        for model, part in reference[reference["table"] == table].groupby("model", sort=False):
            v = part.set_index("measure")["value"]
            sd = v.get(f"{metric}_sd", 0.0)
            for seed, step in zip(seeds, (-1, 0, 1) if len(seeds) == 3 else (0,)):
                metrics.append(
                    dict(
                        dataset=dataset,
                        model=model,
                        seed=str(seed),
                        epoch_best=5,
                        metric_name=metric,
                        metric_value=v[metric] + step * sd,
                        epochs=v["epochs"],
                        lr=v["lr"],
                        batch_size=32,
                        optimizer="sgd",
                        scheduler="none",
                    )
                )
    t6 = reference[reference["table"] == "6"]
    stats = pd.DataFrame(
        {
            "analysis_set": "openimages",
            "dataset": "openimages",
            "class": t6["concept_pair"],
            "n": t6["value"].astype(int),
        }
    )
    return {
        "bts": pd.DataFrame(bts),
        "ieat": pd.DataFrame(ieat),
        "finetune_metrics": pd.DataFrame(metrics),
        "analysis_sets": stats,
    }


@pytest.fixture()
def run_tables(reference):
    return reproducing_run(reference)


def test_a_run_that_reproduces_the_paper_agrees_on_every_row_it_produced(reference, run_tables):
    result = compare.compare_to_paper(compare.run_measurements(**run_tables), reference)
    rows = result.rows
    assert result.n_flagged == 0, rows[rows["flagged"]].to_string()
    expected = {"4": 24, "9": 2 * 6 * 4, "2": 2 * 2 * 4, "7": 24, "8": 18, "6": 16}
    assert rows.groupby("table").size().to_dict() == expected
    assert (rows["difference"].abs() < 1e-9).all()
    assert not rows["table"].isin(["3", "5"]).any()  # the run did not analyse COCO: out of scope, not "missing"
    # Each row is joined to its own reference number, not a neighbour's.
    assert (rows["ours"] - rows["paper"]).abs().max() < 1e-9
    sample = rows[
        (rows["model"] == "clip_vit_b32") & (rows["concept_pair"] == "mammal|fashion") & (rows["measure"] == "ieat_d")
    ]
    assert sorted(sample["paper"]) == [-0.249, 0.84]


def test_planted_mismatches_are_flagged_and_only_they(reference, run_tables):
    ieat = run_tables["ieat"]
    planted_d = (ieat.model == "bit_m_r50x1") & (ieat.A == "car") & (ieat.B == "mammal") & (ieat.stage == "pretrained")
    ieat.loc[planted_d, "effect_size"] += 0.3
    planted_p = (ieat.model == "clip_vit_b32") & (ieat.A == "sports") & (ieat.B == "car") & (ieat.stage == "pretrained")
    ieat.loc[planted_p, "pvalue"] = 0.2  # the paper: p = 0.01, significant
    run_tables["finetune_metrics"].loc[run_tables["finetune_metrics"]["model"] == "resnet18", "epochs"] = 20
    rows = compare.compare_to_paper(compare.run_measurements(**run_tables), reference).rows
    flagged = rows[rows["flagged"]]
    got = sorted(zip(flagged["table"], flagged["provenance"], flagged["status"]))
    assert got == [
        ("7", "Table 7, row ResNet18, Epochs", "differs"),
        ("8", "Table 8, row ResNet18, Epochs", "differs"),
        ("9", "Table 9, row BiT-M-R50x1 Car/Mammal, Pretrained d", "differs"),
        ("9", "Table 9, row CLIP-ViT-B/32 Surfboard/Car, Pretrained p", "significance differs"),
    ]
    d_row = flagged[flagged["measure"] == "ieat_d"].iloc[0]
    assert (d_row["ours"], d_row["paper"], d_row["difference"]) == pytest.approx((0.391, 0.091, 0.3))


def test_a_concept_the_run_names_differently_is_missing_not_silently_dropped(reference, run_tables):
    ieat = run_tables["ieat"]
    ieat.loc[ieat.A == "sports", "A"] = "surfboard"
    rows = compare.compare_to_paper(compare.run_measurements(**run_tables), reference).rows
    missing = rows[rows["status"] == "missing"]
    # 2 models x 3 sports pairs x 2 stages x (d, p) in Table 9, plus Table 2's sports|fashion rows.
    assert len(missing[missing["table"] == "9"]) == 24 and len(missing[missing["table"] == "2"]) == 8
    assert missing["flagged"].all() and missing["ours"].isna().all()


def test_tolerances_and_alpha_are_parameters(reference, run_tables):
    run_tables["finetune_metrics"]["metric_value"] += 0.015
    ours = compare.run_measurements(**run_tables)
    assert compare.compare_to_paper(ours, reference).n_flagged == 0
    strict = compare.compare_to_paper(ours, reference, tolerances={"mAP": 0.01, "micro_f1": 0.01})
    assert set(strict.rows.loc[strict.rows["flagged"], "measure"]) == {"mAP", "micro_f1"}
    with pytest.raises(ValueError, match="unknown measure"):
        compare.compare_to_paper(ours, reference, tolerances={"accuracy": 0.1})
    # BiT's Table 4 inter p is 0.005: significant at 0.05, not at 0.001.
    loose = compare.compare_to_paper(ours, reference, alpha=0.001).rows
    assert (
        loose.loc[
            (loose["table"] == "4") & (loose["model"] == "bit_m_r50x1") & (loose["measure"] == "bts_inter_p"), "status"
        ].item()
        == "agrees"
    )


def test_seed_spread_is_compared_where_the_paper_gives_one(reference, run_tables):
    metrics = run_tables["finetune_metrics"]
    extra = metrics[metrics["dataset"] == "openimages"].assign(
        seed="1", metric_value=lambda m: m["metric_value"] + 0.01
    )
    ours = compare.run_measurements(**{**run_tables, "finetune_metrics": pd.concat([metrics, extra])})
    assert set(ours.loc[ours["finetune_dataset"] == "openimages", "measure"]) >= {"micro_f1", "micro_f1_sd"}
    rows = compare.compare_to_paper(ours, reference).rows
    assert rows["measure"].isin(["mAP_sd"]).sum() == 6 and not rows["measure"].isin(["micro_f1_sd"]).any()
    assert rows.loc[rows["measure"] == "micro_f1", "difference"].abs().max() == pytest.approx(0.005)


def test_bad_inputs(reference, run_tables, tmp_path):
    doubled = {**run_tables, "bts": pd.concat([run_tables["bts"], run_tables["bts"].iloc[:1]])}
    with pytest.raises(ValueError, match="more than one row"):
        compare.run_measurements(**doubled)
    bad = tmp_path / "ref.csv"
    reference.assign(measure="accuracy").to_csv(bad, index=False)
    with pytest.raises(ValueError, match="unknown measure"):
        compare.read_reference(bad)
    pd.concat([reference, reference.iloc[:1]]).to_csv(bad, index=False)
    with pytest.raises(ValueError, match="duplicate reference rows"):
        compare.read_reference(bad)
    with pytest.raises(ValueError, match="at least one of"):
        compare.run_measurements()


def test_comparison_document_marks_flagged_rows_and_compiles(reference, run_tables, tmp_path):
    run_tables["bts"].loc[0, "statistic"] = 0.1
    result = compare.compare_to_paper(compare.run_measurements(**run_tables), reference)
    doc = compare.comparison_document(result)
    body = tabular_of(doc)
    assert body.count("\\textbf{differs}") == 1
    assert f"{result.n_agree} of {len(result.rows)} rows agree" in doc
    rows_at_floor = result.rows[(result.rows["measure"] == "ieat_p") & (result.rows["ours"] <= 1e-5)]
    assert (
        len(rows_at_floor) and (rows_at_floor["ours_floor"] == 1e-5).all()
    )  # the paper's p = 0.00001 rows: ours at the floor
    assert "$\\leq10^{-5}$" in body and "(ours written $\\leq$ is at its method's floor)" in doc
    empty = compare.comparison_document(
        compare.compare_to_paper(compare.run_measurements(**run_tables).iloc[:0], reference)
    )
    assert "No row of this run corresponds" in empty
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex not on PATH (install with .ci/install-latex.sh)")
    from test_tables import compile_latex

    compile_latex(doc, tmp_path, "comparison")
    compile_latex(empty, tmp_path, "empty")


def test_compare_paper_script_runs_standalone(reference, run_tables, tmp_path):
    paths = {}
    for name, frame in run_tables.items():
        paths[name] = tmp_path / f"{name}.csv"
        frame.to_csv(paths[name], index=False)
    spec = importlib.util.spec_from_file_location(
        "script_compare_paper", ROOT / "workflow" / "scripts" / "compare_paper.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    argv = [
        "--reference",
        str(REFERENCE),
        "--csv",
        str(tmp_path / "c.csv"),
        "--document",
        str(tmp_path / "c.tex"),
        "--settings",
        '{"alpha": 0.05, "tolerances": {"ieat_d": 0.05}, "targets": ["man", "woman"]}',
    ]
    argv += [a for name, path in paths.items() for a in (f"--{name}", str(path))]
    run(module.main, None, argv)
    written = pd.read_csv(tmp_path / "c.csv")
    assert len(written) == 24 + 48 + 16 + 24 + 18 + 16 and not written["flagged"].any()
    assert (tmp_path / "c.tex").read_text().startswith("\\documentclass")
