"""COCO parsing, curation, the paper's lists, splits and the leakage check on a tiny fake COCO tree."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from loopback import FileServer
from PIL import Image

from biastransfer.data import coco
from biastransfer.data.curation import manifest_from_selection
from biastransfer.data.leakage import check_no_leakage
from biastransfer.data.manifest import read_manifest, write_manifest

CATS = [
    {"id": 1, "name": "person", "supercategory": "person"},
    {"id": 3, "name": "car", "supercategory": "vehicle"},
    {"id": 42, "name": "surfboard", "supercategory": "sports"},
    {"id": 62, "name": "chair", "supercategory": "furniture"},
]
W = H = 100  # image area 10,000; areas below are chosen against min_area_fraction = 0.05 (500)


def ann(i, image_id, cat, area=2000.0, crowd=0):
    seg = {"counts": [5, 10, 85], "size": [H, W]} if crowd else [[1.0, 2.5, 30.0, 2.0, 30.0, 40.0]]
    return {
        "id": i,
        "image_id": image_id,
        "category_id": cat,
        "segmentation": seg,
        "area": area,
        "bbox": [1.0, 2.0, 29.0, 38.0],
        "iscrowd": crowd,
    }


def build_split(split, start):
    """Planted images (ids from ``start``), each with the class it must land in (or None)."""
    plan = []  # (image_id, [(cat, area, crowd)], captions, expected class)
    i = start
    for _ in range(5):
        plan.append((i, [(3, 3000, 0)], ["a red car parked"], "car"))
        i += 1
    for _ in range(4):
        plan.append((i, [(3, 3000, 0), (1, 1500, 0)], ["a man next to his car.", "A MAN, smiling"], "car_man"))
        i += 1
    for _ in range(3):
        plan.append((i, [(3, 3000, 0), (1, 1500, 0)], ["a woman by a car", "lady driving"], "car_woman"))
        i += 1
    for _ in range(4):
        plan.append((i, [(42, 2500, 0), (1, 900, 0)], ["a boy on a surfboard"], "surfboard_man"))
        i += 1
    for _ in range(4):
        plan.append((i, [(1, 4000, 0)], ["a woman smiling"], "woman"))
        i += 1
    for _ in range(4):
        plan.append((i, [(1, 4000, 0)], ["a man standing"], "man"))
        i += 1
    # distractors that must never be chosen for a non-random class
    plan.append((i, [(3, 100, 0)], ["tiny car"], None))
    i += 1  # car too small
    plan.append((i, [(3, 3000, 0), (62, 800, 0)], ["car and chair"], None))
    i += 1  # other category
    plan.append((i, [(3, 3000, 0), (1, 1500, 0)], ["a man and a woman by a car"], None))
    i += 1  # both genders
    plan.append((i, [(3, 3000, 0), (1, 1500, 0), (1, 900, 0)], ["two men by a car"], None))
    i += 1  # 2 persons
    plan.append((i, [(1, 4000, 1)], ["a crowd of men"], None))
    i += 1  # crowd
    plan.append((i, [], ["an empty street"], None))
    i += 1  # unlabelled
    images, anns, caps = [], [], []
    for image_id, objs, texts, _ in plan:
        images.append(
            {
                "id": image_id,
                "file_name": f"{image_id:012d}.jpg",
                "width": W,
                "height": H,
                "license": 1,
                "coco_url": coco.image_url(split, image_id),
                "date_captured": "",
                "flickr_url": f"http://farm1.staticflickr.com/1/{image_id}_abc_z.jpg",
            }
        )
        for cat, area, crowd in objs:
            anns.append(ann(len(anns) + 1 + 10_000 * start, image_id, cat, area, crowd))
        caps += [{"id": len(caps) + 1, "image_id": image_id, "caption": t} for t in texts]
    inst = {
        "info": {},
        "licenses": [{"id": 1, "name": "CC"}],
        "images": images,
        "annotations": anns,
        "categories": CATS,
    }
    return inst, {"info": {}, "images": images, "annotations": caps}, plan


def jpeg(seed: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), (seed % 256, 40, 90)).save(buf, format="JPEG")
    return buf.getvalue()


@pytest.fixture
def tree(tmp_path):
    ann_dir = tmp_path / "coco" / "annotations"
    ann_dir.mkdir(parents=True)
    plans = {}
    for split, start in (("val2017", 100), ("train2017", 500)):
        inst, caps, plan = build_split(split, start)
        (ann_dir / f"instances_{split}.json").write_text(json.dumps(inst, indent=1))  # indented: regex must cope
        (ann_dir / f"captions_{split}.json").write_text(json.dumps(caps))
        plans[split] = plan
    return tmp_path, plans


def load(tmp_path):
    d = tmp_path / "coco" / "annotations"
    inst = [coco.load_instances(d / f"instances_{s}.json") for s in coco.SPLITS]
    caps = pd.concat([coco.load_captions(d / f"captions_{s}.json") for s in coco.SPLITS])
    return inst, caps


def test_load_instances_fields_and_category_order(tree):
    tmp_path, plans = tree
    inst = coco.load_instances(tmp_path / "coco/annotations/instances_val2017.json")
    assert inst.split == "val2017"
    assert inst.class_names == ("person", "car", "surfboard", "chair")
    assert len(inst.images) == len(plans["val2017"])
    assert inst.annotations["iscrowd"].sum() == 1 and set(inst.annotations["category_id"]) == {1, 3, 42, 62}
    assert inst.annotations["area"].iloc[0] == 3000.0
    # every polygon and RLE segmentation is dropped before parsing (that is what keeps it lean)
    raw = (tmp_path / "coco/annotations/instances_val2017.json").read_bytes()
    assert coco._SEGMENTATION.subn(b"0", raw)[1] == len(inst.annotations)


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda t: t[: len(t) // 2], "not valid JSON, perhaps truncated"),
        (lambda t: t.replace('"category_id"', '"cat"', 1), r"annotations\[0\] has no 'category_id'"),
        (
            lambda t: t.replace('"category_id": 3', '"category_id": 99', 1),
            r"category id\(s\) \[99\] not in 'categories'",
        ),
        (lambda t: t.replace('"categories"', '"cats"'), r"missing top-level key\(s\) \['categories'\]"),
    ],
)
def test_bad_annotation_files_raise_clear_errors(tree, damage, message):
    tmp_path, _ = tree
    bad = tmp_path / "instances_val2017.json"
    bad.write_text(damage((tmp_path / "coco/annotations/instances_val2017.json").read_text()))
    with pytest.raises(ValueError, match=message) as err:
        coco.load_instances(bad)
    assert str(bad) in str(err.value)


def test_caption_gender_rule():
    caps = pd.DataFrame(
        {
            "image_id": [1, 1, 2, 3, 3, 4, 5],
            "caption": [
                "A man.",
                "a dog",
                "Two WOMEN talking",
                "a girl",
                "her brother, a boy",
                "a manhole",
                "men's shoes",
            ],
        }
    )
    got = coco.caption_gender(caps, ["man", "men", "boy"], ["woman", "women", "girl"]).to_dict()
    assert got == {1: "man", 2: "woman", 5: "man"}  # 3 has both, 4 has neither ("manhole" is not "man")
    with pytest.raises(ValueError, match="disjoint"):
        coco.caption_gender(caps, ["man"], ["man"])


def test_punctuation_follows_the_word_lists_source():
    """wang2021's source deletes punctuation ("men's" -> "mens", no male word); "space" splits it off."""
    caps = pd.DataFrame({"image_id": [5, 6], "caption": ["men's shoes", "a man, alone"]})
    assert coco.caption_gender(caps, ["men", "man"], ["women"], punctuation="delete").to_dict() == {6: "man"}
    assert coco.caption_gender(caps, ["men", "man"], ["women"], punctuation="space").to_dict() == {5: "man", 6: "man"}
    with pytest.raises(ValueError, match="punctuation must be one of"):
        coco.caption_gender(caps, ["men"], ["women"], punctuation="strip")


def test_the_shipped_word_lists_name_their_tokenisation():
    from pathlib import Path

    from biastransfer.data.kinds import read_gender_words

    root = Path(__file__).resolve().parents[1]

    words = read_gender_words(str(root / "resources" / "gender_words.yaml"), None)
    assert words.punctuation == "delete" and "men" in words.male
    with pytest.raises(ValueError, match="unknown list 'nope'"):
        read_gender_words(str(root / "resources" / "gender_words.yaml"), "nope")


def test_an_unknown_dataset_kind_is_named():
    from biastransfer.data.kinds import kind_of

    with pytest.raises(ValueError, match="dataset kind 'imagenet' has no adapter"):
        kind_of({"kind": "imagenet", "root": "x"})


SIZES = {"car": 8, "car_man": 6, "car_woman": 4, "surfboard_man": 5, "man": 6, "woman": 5, "random": 7}


def test_curated_selection_obeys_rules_and_sizes(tree):
    tmp_path, plans = tree
    inst, caps = load(tmp_path)
    kw = dict(
        root=tmp_path / "coco",
        male_words=["man", "men", "boy"],
        female_words=["woman", "lady"],
        objects={"car": "car", "surfboard": "surfboard"},
    )
    sel = coco.curate(inst, caps, SIZES, seed=3, **kw)
    expected = {str(i): cls for plan in plans.values() for i, _, _, cls in plan}
    assert sel.groupby("class").size().to_dict() == SIZES
    assert sel["image_id"].is_unique
    for image_id, cls in zip(sel["image_id"], sel["class"]):
        if cls != "random":
            assert expected[image_id] == cls, (image_id, cls)
    assert sel.loc[sel["class"] == "car_man", "reason"].str.contains("captions: man words only").all()
    assert sel.loc[sel["class"] == "random", "reason"].str.startswith("random: uniform draw (seed 3)").all()
    assert set(sel["source_split"]) == {"val2017", "train2017"}
    row = sel.iloc[0]
    assert row["path"].endswith(f"{row['source_split']}/{int(row['image_id']):012d}.jpg")
    assert row["source"] == coco.image_url(row["source_split"], int(row["image_id"]))
    # deterministic given the seed; another seed changes the draw
    pd.testing.assert_frame_equal(sel, coco.curate(inst, caps, SIZES, seed=3, **kw))
    other = coco.curate(inst, caps, SIZES, seed=4, **kw)
    assert set(other["image_id"]) != set(sel["image_id"])


def test_curation_errors_name_the_problem(tree):
    tmp_path, _ = tree
    inst, caps = load(tmp_path)
    kw = dict(root="r", male_words=["man"], female_words=["woman"], objects={"car": "car"})
    with pytest.raises(ValueError, match="class 'car_woman': only 6 candidate"):
        coco.curate(inst, caps, {"car_woman": 7}, **kw)
    kept = coco.curate(inst, caps, {"car_woman": 7}, on_shortfall="keep", **kw)
    assert len(kept) == 6
    with pytest.raises(ValueError, match=r"unknown class\(es\) \['boat'\]"):
        coco.curate(inst, caps, {"boat": 2}, **kw)
    with pytest.raises(ValueError, match="'bus' is not a COCO category"):
        coco.curate(inst, caps, {"car": 2}, **{**kw, "objects": {"car": "bus"}})
    with pytest.raises(ValueError, match="unknown option"):
        coco.curate(inst, caps, {"car": 2}, colour="red", **kw)


def test_paper_lists_resolve_flickr_and_drop_repeats(tree):
    tmp_path, _ = tree
    inst, _ = load(tmp_path)
    lists = tmp_path / "lists"
    lists.mkdir()
    (lists / "car.txt").write_text(
        f"{coco.image_url('val2017', 100)}\n\n{coco.image_url('train2017', 501)}\n{coco.image_url('val2017', 100)}\n"
    )
    (lists / "man.txt").write_text("http://farm1.staticflickr.com/1/121_abc_z.jpg\n")
    tables = [i.images.assign(split=i.split) for i in inst]
    sel = coco.paper_selection({"car": lists / "car.txt", "man": lists / "man.txt"}, root="R", images=tables)
    assert sel[["image_id", "class", "source_split"]].values.tolist() == [
        ["100", "car", "val2017"],
        ["501", "car", "train2017"],
        ["121", "man", "val2017"],
    ]
    assert sel["reason"].iloc[2] == "paper list man.txt line 1: http://farm1.staticflickr.com/1/121_abc_z.jpg"
    assert sel["reason"].iloc[1] == f"paper list car.txt line 3: {coco.image_url('train2017', 501)}"  # the file's line
    (lists / "bad.txt").write_text("http://example.org/x.jpg\n")
    with pytest.raises(ValueError, match=r"bad\.txt:1: 'http://example.org/x.jpg' is neither"):
        coco.paper_selection({"x": lists / "bad.txt"}, root="R", images=tables)


def test_manifest_splits_and_leakage(tree):
    tmp_path, _ = tree
    inst, caps = load(tmp_path)
    root = tmp_path / "coco"
    sel = coco.curate(
        inst,
        caps,
        {"car": 4, "man": 3, "random": 3},
        root=root,
        male_words=["man"],
        female_words=["woman"],
        objects={"car": "car"},
    )
    files = {f"/{s}/{int(i):012d}.jpg": jpeg(int(i)) for s, i in zip(sel["source_split"], sel["image_id"])}
    with FileServer(files) as srv:
        sel = sel.assign(
            source=[f"{srv.url}/{s}/{int(i):012d}.jpg" for s, i in zip(sel["source_split"], sel["image_id"])]
        )
        manifest = manifest_from_selection(sel, workers=4)
    write_manifest(tmp_path / "manifest.parquet", manifest)
    manifest = read_manifest(tmp_path / "manifest.parquet")
    assert (root / "val2017").is_dir() and len(manifest) == 10
    exclude = set(manifest["image_id"])
    splits = {i.split: coco.make_split(i, dataset="coco", name=i.split, root=root, exclude=exclude) for i in inst}
    train = splits["train2017"]
    assert train.classes == ("person", "car", "surfboard", "chair")
    n_train = len(inst[0].images) - len(exclude & set(inst[0].images["id"].astype(str)))
    assert len(train.frame) == n_train
    row = train.frame.set_index("image_id").loc["500"]
    assert row["labels"] == ["car"] and row["path"] == str(root / "train2017" / "000000000500.jpg")
    assert [] in train.frame["labels"].tolist()  # the unlabelled image is kept
    check_no_leakage(manifest, {k: s.frame for k, s in splits.items()})
    leaked = manifest["image_id"].iloc[0]
    planted = pd.concat([splits["val2017"].frame, pd.DataFrame({"image_id": [leaked], "path": ["x"], "labels": [[]]})])
    with pytest.raises(ValueError, match=f"split 'val2017': 1 analysis image id.*: {leaked}"):
        check_no_leakage(manifest, {"val2017": planted})
    # the same file under another id is caught by its hash
    renamed = pd.DataFrame({"image_id": ["other"], "sha256": [manifest["sha256"].iloc[1]]})
    with pytest.raises(ValueError, match="analysis image's sha256: other"):
        check_no_leakage(manifest, {"extra": renamed})


def test_scripts_end_to_end_through_a_mirror(tree, monkeypatch):
    """download -> paper lists -> selection -> manifest -> splits, with every remote file on a loopback mirror."""
    import hashlib
    import sys
    import zipfile
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))
    import curate_analysis_set
    import download_dataset
    import download_paper_lists
    import fetch_analysis_images
    import fetch_split_images
    import make_splits

    tmp_path, _ = tree
    monkeypatch.chdir(tmp_path)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for f in sorted((tmp_path / "coco" / "annotations").iterdir()):
            zf.write(f, f"annotations/{f.name}")
    lists = {
        "car": f"{coco.image_url('val2017', 100)}\n{coco.image_url('train2017', 501)}\n",
        "man": "http://farm1.staticflickr.com/1/121_abc_z.jpg\nhttp://images.cocodataset.org/val2017/000000122.jpg\n",
    }
    files = {"/images.cocodataset.org/annotations/annotations_trainval2017.zip": buf.getvalue()}
    files.update({f"/raw.example/lists/{c}.txt": t.encode() for c, t in lists.items()})
    inst, _ = load(tmp_path)
    for i in inst:
        files.update(
            {f"/images.cocodataset.org/{i.split}/{f}": jpeg(n) for n, f in zip(i.images["id"], i.images["file_name"])}
        )
    zip_md5 = hashlib.md5(buf.getvalue()).hexdigest()
    monkeypatch.setitem(coco.FILES, "annotations_trainval2017.zip", (coco.ANNOTATIONS_URL, zip_md5))
    with FileServer(files) as srv:
        ds = {"kind": "coco", "root": "data/coco", "images": "needed", "mirror": srv.url}
        download_dataset.main(ds, "ok/annotations.ok")
        assert (tmp_path / "data/coco/annotations/instances_train2017.json").is_file()
        paper = {
            "base_url": "http://raw.example/lists",
            "files": {c: hashlib.sha256(t.encode()).hexdigest() for c, t in lists.items()},
        }
        download_paper_lists.main(paper, "lists", "lists/lists.ok", mirror=srv.url)
        aset = {"dataset": "coco", "source": "paper", "classes": ["car", "man"]}
        curate_analysis_set.main(ds, aset, "sel.parquet", lists_dir="lists")
        fetch_analysis_images.main("sel.parquet", "manifest.parquet", mirror=srv.url, workers=2)
        manifest = read_manifest("manifest.parquet")
        assert sorted(manifest["image_id"]) == ["100", "121", "122", "501"]
        make_splits.main(ds, "coco", ["sel.parquet"], "sel/train.parquet", "sel/val.parquet")
        fetch_split_images.main(ds, "sel/val.parquet", "splits/val.parquet", workers=4)
    from biastransfer.data.splits import read_split

    val = read_split("splits/val.parquet")
    assert not set(val.frame["image_id"]) & set(manifest["image_id"])
    assert all(Path(p).is_file() for p in val.frame["path"])
    check_no_leakage(manifest, {"val": val.frame})
    bad = {**paper, "files": {**paper["files"], "car": "0" * 64}}
    with pytest.raises(Exception, match="car.txt: sha256 mismatch"):
        with FileServer(files) as srv:
            download_paper_lists.main(bad, "lists2", "lists2/ok", mirror=srv.url)


def test_caption_attributes_need_captions_that_agree(tmp_path):
    """Five images of a captions JSON: man words only (one caption neutral), woman words only, both
    (disagree), no gender word, and no caption at all; only the first two get an attribute."""
    captions = [
        (1, "A man rides a wave."),
        (1, "Someone on a surfboard"),
        (2, "two women at a table"),
        (3, "a man and his dog"),
        (3, "A woman walks a dog"),
        (4, "a dog on a couch"),
    ]
    data = {
        "images": [{"id": i} for i in range(1, 6)],
        "annotations": [{"image_id": i, "id": k, "caption": c} for k, (i, c) in enumerate(captions)],
    }
    (tmp_path / "captions_val2017.json").write_text(json.dumps(data))
    caps = coco.load_captions(tmp_path / "captions_val2017.json")
    got = coco.caption_attributes(
        ["1", "2", "3", "4", "5"], caps, ["man", "men"], ["woman", "women"], punctuation="delete", words="w"
    )
    assert got["attribute"].tolist() == ["man", "woman", None, None, None]
    assert got["source"].tolist() == [
        "COCO captions: man words only (w)",
        "COCO captions: woman words only (w)",
        "COCO captions disagree: man and woman words (w); excluded",
        "COCO captions: no gender word (w); excluded",
        "COCO captions: no caption (w); excluded",
    ]


def test_the_val2017_holdout_is_seeded_and_disjoint():
    from biastransfer.data.splits import Split

    frame = pd.DataFrame(
        {"image_id": [str(i) for i in range(20)], "path": [f"{i}.jpg" for i in range(20)], "labels": [["person"]] * 20}
    )
    val2017 = Split("coco", "val", ("person",), frame)
    val, test = coco.holdout(val2017, 0.25, seed=3)
    assert (val.name, test.name, len(val.frame), len(test.frame)) == ("val", "test", 15, 5)
    assert set(val.frame["image_id"]).isdisjoint(test.frame["image_id"])
    assert set(val.frame["image_id"]) | set(test.frame["image_id"]) == set(frame["image_id"])
    assert coco.holdout(val2017, 0.25, seed=3)[1].frame.equals(test.frame)
    assert coco.holdout(val2017, 0.25, seed=4)[1].frame["image_id"].tolist() != test.frame["image_id"].tolist()
    whole_val, whole_test = coco.holdout(val2017, 0, seed=3)
    assert whole_val is val2017 and whole_test.frame.equals(frame) and whole_test.name == "test"
    with pytest.raises(ValueError, match="holdout 0.01 of 20 val2017 images holds out 0"):
        coco.holdout(val2017, 0.01, seed=0)


def test_the_training_split_attributes_come_from_the_train2017_captions(tmp_path):
    """The evaluation's caption rule on a training split (what an intervention on COCO rebalances): the
    train2017 captions are read, not val2017's (which say the opposite of image 1 here); image 1 man words
    only, 2 woman words only ("women," after deleting punctuation), 3 both, 4 none."""
    from conftest import ROOT
    from report_site import script

    from biastransfer.data.attributes import read_attributes
    from biastransfer.data.splits import Split, write_split
    from biastransfer.hashing import file_digest

    ann_dir = tmp_path / "coco" / "annotations"
    ann_dir.mkdir(parents=True)
    for source, captions in {
        "train2017": [(1, "A man rides a wave."), (2, "two women, laughing"), (3, "a man and a woman"), (4, "a dog")],
        "val2017": [(1, "a woman rides a wave")],
    }.items():
        data = {
            "images": [{"id": i} for i in range(1, 5)],
            "annotations": [{"image_id": i, "id": k, "caption": c} for k, (i, c) in enumerate(captions)],
        }
        (ann_dir / f"captions_{source}.json").write_text(json.dumps(data))
    frame = pd.DataFrame(
        {
            "image_id": ["1", "2", "3", "4"],
            "path": [f"{i}.jpg" for i in range(4)],
            "labels": [["person", "surfboard"], ["person"], ["person"], ["dog"]],
        }
    )
    write_split(tmp_path / "train.parquet", Split("coco", "train", ("person", "surfboard", "dog"), frame))
    out = tmp_path / "train_attributes.parquet"
    script("real_attributes").main(
        {"kind": "coco", "root": str(tmp_path / "coco")},
        str(tmp_path / "train.parquet"),
        str(out),
        gender_words=str(ROOT / "resources" / "gender_words.yaml"),
        words_list="wang2021",
    )
    attrs = read_attributes(out)
    assert (attrs.dataset, attrs.split, attrs.split_sha256) == (
        "coco",
        "train",
        file_digest(tmp_path / "train.parquet"),
    )
    assert attrs.attributes == ("man", "woman") and attrs.attribute_classes == ("person",)
    assert list(attrs.of(["1", "2", "3", "4"], where="t")) == ["man", "woman", None, None]
    assert attrs.frame["source"].tolist()[2:] == [
        "COCO captions disagree: man and woman words (wang2021); excluded",
        "COCO captions: no gender word (wang2021); excluded",
    ]
    write_split(tmp_path / "val.parquet", Split("coco", "val", ("person", "surfboard", "dog"), frame))
    with pytest.raises(ValueError, match="val.parquet: the val split of a coco dataset has no attribute rule"):
        script("real_attributes").main({"kind": "coco", "root": "x"}, str(tmp_path / "val.parquet"), str(out))
