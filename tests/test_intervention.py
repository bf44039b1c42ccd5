"""The intervention comparison (biastransfer.stats.comparison's paired change of d, and
biastransfer.stats.intervention's summary): planted moves found, null data not, and the verdicts in words; the
intervention's config checks."""

import numpy as np
import pandas as pd
import pytest

from biastransfer.embeddings import EmbeddingTable
from biastransfer.stats.comparison import direction, paired_change_table
from biastransfer.stats.ieat import ieat
from biastransfer.workflow.config import intervention_problems
from biastransfer.workflow.rules.analysis import InterventionSummarySettings

TEST = [{"name": "planted", "X": "x", "Y": "y", "A": "a", "B": "b", "role": "planted"}]
DIMS, N = 8, 30


def network(rng, pull: float) -> EmbeddingTable:
    """An analysis set's embeddings: x images ``pull`` towards a's direction, y towards b's."""
    e = np.eye(DIMS)
    means = {"x": 0.3 * e[2] + pull * e[0], "y": 0.3 * e[2] + pull * e[1], "a": e[0], "b": e[1]}
    ids, classes, rows = [], [], []
    for cls, mean in means.items():
        for i in range(N):
            ids.append(f"{cls}{i}")
            classes.append(cls)
            rows.append(mean + 0.5 * rng.normal(size=DIMS))
    return EmbeddingTable(np.array(ids), np.array(classes), np.array(rows, dtype=np.float32))


def tables(untouched_pull, intervened_pull, seeds=(0, 1, 2)):
    rng = np.random.default_rng(7)
    return ({s: network(rng, untouched_pull) for s in seeds}, {s: network(rng, intervened_pull) for s in seeds})


def intervention_table(untouched, intervened, tests, **options):
    """The paired change of d as the intervention's comparison writes it (the arm named the intervention)."""
    return paired_change_table(untouched, intervened, tests, subject="the intervention", **options)


def test_a_planted_move_is_found_per_seed_and_over_seeds():
    u, i = tables(0.8, 0.0)
    out = intervention_table(u, i, TEST, bootstrap=400, seed=0, permutations=1000)
    per_seed = out[out["unit"] == "images"]
    assert len(per_seed) == 3 and (per_seed["ci_high"] < 0).all()
    first = u[0]
    d = ieat(*(first.of_class(c) for c in "xyab"), bootstrap=0).effect_size
    assert per_seed["d_against"].iloc[0] == pytest.approx(d, abs=1e-6)
    seeds = out[out["unit"] == "seeds"].iloc[0]
    assert seeds["n"] == 3 and seeds["ci_high"] < 0 and seeds["delta_d"] == pytest.approx(per_seed["delta_d"].mean())
    assert seeds["min_pvalue"] == 0.25  # 2 / 2^3, two-sided
    assert seeds["verdict"].startswith("the intervention lowered d")
    assert "cannot go below 0.25 with 3 seeds" in seeds["verdict"]


def test_no_move_on_null_data():
    u, i = tables(0.5, 0.5)
    out = intervention_table(u, i, TEST, bootstrap=400, seed=0, permutations=1000)
    assert (out["ci_low"] < 0).all() and (out["ci_high"] > 0).all()
    assert out["verdict"].str.startswith("no change of d shown").all()


def test_one_seed_is_not_tested_over_seeds_and_seeds_must_match():
    u, i = tables(0.8, 0.0, seeds=(4,))
    out = intervention_table(u, i, TEST, bootstrap=400)
    assert out[out["unit"] == "seeds"]["verdict"].iloc[0] == "not tested (fewer than 2 seeds)"
    with pytest.raises(ValueError, match=r"compared against \[4\] and the arm's seeds \[5\]"):
        intervention_table(u, {5: i[4]}, TEST, bootstrap=400)


@pytest.mark.parametrize(
    "low, high, word",
    [(-0.3, -0.1, "lowered"), (0.1, 0.2, "raised"), (-0.1, 0.2, "unchanged"), (np.nan, np.nan, "untested")],
)
def test_direction(low, high, word):
    assert direction(low, high) == word


def config(**spec):
    return {
        "models": {},
        "datasets": {
            "syn": {"kind": "synthetic"},
            "coco": {"kind": "coco"},
            "oi": {"kind": "openimages"},
            "other": {"kind": "intervention", "from": "syn", "objects": ["car"], "method": "subsample"},
            "fix": {"kind": "intervention", "objects": ["surfboard"], "method": "subsample"} | spec,
        },
    }


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"from": "nowhere"}, "datasets.fix.from: unknown dataset 'nowhere'"),
        ({"from": "other"}, "datasets.fix.from: 'other' (kind intervention): its training split has no per-image"),
        # Open Images' display names, with the close ones named
        (
            {"from": "oi", "objects": ["Car", "surf board"]},
            "'surf board' is not one of the Open Images V4 boxable "
            "classes (display names) (601 of them; close: Surfboard",
        ),
        (
            {"from": "syn", "objects": ["boat"]},
            "datasets.fix.objects: 'boat' is not one of the objects of the synthetic",
        ),
        # COCO's category names: ``stop sign``, not the analysis set's ``stop_sign``
        ({"from": "coco", "objects": ["car", "stop_sign"]}, "datasets.fix.objects: 'stop_sign' is not one of the COCO"),
    ],
)
def test_config_problems_are_named(spec, message):
    problems = intervention_problems(config(**spec))
    assert len(problems) == 1 and message in problems[0]
    assert intervention_problems(config(**{"from": "syn"})) == []
    assert intervention_problems(config(**{"from": "coco", "objects": ["refrigerator", "stop sign"]})) == []
    assert intervention_problems(config(**{"from": "oi", "objects": ["Refrigerator", "Stop sign"]})) == []


def test_an_intervention_on_a_table_needs_its_attribute_column_and_its_classes(tmp_path):
    table = tmp_path / "t.csv"
    pd.DataFrame({"path": ["a.png", "b.png"], "labels": ["cat|man", "dog"], "attribute": ["m", "w"]}).to_csv(
        table, index=False
    )
    cfg = config(**{"from": "own", "objects": ["cat"]})
    cfg["datasets"]["own"] = {"kind": "table", "table": str(table)}
    assert intervention_problems(cfg) == []
    cfg["datasets"]["fix"]["objects"] = ["cow"]
    assert intervention_problems(cfg) == [
        "datasets.fix.objects: 'cow' is not one of the classes of the table (cat, dog, man)"
    ]
    cfg["datasets"]["own"]["classes"] = ["cat", "cow"]
    assert intervention_problems(cfg) == []
    pd.DataFrame({"path": ["a.png"], "labels": ["cat"]}).to_csv(table, index=False)
    assert intervention_problems(cfg) == [
        f"datasets.fix.from: table {table} has no 'attribute' column (each training row's protected attribute, "
        "which an intervention rebalances and a mitigation arm's groups need)"
    ]


SPEC = {
    "kind": "synthetic",
    "size": 16,
    "n_train": 80,
    "n_val": 10,
    "label_groups": True,
    "p_person": 0.9,
    "p_object": 0.9,
    "cooccurrence": {"surfboard": 0.9},
    "p_occluded": 0.5,
    "seed": 3,
}


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """A small synthetic dataset's splits and its training split's attribute file."""
    from report_site import script

    root = tmp_path_factory.mktemp("syn")
    files = {k: str(root / f"{k}.parquet") for k in ("train", "val", "attributes")}
    script("synthetic_dataset").main(SPEC, str(root / "images"), files["train"], files["val"], synthetic="syn")
    script("synthetic_train_attributes").main(SPEC, files["train"], files["attributes"], synthetic="syn")
    return root, files


def test_the_training_attribute_is_the_drawn_figure(drawn, tmp_path):
    from report_site import script

    from biastransfer.data.attributes import read_attributes
    from biastransfer.data.splits import read_split
    from biastransfer.hashing import file_digest

    _, files = drawn
    split, attrs = read_split(files["train"]), read_attributes(files["attributes"])
    assert attrs.split == "train" and attrs.split_sha256 == file_digest(files["train"])
    figures = [next((g for g in ("person_a", "person_b") if g in labels), None) for labels in split.frame["labels"]]
    assert list(attrs.of(split.frame["image_id"].tolist(), where="t")) == figures  # labelled groups: the figure
    with pytest.raises(ValueError, match="image 'syn-train-0000"):
        script("synthetic_train_attributes").main(SPEC | {"seed": 4}, files["train"], str(tmp_path / "a.parquet"))


def intervene_fix(files: dict, spec: dict, out: dict) -> None:
    """The intervention job's script as its rule runs it: dataset ``fix`` by the intervention ``spec`` (all but its
    kind) from ``files`` (train, attributes, val) into ``out`` (train, val, weights, and the co-occurrence table)."""
    from report_site import script

    script("intervention").main(
        files["train"],
        files["attributes"],
        files["val"],
        {"kind": "intervention", **spec},
        "fix",
        out["train"],
        out["val"],
        out["weights"],
        out["table"],
    )


@pytest.mark.parametrize("target, method", [("independent", "subsample"), ("reversed", "reweight")])
def test_the_intervention_scripts_write_its_splits_weights_and_table(drawn, tmp_path, target, method):
    import pandas as pd

    from biastransfer.data.rebalance import read_weights
    from biastransfer.data.splits import read_split
    from biastransfer.hashing import file_digest

    _, files = drawn
    out = {k: str(tmp_path / f"{k}.parquet") for k in ("train", "val", "weights")} | {"table": str(tmp_path / "c.csv")}
    intervene_fix(files, {"from": "syn", "objects": ["surfboard"], "target": target, "method": method, "seed": 1}, out)
    source, train, val = read_split(files["train"]), read_split(out["train"]), read_split(out["val"])
    assert train.dataset == val.dataset == "fix" and train.classes == source.classes
    assert val.frame.equals(read_split(files["val"]).frame)
    weights = read_weights(out["weights"], train.frame["image_id"].tolist(), file_digest(out["train"]))
    table = pd.read_csv(tmp_path / "c.csv")
    after = table[table["when"] == "after"].set_index("attribute")
    if method == "subsample":
        assert len(train.frame) < len(source.frame) and (weights == 1).all()
        assert abs(after.loc["person_a", "images"] - after["target"].iloc[0] * after["images"].sum()) <= 1
    else:
        assert train.frame.equals(source.frame) and weights.sum() == pytest.approx(len(source.frame))
        before = table[table["when"] == "before"].set_index("attribute")["share"]
        assert after.loc["person_a", "share"] == pytest.approx(before["person_b"])  # the skew mirrored
    with pytest.raises(ValueError, match="weights of another version"):
        read_weights(out["weights"], train.frame["image_id"].tolist(), "0" * 64)


def test_an_intervention_on_a_table_that_changes_nothing_says_so(tmp_path, caplog):
    """A table of 100 rows, 80 of them training rows with surfboards 20 : 20 and cars 20 : 20 beside man and
    woman: independent keeps 80 of 80 images. The job's log warns, its co-occurrence table records it, and the
    summary, its table and the findings say that the intervention changed nothing."""
    import logging

    from PIL import Image
    from report_site import script

    from biastransfer.data.splits import read_split, write_split
    from biastransfer.data.user import table_splits
    from biastransfer.report.findings.intervention import describe_interventions
    from biastransfer.report.intervention_report import intervention_latex

    rows = []
    for i in range(100):
        Image.new("RGB", (8, 8), (i, 0, 0)).save(tmp_path / f"{i}.png")
        rows.append(
            (f"{i}.png", "surfboard" if i % 4 < 2 else "car", "train" if i < 80 else "val", "man" if i % 2 else "woman")
        )
    pd.DataFrame(rows, columns=["path", "labels", "split", "attribute"]).to_csv(tmp_path / "t.csv", index=False)
    own = {"kind": "table", "table": str(tmp_path / "t.csv"), "attributes": ["man", "woman"]}
    files = {k: str(tmp_path / f"{k}.parquet") for k in ("train", "val", "attributes")}
    out = {k: str(tmp_path / f"out_{k}.parquet") for k in ("train", "val", "weights")}
    train, val = table_splits(own, "own")
    write_split(files["train"], train)
    write_split(files["val"], val)
    script("real_attributes").main(own, files["train"], files["attributes"])
    cooccurrence = tmp_path / "interventions" / "fix" / "cooccurrence.csv"
    cooccurrence.parent.mkdir(parents=True)
    spec = {"from": "own", "objects": ["surfboard"], "target": "independent", "method": "subsample", "seed": 0}
    with caplog.at_level(logging.WARNING):
        intervene_fix(files, spec, out | {"table": str(cooccurrence)})
    assert len(read_split(out["train"]).frame) == 80
    assert (
        "fix changed nothing in the training split of own (80 of 80 images kept, every weight 1: each object "
        "is already within one image of its target)"
    ) in caplog.text
    table = pd.read_csv(cooccurrence)
    assert set(zip(table["split_images"], table["split_kept"], table["changed"])) == {(80, 80, False)}
    summary = tmp_path / "intervention.csv"
    settings = InterventionSummarySettings(sources=[["fix", "own"]])
    script("intervention_summary").main([], settings, str(summary), [str(cooccurrence)])
    frame = pd.read_csv(summary, keep_default_na=False, na_values=[""])
    said = (
        "the intervention changed nothing in the training split (80 of 80 images kept, every weight 1: each "
        "object was already at its target), so its networks learn from the same data as the untouched ones and "
        "any difference between them is not the intervention's"
    )
    assert frame["level"].tolist() == ["data"] and frame["verdict"].tolist() == [said]
    assert f"- Training split: {said}." in describe_interventions(frame)
    assert f"Training split: {said}." in intervention_latex(frame, "fix")


def amplification_rows():
    """Two finetuned networks' directional amplification on the same test split: untouched and intervened."""
    import pandas as pd

    base = {
        "network": "finetuned",
        "model": "m",
        "seed": "pooled",
        "measure": "directional",
        "threshold": "0.5",
        "level": 0.95,
        "replicates": 100,
        "n_images": 50,
        "n_excluded": 3,
        "images_per_attribute": "a: 25",
    }
    return pd.DataFrame(
        [
            base | {"dataset": "syn", "estimate": 0.05, "ci_low": 0.02, "ci_high": 0.08},
            base | {"dataset": "fix", "estimate": 0.0, "ci_low": -0.01, "ci_high": 0.01},
            base | {"dataset": "fix", "network": "scratch", "estimate": 9.0, "ci_low": 8.0, "ci_high": 10.0},
            *(
                base
                | {
                    "dataset": d,
                    "measure": "leakage_embedding",
                    "threshold": None,
                    "estimate": e,
                    "ci_low": e - 0.1,
                    "ci_high": e + 0.1,
                }
                for d, e in (("syn", 0.7), ("fix", 0.6))
            ),
        ]
    )


def test_prediction_measures_side_by_side_and_the_report():
    import pandas as pd

    from biastransfer.report.findings.intervention import describe_interventions
    from biastransfer.report.intervention_report import intervention_frame, intervention_latex
    from biastransfer.stats.intervention import SUMMARY_COLUMNS, embedding_rows, prediction_rows

    both = prediction_rows(amplification_rows(), "fix", "syn")
    assert both["name"].tolist() == ["directional", "leakage_embedding"]  # the scratch network is no intervention
    assert (
        both["threshold"].tolist()[1] == ""
        and both["verdict"].tolist()[1] == "no difference shown (the intervals overlap)"
    )
    rows = both[both["name"] == "directional"]
    row = rows.iloc[0]
    assert (row["untouched"], row["intervened"], row["delta"]) == (0.05, 0.0, -0.05)
    assert row["verdict"] == (
        "lower after the intervention (the intervals do not overlap); the interval "
        "contains 0 after the intervention only"
    )
    u, i = tables(0.8, 0.0)
    emb = embedding_rows(intervention_table(u, i, TEST, bootstrap=200, permutations=1000), "fix", "syn", "set", "m")
    summary = pd.concat([emb, rows], ignore_index=True)
    assert list(summary.columns) == list(SUMMARY_COLUMNS)
    assert len(intervention_frame(summary, "fix")) == 5
    latex = intervention_latex(summary, "fix")
    assert "iEAT planted on set" in latex and "directional at 0.5" in latex and "seeds as units" in latex
    with pytest.raises(ValueError, match="no rows for intervention 'other'"):
        intervention_frame(summary, "other")
    text = "\n".join(describe_interventions(summary))
    assert "Intervention **fix** against the untouched finetuning on **syn**" in text
    assert "m, iEAT planted (planted) on set" in text and "the intervention lowered d" in text
    assert "BiasAmp A->T at threshold 0.5 (seeds pooled): 0.050 [0.020, 0.080] untouched" in text
    assert describe_interventions(None) == []
