"""From embeddings to predictions: the synthetic test split and its attribute file, the predictions format,
the predict and amplification scripts' cores, the summary's table and findings (no Snakemake here)."""

import logging
import shutil
import tracemalloc
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from report_site import script as _script

from biastransfer.data import synthetic
from biastransfer.data.attributes import Attributes, read_attributes, write_attributes
from biastransfer.data.leakage import check_no_leakage
from biastransfer.data.splits import Split, read_split, write_split
from biastransfer.embeddings import read_embedding_rows, read_embeddings, write_embeddings
from biastransfer.hashing import file_digest
from biastransfer.predictions import read_predictions, write_predictions
from biastransfer.report.amplification_report import amplification_frame, amplification_latex
from biastransfer.report.findings.amplification import describe_amplification, verdict
from biastransfer.stats.amplification import ABSENT
from biastransfer.stats.prediction_bias import Evaluation, Settings, embedding_leakage, prediction_bias
from biastransfer.workflow.rules.data import SyntheticTestSplitSettings
from biastransfer.workflow.rules.inference import PredictSettings
from biastransfer.workflow.rules.predictions import AmplificationSettings

ROOT = Path(__file__).resolve().parents[1]
SPEC = {
    "kind": "synthetic",
    "size": 24,
    "n_train": 30,
    "n_val": 10,
    "n_test": 80,
    "label_groups": False,
    "p_person": 0.8,
    "p_object": 0.85,
    "cooccurrence": {},
    "p_occluded": 0,
    "seed": 5,
}
TASKS = ("car", "refrigerator", "stop_sign", "surfboard")


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """A small synthetic dataset's train/val splits, its test split and attribute file."""
    root = tmp_path_factory.mktemp("syn")
    files = {k: str(root / f"{k}.parquet") for k in ("train", "val", "test", "attributes")}
    _script("synthetic_dataset").main(
        {k: v for k, v in SPEC.items() if k != "n_test"},
        str(root / "images"),
        files["train"],
        files["val"],
        synthetic="syn",
    )
    _script("synthetic_test_split").main(
        SyntheticTestSplitSettings(spec=SPEC),
        files["train"],
        files["val"],
        str(root / "test_images"),
        files["test"],
        files["attributes"],
        synthetic="syn",
    )
    return root, files


def test_the_test_split_is_fresh_scenes_with_their_drawn_figure(drawn):
    root, files = drawn
    test, attrs = read_split(files["test"]), read_attributes(files["attributes"])
    assert test.name == "test" and len(test.frame) == SPEC["n_test"] and test.classes == synthetic.class_list(False)
    train_ids = set(read_split(files["train"]).frame["image_id"]) | set(read_split(files["val"]).frame["image_id"])
    assert not train_ids & set(test.frame["image_id"])
    train_hashes = {file_digest(p) for f in ("train", "val") for p in read_split(files[f]).frame["path"]}
    assert not train_hashes & {file_digest(p) for p in test.frame["path"]}
    assert attrs.split == "test" and attrs.split_sha256 == file_digest(files["test"])
    assert attrs.attributes == ("person_a", "person_b") and attrs.attribute_classes == ("person",)
    # the figure is the attribute: an image labelled person has one, any other has none (and no source)
    merged = test.frame.merge(attrs.frame, on="image_id")
    has_person = merged["labels"].map(lambda labels: "person" in labels)
    assert (merged["attribute"].notna() == has_person).all() and (merged["source"].notna() == has_person).all()
    counts = attrs.counts()
    assert counts[None] == (~has_person).sum() > 0 and counts["person_a"] > 5 and counts["person_b"] > 5


def test_the_test_split_has_its_own_seed_stream(drawn, tmp_path):
    """Redrawn from the same seed it is the same; its scenes are not the train split's first scenes."""
    _, files = drawn
    again = _script("synthetic_test_split").draw_test_split(SPEC, str(tmp_path / "again"), "syn")[1]
    first = read_split(files["test"]).frame
    assert again["labels"].tolist() == first["labels"].tolist()
    assert [file_digest(p) for p in again["path"]] == [file_digest(p) for p in first["path"]]
    train = synthetic.SceneDistribution(0.8, 0.85, {}, 0).sample(SPEC["n_test"], np.random.default_rng(SPEC["seed"]))
    assert [s.labels(False) for s in train] != first["labels"].tolist()


def test_a_test_image_in_a_training_split_is_an_error():
    frame = pd.DataFrame({"image_id": ["t1", "t2"], "sha256": ["aa", "bb"]})
    with pytest.raises(
        ValueError, match=r"(?s)test images leak.*split 'train': 1 image\(s\) with a test image's sha256"
    ):
        check_no_leakage(frame, {"train": pd.DataFrame({"image_id": ["x"], "sha256": ["bb"]})}, what="test")


def _attrs(values, attributes=("person_a", "person_b")):
    ids = [f"i{k}" for k in range(len(values))]
    frame = pd.DataFrame({"image_id": ids, "attribute": values, "source": [v and "drawn" for v in values]})
    return Attributes("d", "test", "0" * 64, attributes, ("person",), frame)


def test_attribute_files_are_checked(tmp_path):
    path = tmp_path / "a.parquet"
    write_attributes(path, _attrs(["person_a", None, "person_b"]))
    back = read_attributes(path)
    assert (
        back.of(["i0", "i1", "i2"], where="w").tolist() == ["person_a", None, "person_b"] and back.counts()[None] == 1
    )
    with pytest.raises(ValueError, match=r"image 'i1' has attribute 'woman', not one of person_a, person_b"):
        write_attributes(path, _attrs(["person_a", "woman", "person_b"]))
    with pytest.raises(ValueError, match=r"no image has attribute 'person_b'"):
        write_attributes(path, _attrs(["person_a", None]))
    with pytest.raises(ValueError, match=r"where.parquet: image 'other-7' has no row in the attribute file of d/test"):
        back.of(["i0", "other-7"], where="where.parquet")


def test_prediction_files_round_trip_and_name_what_is_wrong(tmp_path):
    path = tmp_path / "p.parquet"
    scores = np.array([[0.1, 0.9], [0.5, 0.0]])
    write_predictions(path, ["a", "b"], ["car", "person"], scores, {"split": "test", "stage": "ft-d-seed0"})
    table = read_predictions(path)
    assert table.classes == ("car", "person") and table.metadata["stage"] == "ft-d-seed0"
    np.testing.assert_allclose(table.scores, scores, rtol=1e-6)
    with pytest.raises(ValueError, match=r"p.parquet: the network predicts no class 'surfboard'"):
        table.columns(["car", "surfboard"], where=str(path))
    with pytest.raises(ValueError, match=r"score 1.5 of image 'b', class 'person' is not in \[0, 1\]"):
        write_predictions(path, ["a", "b"], ["car", "person"], [[0.1, 0.9], [0.5, 1.5]], {})
    np.testing.assert_allclose(
        table.columns(["person", "car"], where="p", rows=[1, 0, 1]), [[0.0, 0.5], [0.9, 0.1], [0.0, 0.5]]
    )
    np.testing.assert_allclose(table.columns(["person"], where="p"), [[0.9], [0.0]])


def test_an_evaluation_reads_only_the_embedding_rows_it_needs(tmp_path):
    """read_embedding_rows gives the rows of the ids asked for, in their order, from files of several batches
    (fixed or variable-length lists), without the whole matrix in memory; a missing id or a non-finite value
    of a row it reads is named."""
    rng = np.random.default_rng(0)
    ids = [f"i{k}" for k in range(9000)]  # three batches of embeddings._BATCH_ROWS
    emb = rng.standard_normal((len(ids), 256)).astype(np.float32)
    path = tmp_path / "e.parquet"
    write_embeddings(path, ids, ["test"] * len(ids), emb, {"stage": "ft-d-seed0"})
    wanted = ["i8999", "i3", "i4100", "i0"]
    np.testing.assert_array_equal(read_embedding_rows(path, wanted), emb[[8999, 3, 4100, 0]])
    import pyarrow as pa
    import pyarrow.parquet as pq

    lists = tmp_path / "lists.parquet"
    pq.write_table(
        pa.table({"image_id": ids, "class": ["t"] * len(ids), "embedding": emb.astype(np.float64).tolist()}), lists
    )
    np.testing.assert_array_equal(read_embedding_rows(lists, wanted), emb[[8999, 3, 4100, 0]])
    tracemalloc.start()
    read_embedding_rows(path, ["i5"])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < emb.nbytes / 4, f"{peak} bytes traced reading one row of a {emb.nbytes}-byte matrix"
    with pytest.raises(ValueError, match=r"e.parquet: no embedding of image 'nope'"):
        read_embedding_rows(path, ["i1", "nope"])
    emb[4100, 7] = np.inf
    pq.write_table(pa.table({"image_id": ids, "class": ["t"] * len(ids), "embedding": emb.tolist()}), lists)
    with pytest.raises(ValueError, match=r"lists.parquet: non-finite embeddings for images i4100"):
        read_embedding_rows(lists, wanted)
    np.testing.assert_array_equal(read_embedding_rows(lists, ["i3"]), emb[[3]])


def test_predict_refuses_a_network_that_lacks_a_class_of_the_split():
    check = _script("predict").check_classes
    check(("car", "person"), ["car", "person", "extra"], "w.safetensors")
    with pytest.raises(ValueError, match=r"w.safetensors: the network has no output for class 'person'"):
        check(("car", "person"), ["car", "person_a"], "w.safetensors")


def _evaluation(n=400, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    truth = (rng.random((n, len(TASKS))) < np.where(a[:, None] == 0, 0.6, 0.2)).astype(np.int8)
    return Evaluation("d", ("person_a", "person_b"), TASKS, np.eye(2, dtype=np.int8)[a], truth, 7), a


SETTINGS = Settings(bootstrap=200, folds=3)


def _towards(ev, a, group):
    """Scores that rank every image of ``group`` above every other image, true positives first within each."""
    return 0.3 * ev.truth + 0.5 * (a[:, None] == group) + 0.1


def test_predictions_equal_to_the_truth_amplify_nothing_and_a_biased_network_amplifies():
    ev, a = _evaluation()
    exact = {0: ev.truth * 0.8 + 0.1, 1: ev.truth * 0.7 + 0.15}
    # pushes every object towards person_a, with which the ground truth already pairs it
    biased = {0: _towards(ev, a, 0)}
    summary, terms = prediction_bias(ev, {("finetuned", "m"): exact, ("scratch", "m"): biased}, SETTINGS)
    fine = summary[(summary["network"] == "finetuned") & summary["measure"].isin(["directional", "zhao"])]
    assert set(fine["seed"]) == {"0", "1", "pooled"} and set(fine["threshold"]) == {"0.5", "base_rate"}
    assert np.allclose(fine["estimate"], 0) and (fine["n_images"] == 400).all() and (fine["n_excluded"] == 7).all()
    amp = summary[(summary["network"] == "scratch") & (summary["measure"] == "directional")]
    assert (amp["estimate"] > 0).all() and (amp["ci_low"] > 0).all() and set(amp["seed"]) == {"0"}
    leak = summary.set_index(["network", "seed", "measure"])
    assert leak.loc[("dataset", "", "leakage_dataset"), "estimate"] > 0.6  # the labels alone give a away
    pooled = leak.loc[("finetuned", "pooled", "leakage_model")]
    assert pooled["ci_low"] <= pooled["estimate"] <= pooled["ci_high"]
    assert set(terms["attribute"]) == {"person_a", "person_b"} and set(terms["task"]) == set(TASKS)
    # the shift towards an attribute: every object moves towards person_a, none moves for predictions = truth
    shifted = terms[(terms["network"] == "scratch") & (terms["measure"] == "directional")]
    towards_a = shifted[shifted["attribute"] == "person_a"]
    assert (towards_a["shift_low"] > 0).all() and (
        shifted.loc[shifted["attribute"] == "person_b", "shift_high"] < 0
    ).all()
    still = terms[(terms["network"] == "finetuned") & (terms["measure"] == "directional")]
    assert np.allclose(still["shift"], 0) and terms.loc[terms["measure"] == "zhao", "shift"].isna().all()
    assert (
        terms["n_attribute"] == terms["attribute"].map({"person_a": (a == 0).sum(), "person_b": (a == 1).sum()})
    ).all()


def _write_inputs(tmp_path, ev, a, scores, *, classes=TASKS, split_sha=None, embedding=None):
    """A test split of ``ev`` (and one image without a figure), its attribute file, and one network's
    predictions with its ``embedding`` (n x d; default: 3 columns that carry the attribute) beside them."""
    ids = [f"d-test-{i:06d}" for i in range(len(a))] + ["d-test-nofigure"]
    labels = [[t for t, on in zip(TASKS, row) if on] + ["person"] for row in ev.truth] + [["car"]]
    split = tmp_path / "test.parquet"
    write_split(
        split, Split("d", "test", (*TASKS, "person"), pd.DataFrame({"image_id": ids, "path": ids, "labels": labels}))
    )
    values = [("person_a", "person_b")[k] for k in a] + [None]
    attrs = Attributes(
        "d",
        "test",
        file_digest(split),
        ("person_a", "person_b"),
        ("person",),
        pd.DataFrame({"image_id": ids, "attribute": values, "source": [v and "drawn" for v in values]}),
    )
    write_attributes(tmp_path / "attrs.parquet", attrs)
    pred = tmp_path / "ft-d-seed0.parquet"
    full = np.vstack([scores, np.full((1, len(classes)), 0.5)])
    meta = {"split": "test", "split_sha256": split_sha or file_digest(split), "stage": "ft-d-seed0", "model": "m"}
    write_predictions(pred, ids, classes, full, meta)
    emb = tmp_path / "ft-d-seed0.embedding.parquet"
    features = a[:, None] + np.random.default_rng(1).normal(0, 0.7, (len(a), 3)) if embedding is None else embedding
    write_embeddings(emb, ids, ["test"] * len(ids), np.vstack([features, np.zeros((1, features.shape[1]))]), meta)
    return split, tmp_path / "attrs.parquet", pred, emb


def _write_pretrained(tmp_path, a, split, noise: float = 3.0, **meta) -> str:
    """The pretrained network's embedding of the split of :func:`_write_inputs` (rule predict's): 3 columns that
    carry the attribute under ``noise``, and a row for the image without a figure."""
    path = tmp_path / "pretrained-d.embedding.parquet"
    ids = [f"d-test-{i:06d}" for i in range(len(a))] + ["d-test-nofigure"]
    features = a[:, None] + np.random.default_rng(5).normal(0, noise, (len(a), 3))
    meta = {
        "split": "test",
        "split_sha256": file_digest(split),
        "stage": "pretrained",
        "model": "m",
        "dataset": "d",
    } | meta
    write_embeddings(path, ids, ["test"] * len(ids), np.vstack([features, np.zeros((1, 3))]), meta)
    return str(path)


def test_the_amplification_script_writes_every_measure_and_checks_its_inputs(tmp_path):
    ev, a = _evaluation(n=120)
    split, attrs, pred, emb = _write_inputs(tmp_path, ev, a, ev.truth * 0.9)
    main = _script("amplification").main
    settings = AmplificationSettings(
        threshold=0.5, bootstrap=100, ci_level=0.95, folds=3, seed=0, embedding_components=256
    )
    baseline = _write_pretrained(tmp_path, a, split)
    out = {"summary": str(tmp_path / "s.csv"), "terms": str(tmp_path / "t.csv"), "settings": settings}
    out |= {"pretrained_embeddings": [baseline]}
    main([str(split)], [str(attrs)], [str(pred)], [str(emb)], **out)
    summary = pd.read_csv(out["summary"], keep_default_na=False)
    # the pretrained network has no head for the tasks: its embedding's leakage is its only measure
    (before,) = summary[summary["network"] == "pretrained"].itertuples()
    assert (before.model, before.seed, before.measure, before.threshold) == ("m", "", "leakage_embedding", "")
    assert (
        before.estimate < summary.query("network == 'finetuned' and measure == 'leakage_embedding'")["estimate"].iloc[0]
    )
    assert set(summary["measure"]) == {
        "directional",
        "zhao",
        "leakage_model",
        "leakage_dataset_matched",
        "leakage_amplification",
        "leakage_embedding",
        "leakage_dataset",
    }
    leak = summary[(summary["measure"] == "leakage_embedding") & (summary["network"] == "finetuned")].iloc[0]
    assert (leak["seed"], leak["threshold"]) == ("0", "") and leak["ci_low"] > 0.5
    assert set(summary["n_images"]) == {120} and set(summary["n_excluded"]) == {1}
    assert summary["images_per_attribute"].iloc[0] == f"person_a={(a == 0).sum()}; person_b={(a == 1).sum()}"
    assert (pd.read_csv(out["terms"])["task"].isin(TASKS)).all()
    # a prediction file of another split, a class the network lacks, an image without an attribute row
    (tmp_path / "o").mkdir()
    _, _, other, other_emb = _write_inputs(tmp_path / "o", ev, a, ev.truth * 0.9, split_sha="f" * 64)
    with pytest.raises(
        ValueError, match=r"ft-d-seed0.parquet: predictions of split None/test .*not of the test split of d"
    ):
        main([str(split)], [str(attrs)], [str(other)], [str(emb)], **out)
    # an embedding of another split, of another network, with its images in another order
    with pytest.raises(
        ValueError,
        match=r"o/ft-d-seed0.embedding.parquet: not the embedding of the network and "
        r"split of .*ft-d-seed0.parquet \(split_sha256 'ffff",
    ):
        main([str(split)], [str(attrs)], [str(pred)], [str(other_emb)], **out)
    table = read_embeddings(emb)
    write_embeddings(
        other_emb, table.image_ids, table.classes, table.embeddings, table.metadata | {"stage": "ft-d-seed1"}
    )
    with pytest.raises(
        ValueError, match=r"not the embedding of the network .*\(stage 'ft-d-seed1', not 'ft-d-seed0'\)"
    ):
        main([str(split)], [str(attrs)], [str(pred)], [str(other_emb)], **out)
    order = np.r_[1, 0, 2 : len(table.image_ids)]
    write_embeddings(other_emb, table.image_ids[order], table.classes, table.embeddings[order], table.metadata)
    with pytest.raises(
        ValueError,
        match=r"ft-d-seed0.embedding.parquet: row 0 is 'd-test-000001' but .*ft-d-seed0"
        r".parquet has 'd-test-000000' there",
    ):
        main([str(split)], [str(attrs)], [str(pred)], [str(other_emb)], **out)
    with pytest.raises(ValueError, match=r"1 prediction files but 0 embedding files"):
        main([str(split)], [str(attrs)], [str(pred)], [], **out)
    # a pretrained embedding of another network or split, or without an image of the split
    for meta, message in (
        ({"stage": "ft-d-seed0"}, r"an embedding of stage 'ft-d-seed0', not of the pretrained network"),
        (
            {"split_sha256": "f" * 64},
            r"an embedding of split d/test \(sha256 ffffffffffff\), not of a test split given",
        ),
    ):
        (tmp_path / "p").mkdir(exist_ok=True)
        wrong = _write_pretrained(tmp_path / "p", a, split, **meta)
        with pytest.raises(ValueError, match=r"pretrained-d.embedding.parquet: " + message):
            main([str(split)], [str(attrs)], [str(pred)], [str(emb)], **out | {"pretrained_embeddings": [wrong]})
    table = read_embeddings(baseline)
    write_embeddings(wrong, table.image_ids[1:], table.classes[1:], table.embeddings[1:], table.metadata)
    with pytest.raises(ValueError, match=r"pretrained-d.embedding.parquet: no row for image 'd-test-000000' of d/test"):
        main([str(split)], [str(attrs)], [str(pred)], [str(emb)], **out | {"pretrained_embeddings": [wrong]})
    (tmp_path / "c").mkdir()
    _, _, lacking, lacking_emb = _write_inputs(tmp_path / "c", ev, a, ev.truth[:, :3] * 0.9, classes=TASKS[:3])
    lacking_meta = read_predictions(lacking).metadata | {"split_sha256": file_digest(split)}
    table = read_predictions(lacking)
    write_predictions(lacking, table.image_ids, table.classes, table.scores, lacking_meta)
    with pytest.raises(ValueError, match=r"the network predicts no class 'surfboard'"):
        main([str(split)], [str(attrs)], [str(lacking)], [str(lacking_emb)], **out)
    frame = read_attributes(attrs)
    short = Attributes("d", "test", frame.split_sha256, frame.attributes, frame.attribute_classes, frame.frame.iloc[1:])
    write_attributes(attrs, short)
    with pytest.raises(ValueError, match=r"test.parquet: image 'd-test-000000' has no row in the attribute file"):
        main([str(split)], [str(attrs)], [str(pred)], [str(emb)], **out)


def test_a_class_absent_from_the_test_split_is_left_out_with_its_reason_a_warning_and_a_finding(tmp_path, caplog):
    """No test image shows stop_sign, which the network predicts for every person_a image: each directional
    estimate is the one over the three other classes (the same images, the same draws: the same interval),
    the terms say why stop_sign is out, the job's log warns and the findings say it."""
    ev, a = _evaluation(n=120)
    truth = ev.truth.copy()
    truth[:, TASKS.index("stop_sign")] = 0
    ev = replace(ev, truth=truth)
    split, attrs, pred, emb = _write_inputs(tmp_path, ev, a, _towards(ev, a, 0))
    out = {"summary": str(tmp_path / "s.csv"), "terms": str(tmp_path / "t.csv")}
    out |= {"pretrained_embeddings": [_write_pretrained(tmp_path, a, split)]}
    with caplog.at_level(logging.WARNING):
        settings = AmplificationSettings(
            threshold=0.5, bootstrap=100, ci_level=0.95, folds=3, seed=0, embedding_components=256
        )
        _script("amplification").main([str(split)], [str(attrs)], [str(pred)], [str(emb)], settings=settings, **out)
    assert "test split of d: class 'stop_sign' is left out of the bias amplification means" in caplog.text
    summary = pd.read_csv(out["summary"], keep_default_na=False, dtype={"seed": str})
    terms = pd.read_csv(out["terms"], keep_default_na=False, na_values=[""])
    present = [t for t in TASKS if t != "stop_sign"]
    three = replace(ev, tasks=tuple(present), truth=truth[:, [TASKS.index(t) for t in present]])
    scores = _towards(ev, a, 0)[:, [TASKS.index(t) for t in present]]
    expected, _ = prediction_bias(three, {("finetuned", "m"): {0: scores}}, Settings(bootstrap=100, folds=3))
    got_rows, want_rows = (f.set_index(["measure", "threshold"]) for f in (summary, expected))
    for key in [("directional", "0.5"), ("directional", "base_rate")]:
        got, want = got_rows.loc[key], want_rows.loc[key]
        assert (got["estimate"], got["ci_low"], got["ci_high"]) == pytest.approx(
            (want["estimate"], want["ci_low"], want["ci_high"])
        )
    absent = terms[terms["task"] == "stop_sign"]
    assert absent["term"].isna().all() and (absent["excluded"] == ABSENT).all()
    assert terms.loc[terms["task"] != "stop_sign", "excluded"].isna().all()
    text = "\n".join(describe_amplification(summary, terms))
    assert (
        "d's test split has no image of stop_sign (among its images with an attribute): its amplification terms "
        "have no direction, so every BiasAmp A->T below is the mean over the other 3 of its 4 classes" in text
    )


def test_every_prediction_file_is_checked_first_and_each_family_read_when_used(tmp_path):
    """scores_by_network checks every file before it returns (a file of another split is named then), and
    keeps no scores: each family's file is read when it is asked for (one family in memory at a time)."""
    from biastransfer.evaluation import network_scores, read_evaluations, scores_by_network

    ev, a = _evaluation(n=60)
    split, attrs, pred, _ = _write_inputs(tmp_path, ev, a, ev.truth * 0.8)
    (tmp_path / "o").mkdir()
    _, _, other, _ = _write_inputs(tmp_path / "o", ev, a, ev.truth * 0.8, split_sha="f" * 64)
    datasets = read_evaluations([str(split)], [str(attrs)])
    with pytest.raises(ValueError, match=r"o/ft-d-seed0.parquet: predictions of split None/test"):
        scores_by_network(datasets, [str(pred), str(other)])
    scores = scores_by_network(datasets, [str(pred)])["d"]
    assert list(scores) == [("finetuned", "m")] and len(scores) == 1
    np.testing.assert_array_equal(scores["finetuned", "m"][0], network_scores(str(pred), *datasets["d"]))
    pred.unlink()
    with pytest.raises(FileNotFoundError):
        scores["finetuned", "m"]


def test_embedding_leakage_rows_per_seed_and_pooled_follow_what_the_embedding_carries():
    ev, a = _evaluation(n=200)
    rng = np.random.default_rng(2)
    carries = {s: a[:, None] + rng.normal(0, 0.8, (200, 4)) for s in (0, 1)}
    blind = {0: rng.normal(0, 1, (200, 4))}
    embedded = {
        ("finetuned", "m"): {s: embedding_leakage(ev, f, SETTINGS) for s, f in carries.items()},
        ("scratch", "m"): {s: embedding_leakage(ev, f, SETTINGS) for s, f in blind.items()},
    }
    networks = {("finetuned", "m"): {0: ev.truth * 0.9, 1: ev.truth * 0.8}, ("scratch", "m"): {0: ev.truth * 0.9}}
    summary, _ = prediction_bias(ev, networks, SETTINGS, embedded)
    rows = summary[summary["measure"] == "leakage_embedding"].set_index(["network", "seed"])
    assert sorted(rows.index) == [("finetuned", "0"), ("finetuned", "1"), ("finetuned", "pooled"), ("scratch", "0")]
    assert (rows["threshold"] == "").all() and (rows.loc["finetuned", "ci_low"] > 0.5).all()
    assert rows.loc[("finetuned", "pooled"), "estimate"] == pytest.approx(
        np.mean([embedded[("finetuned", "m")][s].estimate for s in (0, 1)])
    )
    assert rows.loc[("scratch", "0"), "ci_low"] <= 0.5 <= rows.loc[("scratch", "0"), "ci_high"]
    with pytest.raises(ValueError, match=r"finetuned m: embeddings of seeds \[0\] but predictions of seeds \[0, 1\]"):
        prediction_bias(ev, networks, SETTINGS, {("finetuned", "m"): {0: embedded[("finetuned", "m")][0]}})


def test_the_table_and_the_findings_follow_the_intervals():
    ev, a = _evaluation(n=200)
    biased, against = {0: _towards(ev, a, 0)}, {0: _towards(ev, a, 1)}
    rng = np.random.default_rng(3)
    embedded = {
        ("finetuned", "m"): {0: embedding_leakage(ev, a[:, None] + rng.normal(0, 0.5, (200, 3)), SETTINGS)},
        ("scratch", "m"): {0: embedding_leakage(ev, rng.normal(0, 1, (200, 3)), SETTINGS)},
    }
    pretrained = {"m": embedding_leakage(ev, a[:, None] + rng.normal(0, 2, (200, 3)), SETTINGS)}
    summary, terms = prediction_bias(
        ev, {("finetuned", "m"): biased, ("scratch", "m"): against}, SETTINGS, embedded, pretrained
    )
    frame = amplification_frame(summary, "d")
    assert len(frame) == len(summary) - 1 and "pretrained" not in set(frame["network"])  # beside, not a row
    pre = summary[summary["network"] == "pretrained"].iloc[0]
    beside = frame.dropna(subset=["pretrained"])
    assert list(zip(beside["network"], beside["measure"])) == [("finetuned", "leakage_embedding")]
    assert beside[["pretrained", "pretrained_low", "pretrained_high"]].iloc[0].tolist() == [
        pre["estimate"],
        pre["ci_low"],
        pre["ci_high"],
    ]
    latex = amplification_latex(summary, "d")
    assert "BiasAmp" in latex and "base rate" in latex and "leakage (ground truth)" in latex
    fine = summary[(summary["measure"] == "leakage_embedding") & (summary["network"] == "finetuned")].iloc[0]
    cell = f"${fine['estimate']:.3f}$ $[{fine['ci_low']:.3f}, {fine['ci_high']:.3f}]$"
    before = f"${pre['estimate']:.3f}$ $[{pre['ci_low']:.3f}, {pre['ci_high']:.3f}]$"
    # no threshold: first column; the pretrained network's beside it, and no other measure of it
    assert f"finetuned m & seed 0 & leakage (embedding) & {cell} & -- & {before} \\\\" in latex
    assert "no classifier head for these classes" in latex and latex.count(before) == 1
    with pytest.raises(ValueError, match="no rows for dataset 'other'"):
        amplification_frame(summary, "other")
    text = "\n".join(describe_amplification(summary, terms, {"surfboard": "person_a"}))
    assert "Finetuned m (d, seed 0) amplifies the attribute-object bias" in text
    assert "Scratch m (d, seed 0) reduces the attribute-object bias" in text
    assert "amplifies the planted surfboard->person_a association" in text
    assert (
        "Finetuned m (d, seed 0): its embedding of the test images gives the attribute away beyond chance: an "
        f"attacker's balanced accuracy {fine['estimate']:.3f} 95% CI [{fine['ci_low']:.3f}, {fine['ci_high']:.3f}] "
        f"against {pre['estimate']:.3f} [{pre['ci_low']:.3f}, {pre['ci_high']:.3f}] before finetuning" in text
    )
    assert (
        "Scratch m (d, seed 0): its embedding of the test images does not give" in text and text.count("before fi") == 1
    )
    assert "the pretrained network has no classifier head for the dataset's classes" in text
    assert (
        "Scratch m (d, seed 0): its embedding of the test images does not give the attribute away beyond chance "
        "(the interval holds chance)" in text
    ) and "(chance 0.500; from its scores: " in text
    assert "not the network's training sample" in text  # a per-network interval says nothing of the recipe
    assert verdict(-0.1, 0.2) == "neither amplifies nor reduces (the interval holds 0)"
    assert verdict(float("nan"), 0.1) == "cannot be judged (no interval)"
    assert describe_amplification(None) == []


def _checkpoint(path, classes, seed=0):
    import torch

    from biastransfer.models.checkpoints import save_checkpoint
    from biastransfer.models.extractors import create_classifier
    from biastransfer.models.resolve import resolve_spec

    spec = resolve_spec("tiny", ENTRY)
    torch.manual_seed(seed)
    model = create_classifier(spec, len(classes), None)
    torch.nn.init.normal_(model.head.weight, std=0.5)  # scores that differ by image
    save_checkpoint(model, path, spec=spec, class_names=classes)
    return model.eval()


STAGES = ["ft-syn-seed0", "scratch-syn-seed0"]
ENTRY = {
    "source": "timm",
    "arch": "resnet10t",
    "weights": None,
    "preprocess": {"resize": 32, "crop": 32, "interpolation": "bilinear", "mean": [0.5] * 3, "std": [0.25] * 3},
}


def _settings(datasets: list, stages: list) -> PredictSettings:
    """Rule predict's settings for ``stages`` of ``datasets`` of the tiny model, on the CPU."""
    inference = {"batch_size": 16, "num_workers": 0, "device": "cpu", "amp": True}
    return PredictSettings.from_mapping(
        {"datasets": datasets, "stages": stages, "entry": ENTRY, "inference": inference}
    )


def test_predict_writes_each_images_sigmoid_scores_and_embedding_from_one_forward_pass(drawn, tmp_path, monkeypatch):
    """Two networks of one dataset (a finetuned and a scratch one) score each batch side by side."""
    import torch

    from biastransfer.models.extractors import FeatureExtractor
    from biastransfer.models.features import preprocessed_images
    from biastransfer.models.resolve import resolve_spec

    _, files = drawn
    classes = ["car", "person", "refrigerator", "stop_sign", "surfboard"]
    models = [_checkpoint(tmp_path / f"{stage}.safetensors", classes, seed) for seed, stage in enumerate(STAGES)]
    predict = _script("predict").main
    out = [tmp_path / f"{stage}.parquet" for stage in STAGES]
    emb = [tmp_path / f"{stage}.embedding.parquet" for stage in STAGES]
    weights = [str(tmp_path / f"{stage}.safetensors") for stage in STAGES]
    calls, forward = [], FeatureExtractor.forward
    monkeypatch.setattr(FeatureExtractor, "forward", lambda self, x: calls.append(len(x)) or forward(self, x))
    pretrained = _checkpoint(tmp_path / "pretrained.safetensors", ["other"], seed=7)  # its head is not the split's
    baseline = tmp_path / "pretrained-syn.embedding.parquet"
    predict(
        [files["test"]],
        weights,
        [str(p) for p in out],
        [str(p) for p in emb],
        _settings(["syn"], STAGES),
        model="tiny",
        pretrained=str(tmp_path / "pretrained.safetensors"),
        pretrained_embeddings=[str(baseline)],
    )
    monkeypatch.undo()
    assert calls == [16] * 15  # the 80 test images through each of the three backbones once, in batches of 16
    split = read_split(files["test"])
    images = preprocessed_images(split.frame["path"].tolist(), resolve_spec("tiny", ENTRY).preprocess)
    for model, stage, weights_file, predicted, embedding in zip(models, STAGES, weights, out, emb):
        table = read_predictions(predicted)
        assert table.image_ids.tolist() == split.frame["image_id"].tolist() and table.classes == tuple(classes)
        assert table.metadata["split_sha256"] == file_digest(files["test"]) and table.metadata["split"] == "test"
        assert table.metadata["weights_sha256"] == file_digest(weights_file) and table.metadata["stage"] == stage
        with torch.inference_mode():
            expected = torch.sigmoid(model(images)).numpy()
        np.testing.assert_allclose(table.scores, expected, atol=1e-5)
        assert table.scores.std(axis=0).min() > 1e-3
        embedded = read_embeddings(embedding)  # the embed rule's features at the same layer, beside the scores
        assert embedded.image_ids.tolist() == table.image_ids.tolist() and set(embedded.classes) == {"test"}
        with torch.inference_mode():
            np.testing.assert_allclose(embedded.embeddings, model.backbone(images).numpy(), atol=1e-5)
        assert embedded.metadata == {k: v for k, v in table.metadata.items() if k != "classes"} | {
            "dim": model.backbone.embed_dim
        }
    assert not np.allclose(read_predictions(out[0]).scores, read_predictions(out[1]).scores)
    # the pretrained network's embedding of the same images at the same layer, without scores
    before = read_embeddings(baseline)
    assert before.image_ids.tolist() == split.frame["image_id"].tolist()
    with torch.inference_mode():
        np.testing.assert_allclose(before.embeddings, pretrained.backbone(images).numpy(), atol=1e-5)
    assert before.metadata["stage"] == "pretrained" and before.metadata["split_sha256"] == file_digest(files["test"])
    assert before.metadata["weights_sha256"] == file_digest(tmp_path / "pretrained.safetensors")
    assert (before.metadata["dataset"], before.metadata["split"]) == ("syn", "test")


def test_predict_names_a_lacking_class_or_an_unmatched_stage_before_scoring(drawn, tmp_path, monkeypatch):
    from biastransfer.models.extractors import FeatureExtractor

    _, files = drawn
    _checkpoint(tmp_path / "model.safetensors", ["car", "person", "refrigerator", "stop_sign", "surfboard"])
    _checkpoint(tmp_path / "lacking.safetensors", ["car", "person_a", "refrigerator", "stop_sign", "surfboard"])
    monkeypatch.setattr(FeatureExtractor, "forward", lambda self, x: pytest.fail("an image was scored"))
    predict = _script("predict").main
    weights = [str(tmp_path / "model.safetensors"), str(tmp_path / "lacking.safetensors")]
    outputs = dict(
        predictions=[str(tmp_path / f"{s}.parquet") for s in STAGES],
        embeddings=[str(tmp_path / f"{s}.embedding.parquet") for s in STAGES],
        pretrained=str(tmp_path / "model.safetensors"),
        pretrained_embeddings=[str(tmp_path / "pretrained-syn.embedding.parquet")],
    )
    with pytest.raises(ValueError, match=r"lacking.safetensors: the network has no output for class 'person'"):
        predict([files["test"]], weights, **outputs, settings=_settings(["syn"], STAGES), model="tiny")
    # a second dataset's split: its network is checked before the first dataset's networks score
    other = tmp_path / "other" / "test.parquet"
    other.parent.mkdir()
    shutil.copyfile(files["test"], other)
    with pytest.raises(ValueError, match=r"lacking.safetensors: the network has no output for class 'person'"):
        predict(
            [files["test"], str(other)],
            weights,
            **outputs | {"pretrained_embeddings": [str(tmp_path / f"pretrained-{d}.parquet") for d in ("syn", "o")]},
            settings=_settings(["syn", "other"], ["ft-syn-seed0", "ft-other-seed0"]),
            model="tiny",
        )
    with pytest.raises(ValueError, match=r"model.safetensors and 0 pretrained embedding files for 1 datasets"):
        predict(
            [files["test"]], weights, **outputs | {"pretrained_embeddings": []}, settings=_settings(["syn"], STAGES)
        )
    with pytest.raises(ValueError, match=r"2 stages for 1 checkpoints, 2 prediction and 2 embedding files"):
        predict([files["test"]], weights[:1], **outputs, settings=_settings(["syn"], STAGES), model="tiny")
    with pytest.raises(ValueError, match=r"stage 'ft-other-seed0': its dataset 'other' is none of \['syn'\]"):
        predict(
            [files["test"]],
            weights,
            **outputs,
            settings=_settings(["syn"], ["ft-other-seed0", STAGES[1]]),
            model="tiny",
        )
    assert not list(tmp_path.glob("*.parquet"))


def test_a_mean_whose_terms_disagree_in_sign_is_no_verdict_and_the_moved_pairs_are_named():
    """BiasAmp A->T's mean below 0 over terms of both signs (by their intervals) is said to be no verdict; each
    pair whose shift interval lies above 0 is named with its direction; terms of one sign keep the verdict."""
    key = dict(network="finetuned", model="m", dataset="d", seed="pooled", measure="directional", threshold="0.5")
    summary = pd.DataFrame([{**key, "estimate": -0.1, "ci_low": -0.15, "ci_high": -0.05, "level": 0.95}])

    def term(attribute, task, low, high, shift_low):
        bounds = dict(term=(low + high) / 2, ci_low=low, ci_high=high)
        return {**key, "attribute": attribute, "task": task, **bounds, "excluded": ""} | dict(
            shift=shift_low + 0.02, shift_low=shift_low, shift_high=shift_low + 0.04
        )

    mixed = pd.DataFrame(
        [
            term("a", "car", -0.3, -0.1, -0.05),
            term("a", "boat", -0.2, -0.1, 0.01),
            term("b", "car", 0.05, 0.2, -0.05),
        ]
    )
    text = "\n".join(describe_amplification(summary, mixed))
    assert (
        "Finetuned m (d, seeds pooled) at threshold 0.5: BiasAmp A->T -0.100 95% CI [-0.150, -0.050] is the mean of "
        "terms that disagree in sign (1 above 0, 2 below, by their intervals; amplification_terms.csv), so it is no "
        "verdict on the bias; the pairs whose shift excludes 0: boat towards a +0.030 [0.010, 0.050]." in text
    )
    one_sign = mixed.assign(ci_low=-0.3, ci_high=-0.1, shift_low=-0.05)
    text = "\n".join(describe_amplification(summary, one_sign))
    assert "reduces the attribute-object bias in its predictions at threshold 0.5: BiasAmp A->T -0.100" in text
    assert "the pairs whose shift excludes 0: none." in text
