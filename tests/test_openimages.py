"""Open Images label parsing, curation, the paper's id lists and splits on tiny fake CSVs."""

from __future__ import annotations

import pandas as pd
import pytest

from biastransfer.data import openimages as oi
from biastransfer.data.leakage import check_no_leakage

CLASSES = [
    ("/m/04yx4", "Man"),
    ("/m/03bt1vf", "Woman"),
    ("/m/01g317", "Person"),
    ("/m/01bl7v", "Boy"),
    ("/m/05r655", "Girl"),
    ("/m/0dzct", "Human face"),
    ("/m/0k4j", "Car"),
    ("/m/04rky", "Mammal"),
    ("/m/02pv19", "Stop sign"),
    ("/m/0199g", "Bicycle"),
]
M = {name: mid for mid, name in CLASSES}


def plan():
    """(image id, [(label, confidence)], class it must land in or None)."""
    rows, n = [], 0

    def add(labels, cls, k):
        nonlocal n
        for _ in range(k):
            rows.append((f"{n:016x}", labels, cls))
            n += 1

    add([("Car", 1)], "car", 6)
    add([("Car", 1), ("Man", 0), ("Person", 0)], "car", 2)  # verified-absent people do not count
    add([("Car", 1), ("Man", 1), ("Person", 1)], "car_man", 5)
    add([("Car", 1), ("Woman", 1)], "car_woman", 3)
    add([("Mammal", 1)], "mammal", 4)
    add([("Man", 1), ("Bicycle", 1)], "man", 4)
    add([("Woman", 1), ("Human face", 1)], "woman", 4)
    add([("Car", 1), ("Man", 1), ("Woman", 1)], None, 2)  # both genders
    add([("Car", 1), ("Mammal", 1)], None, 2)  # two analysis objects
    add([("Car", 0), ("Bicycle", 1)], None, 3)  # only a negative for car
    add([("Car", 1), ("Human face", 1)], None, 1)  # a person label
    return rows


@pytest.fixture
def files(tmp_path):
    (tmp_path / "classes.csv").write_text("".join(f"{m},{n}\n" for m, n in CLASSES))  # no header, as V4
    lines = ["ImageID,Source,LabelName,Confidence"]
    for image_id, labels, _ in plan():
        lines += [f"{image_id},verification,{M[name]},{conf}" for name, conf in labels]
    (tmp_path / "labels.csv").write_text("\n".join(lines) + "\n")
    return tmp_path


def test_classes_and_verified_positives(files):
    classes = oi.load_classes(files / "classes.csv")
    assert classes["name"].tolist()[:2] == ["Man", "Woman"] and len(classes) == len(CLASSES)
    labels = oi.load_labels(files / "labels.csv", classes)
    positives = sum(c for _, ls, _ in plan() for _, c in ls)
    assert len(labels) == positives
    quirk = oi.load_labels(files / "labels.csv", classes, verified_only=False)
    assert len(quirk) == sum(len(ls) for _, ls, _ in plan())
    # a V6-style file with a header row parses the same
    (files / "v6.csv").write_text("LabelName,DisplayName\n" + (files / "classes.csv").read_text())
    pd.testing.assert_frame_equal(oi.load_classes(files / "v6.csv"), classes)


def test_bad_label_files(files):
    classes = oi.load_classes(files / "classes.csv")
    (files / "nocol.csv").write_text("ImageID,Source,LabelName\nab12,verification,/m/0k4j\n")
    with pytest.raises(ValueError, match=r"nocol\.csv: missing column\(s\) \['Confidence'\]"):
        oi.load_labels(files / "nocol.csv", classes)
    (files / "mid.csv").write_text("ImageID,Source,LabelName,Confidence\nab12,verification,/m/zzzz,1\n")
    with pytest.raises(
        ValueError, match=r"mid\.csv: 1 unknown MID\(s\) not in the class descriptions, e.g. \['/m/zzzz'\]"
    ):
        oi.load_labels(files / "mid.csv", classes)
    with pytest.raises(ValueError, match=r"curation.objects\['car'\]: unknown Open Images class 'Automobile'"):
        oi.curate(
            oi.load_labels(files / "labels.csv", classes), classes, {"car": 1}, root="r", objects={"car": "Automobile"}
        )
    (files / "bad_classes.csv").write_text("Car,/m/0k4j\n")
    with pytest.raises(ValueError, match="MIDs like /m/0k4j"):
        oi.load_classes(files / "bad_classes.csv")


SIZES = {"car": 7, "car_man": 5, "car_woman": 3, "mammal": 4, "man": 3, "woman": 4, "random": 5}


def test_curated_selection(files):
    classes = oi.load_classes(files / "classes.csv")
    labels = oi.load_labels(files / "labels.csv", classes)
    opts = dict(objects={"car": "Car", "mammal": "/m/04rky"}, seed=1)
    sel = oi.curate(labels, classes, SIZES, root=files / "oi", **opts)
    expected = {i: cls for i, _, cls in plan()}
    assert sel.groupby("class").size().to_dict() == SIZES
    assert sel["image_id"].is_unique
    assert all(expected[i] == c for i, c in zip(sel["image_id"], sel["class"]) if c != "random")
    assert (
        sel["source"].iloc[0]
        == f"https://open-images-dataset.s3.amazonaws.com/validation/{sel['image_id'].iloc[0]}.jpg"
    )
    assert "'Car' and 'Man' (Confidence=1)" in sel.loc[sel["class"] == "car_man", "reason"].iloc[0]
    pd.testing.assert_frame_equal(sel, oi.curate(labels, classes, SIZES, root=files / "oi", **opts))
    with pytest.raises(ValueError, match="class 'car': only 8 candidate"):
        oi.curate(labels, classes, {"car": 9}, root="r", **opts)
    # the authors' quirk (negatives as positives): the 2 images with a verified-absent Man drop out of
    # 'car', and the 3 with a verified-absent Car join it
    quirk = oi.load_labels(files / "labels.csv", classes, verified_only=False)
    with pytest.raises(ValueError, match="class 'car': only 9 candidate"):
        oi.curate(quirk, classes, {"car": 10}, root="r", **opts)


def test_paper_lists_splits_and_leakage(files):
    classes = oi.load_classes(files / "classes.csv")
    labels = oi.load_labels(files / "labels.csv", classes)
    ids = [i for i, _, _ in plan()]
    (files / "car.txt").write_text(f"{ids[0]}\n{ids[1]}\n\n{ids[0]}\n")
    (files / "man.txt").write_text(f"{ids[20]}\n")
    sel = oi.paper_selection({"car": files / "car.txt", "man": files / "man.txt"}, root="OI")
    assert sel[["image_id", "class"]].values.tolist() == [[ids[0], "car"], [ids[1], "car"], [ids[20], "man"]]
    assert sel["path"].iloc[0] == f"OI/validation/{ids[0]}.jpg"
    (files / "bad.txt").write_text("not-an-id\n")
    with pytest.raises(ValueError, match=r"bad\.txt:1: 'not-an-id' is not an Open Images ImageID"):
        oi.paper_selection({"x": files / "bad.txt"}, root="OI")

    split = oi.make_split(
        labels, classes, dataset="openimages", name="val", source_split="validation", root="OI", exclude=sel["image_id"]
    )
    assert split.classes == tuple(n for _, n in CLASSES)
    assert not set(split.frame["image_id"]) & set(sel["image_id"])
    labelled = set(labels["image_id"])
    assert len(split.frame) == len(labelled - set(sel["image_id"]))
    row = split.frame.set_index("image_id").loc[ids[10]]
    assert row["labels"] == ["Car", "Man", "Person"]
    small, again = (
        oi.make_split(
            labels,
            classes,
            dataset="openimages",
            name="train",
            source_split="train",
            root="OI",
            exclude=sel["image_id"],
            subset=10,
            seed=5,
        )
        for _ in range(2)
    )  # twice: the same subset
    assert len(small.frame) == 10 and small.frame["image_id"].tolist() == again.frame["image_id"].tolist()
    manifest = sel.assign(sha256=["a" * 64, "b" * 64, "c" * 64])
    check_no_leakage(manifest, {"val": split.frame, "train": small.frame})
    full = oi.make_split(labels, classes, dataset="openimages", name="val", source_split="validation", root="OI")
    with pytest.raises(ValueError, match=f"split 'val': 3 analysis image id.*{ids[0]}"):
        check_no_leakage(manifest, {"val": full.frame})


def test_a_split_lists_each_image_once_with_its_labels_sorted_and_its_path():
    """Rows in any order, images with one or several labels: ids sorted, each image's display names
    sorted, the path image_path gives."""
    classes = pd.DataFrame({"mid": ["/m/b", "/m/a", "/m/c"], "name": ["Bee", "Ant", "Cat"]})
    labels = pd.DataFrame(
        {
            "image_id": ["ff00", "0a00", "ff00", "0a00", "1b00", "ff00"],
            "mid": ["/m/c", "/m/b", "/m/a", "/m/a", "/m/b", "/m/b"],
        }
    )
    split = oi.make_split(
        labels, classes, dataset="d", name="val", source_split="validation", root="R/", exclude=["1b00"]
    )
    assert split.classes == ("Bee", "Ant", "Cat")
    assert split.frame.to_dict("list") == {
        "image_id": ["0a00", "ff00"],
        "path": [oi.image_path("R/", "validation", "0a00"), oi.image_path("R/", "validation", "ff00")],
        "labels": [["Ant", "Bee"], ["Ant", "Bee", "Cat"]],
    }


MIAP_HEADER = (
    "ImageID,LabelName,Confidence,XMin,XMax,YMin,YMax,IsOccluded,IsTruncated,IsGroupOf,IsDepictionOf,IsInside,"
    "GenderPresentation,AgePresentation"
)


def test_miap_boxes_take_precedence_over_the_gender_labels(tmp_path):
    """Four test images: a Masculine box against a Woman label (MIAP wins), Woman and Girl labels without a
    box, boxes of both presentations, and an Unknown box beside a Man label (MIAP decides: none)."""
    (tmp_path / "classes.csv").write_text("".join(f"{m},{n}\n" for m, n in CLASSES))
    ids = [f"{k:016x}" for k in range(4)]
    labels = {
        ids[0]: [("Woman", 1), ("Car", 1)],
        ids[1]: [("Woman", 1), ("Girl", 1), ("Man", 0)],
        ids[2]: [("Person", 1)],
        ids[3]: [("Man", 1)],
    }
    lines = ["ImageID,Source,LabelName,Confidence"]
    lines += [f"{i},verification,{M[n]},{c}" for i, ls in labels.items() for n, c in ls]
    (tmp_path / "test-labels.csv").write_text("\n".join(lines) + "\n")
    boxes = [
        (ids[0], "Predominantly Masculine"),
        (ids[2], "Predominantly Masculine"),
        (ids[2], "Predominantly Feminine"),
        (ids[3], "Unknown"),
    ]
    box_line = "{},/m/01g317,1,0.1,0.5,0.1,0.9,0,0,0,0,0,{},Middle"
    (tmp_path / "miap.csv").write_text("\n".join([MIAP_HEADER, *(box_line.format(*b) for b in boxes)]) + "\n")
    classes = oi.load_classes(tmp_path / "classes.csv")
    got = oi.image_attributes(
        ids, oi.load_labels(tmp_path / "test-labels.csv", classes), classes, oi.load_miap(tmp_path / "miap.csv")
    )
    assert got["image_id"].tolist() == ids
    assert got["attribute"].tolist() == ["man", "woman", None, None]
    assert got["source"].tolist() == [
        "MIAP boxes: man only",
        "labels Man/Boy/Woman/Girl: woman only",
        "MIAP boxes: both man and woman; excluded",
        "MIAP boxes: every gender presentation Unknown; excluded",
    ]


def test_a_bad_miap_file_is_named_with_its_line(tmp_path):
    (tmp_path / "m.csv").write_text(MIAP_HEADER + "\nabc,/m/01g317,1,0,1,0,1,0,0,0,0,0,Masculine,Young\n")
    with pytest.raises(ValueError, match=r"m\.csv: line 2: GenderPresentation 'Masculine' is not one of"):
        oi.load_miap(tmp_path / "m.csv")
    (tmp_path / "n.csv").write_text("ImageID,LabelName\nabc,/m/01g317\n")
    with pytest.raises(ValueError, match=r"n\.csv: missing column\(s\) \['GenderPresentation'\]"):
        oi.load_miap(tmp_path / "n.csv")


def test_the_training_split_attributes_come_from_the_train_labels_only(tmp_path):
    """What an intervention on Open Images rebalances: the training split's human-verified gender labels
    (train-annotations-..., not the test file, which says the opposite of image 0), no MIAP boxes (none is
    read: the test split's box file is absent); image 0 Man, 1 Girl, 2 Boy and Woman, 3 a verified-absent
    Man only, 4 not labelled at all."""
    from report_site import script

    from biastransfer.data.attributes import read_attributes
    from biastransfer.data.splits import write_split
    from biastransfer.hashing import file_digest

    ann = tmp_path / "oi" / "annotations"
    ann.mkdir(parents=True)
    (ann / "class-descriptions-boxable.csv").write_text("".join(f"{m},{n}\n" for m, n in CLASSES))
    ids = [f"{k:016x}" for k in range(5)]
    train = {
        ids[0]: [("Man", 1), ("Car", 1)],
        ids[1]: [("Girl", 1)],
        ids[2]: [("Boy", 1), ("Woman", 1)],
        ids[3]: [("Man", 0), ("Car", 1)],
        ids[4]: [("Bicycle", 0)],
    }
    for name, labels in (("train", train), ("test", {ids[0]: [("Woman", 1)]})):
        lines = ["ImageID,Source,LabelName,Confidence"]
        lines += [f"{i},verification,{M[n]},{c}" for i, ls in labels.items() for n, c in ls]
        (ann / f"{name}-annotations-human-imagelabels-boxable.csv").write_text("\n".join(lines) + "\n")
    classes = oi.load_classes(ann / "class-descriptions-boxable.csv")
    labels = oi.load_labels(ann / "train-annotations-human-imagelabels-boxable.csv", classes)
    split = oi.make_split(labels, classes, dataset="oi", name="train", source_split="train", root=tmp_path / "oi")
    split = type(split)(
        split.dataset,
        split.name,
        split.classes,
        pd.concat(
            [split.frame, pd.DataFrame({"image_id": [ids[4]], "path": ["x.jpg"], "labels": [[]]})], ignore_index=True
        ),
    )
    write_split(tmp_path / "train.parquet", split)
    out = tmp_path / "train_attributes.parquet"
    dataset = {"kind": "openimages", "root": str(tmp_path / "oi"), "verified_only": True}
    script("real_attributes").main(dataset, str(tmp_path / "train.parquet"), str(out))
    attrs = read_attributes(out)
    assert (attrs.dataset, attrs.split, attrs.split_sha256) == ("oi", "train", file_digest(tmp_path / "train.parquet"))
    assert attrs.attributes == ("man", "woman")
    assert set(attrs.attribute_classes) == {"Man", "Woman", "Person", "Boy", "Girl", "Human face"}
    assert list(attrs.of(ids, where="t")) == ["man", "woman", None, None, None]
    assert attrs.frame["source"].tolist() == [
        "labels Man/Boy/Woman/Girl: man only",
        "labels Man/Boy/Woman/Girl: woman only",
        "labels Man/Boy/Woman/Girl: both man and woman; excluded",
        "no Man/Boy/Woman/Girl label; excluded",
        "no Man/Boy/Woman/Girl label; excluded",
    ]


def test_the_shipped_boxable_class_names():
    """The 601 display names an intervention's objects are checked against: unique, with every class the
    loader and curation name (MIDS)."""
    from biastransfer.vocabulary import OPENIMAGES_CLASSES

    assert len(OPENIMAGES_CLASSES) == len(set(OPENIMAGES_CLASSES)) == 601
    assert set(oi.MIDS) <= set(OPENIMAGES_CLASSES)
    assert OPENIMAGES_CLASSES[0] == "Tortoise" and OPENIMAGES_CLASSES[-1] == "Helmet"
