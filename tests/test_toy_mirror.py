"""The toy mirror (biastransfer.data.toy_mirror, models.toy_weights): real formats at real URL paths, parsed by
the real readers, and a dataset's ``checksums`` replacing the published annotation digests."""

import zipfile

import pandas as pd
import pytest
import yaml
from conftest import ROOT

from biastransfer.data import coco, toy_mirror
from biastransfer.data import openimages as oi
from biastransfer.data.attributes import Attributes
from biastransfer.data.download import apply_mirror
from biastransfer.data.kinds import pinned
from biastransfer.data.rebalance import intervene
from biastransfer.models.extractors import create_backbone
from biastransfer.models.registry import REGISTRY
from biastransfer.models.resolve import resolve_spec
from biastransfer.models.toy_weights import toy_crop, write_weights

PAPER = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())


def test_coco_mirror_parses_and_its_lists_select_their_classes(tmp_path):
    aset = PAPER["analysis_sets"]["coco"]
    base = aset["paper"]["base_url"]
    lists, ann = toy_mirror.build_coco(
        tmp_path,
        base,
        aset["classes"],
        objects=aset["curation"]["objects"],
        sizes=toy_mirror.ToySizes(per_class=2, n_train=5, n_val=3, size=32),
    )
    archive = tmp_path / "images.cocodataset.org" / "annotations" / "annotations_trainval2017.zip"
    assert ann == {"annotations_trainval2017.zip": toy_mirror.sha256_of(archive)}
    root = tmp_path / "coco"
    with zipfile.ZipFile(archive) as zf:
        assert sorted(zf.namelist()) == sorted(
            f"annotations/{k}_{s}.json" for k in ("instances", "captions") for s in coco.SPLITS
        )
        zf.extractall(root)
    inst = {s: coco.load_instances(root / "annotations" / f"instances_{s}.json") for s in coco.SPLITS}
    assert len(inst["val2017"].class_names) == 80 and inst["val2017"].class_names[72] == "refrigerator"
    files = {c: apply_mirror(f"{base}/{c}.txt", tmp_path) for c in aset["classes"]}
    assert {c: toy_mirror.sha256_of(p) for c, p in files.items()} == lists
    tables = [inst[s].images.assign(split=s) for s in coco.SPLITS]
    sel = coco.paper_selection(files, root=root, images=tables)
    assert sel.groupby("class").size().to_dict() == {c: 2 for c in aset["classes"]}
    assert any("staticflickr" in r for r in sel["reason"]), "one list line is a flickr URL, as in the authors' lists"
    for url in sel["source"]:
        assert (tmp_path / url.removeprefix("http://")).is_file()
    # the captions give each gendered class its perceived gender
    caps = pd.concat([coco.load_captions(root / "annotations" / f"captions_{s}.json") for s in coco.SPLITS])
    gender = coco.caption_gender(caps, ["man"], ["woman"])
    for image_id, cls in zip(sel["image_id"].astype(int), sel["class"]):
        want = (
            "man" if cls.endswith("man") and not cls.endswith("woman") else "woman" if cls.endswith("woman") else None
        )
        assert gender.get(image_id) == want, (image_id, cls)
    # the same mirror serves a curated set: the curation rules pick exactly the listed images
    words = yaml.safe_load((ROOT / "resources" / "gender_words.yaml").read_text())["lists"]["wang2021"]
    options = {k: v for k, v in aset["curation"].items() if k not in ("sizes", "gender_words")}
    curated = coco.curate(
        list(inst.values()),
        caps,
        {c: 2 for c in aset["classes"]},
        root=root,
        male_words=words["male"],
        female_words=words["female"],
        **options,
    )
    listed = sel[sel["class"] != "random"].set_index("image_id")["class"].sort_index()
    pd.testing.assert_series_equal(
        curated[curated["class"] != "random"].set_index("image_id")["class"].sort_index(), listed
    )
    # the evaluation images (val2017 outside the lists) have captions that agree on man or woman, but two
    val_ids = set(inst["val2017"].images["id"].astype(str)) - set(sel["image_id"])
    got = coco.caption_attributes(sorted(val_ids), caps, words["male"], words["female"], punctuation="delete")
    assert got["attribute"].value_counts().to_dict() == {"man": 5, "woman": 5}
    assert got["source"].str.contains("disagree").sum() == 1
    # the training split (train2017 less the analysis images) shows each object beside a person whose
    # captions agree: four of one gender and one of the other, by turns in name order (an intervention's input)
    train = coco.make_split(inst["train2017"], dataset="coco", name="train", root=root, exclude=sel["image_id"])
    attrs = coco.caption_attributes(train.frame["image_id"], caps, words["male"], words["female"], punctuation="delete")
    pairs = train.frame.assign(attribute=attrs["attribute"].to_numpy()).explode("labels").dropna(subset=["attribute"])
    counts = pairs[pairs["labels"].isin(aset["curation"]["objects"].values())].groupby(["labels", "attribute"]).size()
    assert counts.to_dict() == {
        ("car", "man"): 4,
        ("car", "woman"): 1,
        ("refrigerator", "man"): 1,
        ("refrigerator", "woman"): 4,
        ("stop sign", "man"): 4,
        ("stop sign", "woman"): 1,
        ("surfboard", "man"): 1,
        ("surfboard", "woman"): 4,
    }
    assert attrs["attribute"].isna().sum() == 5  # the neutral captions of the five other training images
    # config/paper.yaml's intervention reaches its target there: one man and one woman beside each object
    spec = PAPER["datasets"]["coco_independent"]
    table = intervene(train, Attributes("coco", "train", "-", coco.ATTRIBUTES, ("person",), attrs), spec, "fix")[2]
    after = table[table["when"] == "after"].set_index(["object", "attribute"])
    assert set(after.index.get_level_values(0)) == set(spec["objects"])
    assert (after["images"] == 1).all() and (after["share"] == after["target"]).all() and (after["target"] == 0.5).all()


def test_openimages_mirror_parses_with_real_mids(tmp_path):
    aset = PAPER["analysis_sets"]["openimages"]
    cur = aset["curation"]
    lists, ann = toy_mirror.build_openimages(
        tmp_path,
        aset["paper"]["base_url"],
        aset["classes"],
        objects=cur["objects"],
        genders=cur["genders"],
        sizes=toy_mirror.ToySizes(per_class=2, n_train=4, n_val=3, size=32),
    )
    assert set(ann) == set(oi.FILES) and len(lists) == len(aset["classes"])
    local = {n: apply_mirror(url, tmp_path) for n, (url, _) in oi.FILES.items()}
    classes = oi.load_classes(local["class-descriptions-boxable.csv"])
    assert dict(zip(classes["name"], classes["mid"])) == oi.MIDS
    labels = oi.load_labels(local["validation-annotations-human-imagelabels-boxable.csv"], classes)
    negatives = oi.load_labels(
        local["validation-annotations-human-imagelabels-boxable.csv"], classes, verified_only=False
    )
    assert len(negatives) > len(labels), "verified-absent labels are in the file and left out"
    # the training split's people beside each curation object, 4 : 1 of one gender (an intervention's input)
    train = oi.load_labels(local["train-annotations-human-imagelabels-boxable.csv"], classes)
    split = oi.make_split(train, classes, dataset="oi", name="train", source_split="train", root=tmp_path)
    attrs = oi.image_attributes(split.frame["image_id"], train, classes, None).set_index("image_id")["attribute"]
    for i, name in enumerate(sorted(cur["objects"].values())):
        beside = split.frame.loc[[name in ls for ls in split.frame["labels"]], "image_id"]
        seen = attrs[beside].dropna().value_counts().to_dict()
        assert seen == ({"man": 4, "woman": 1} if i % 2 == 0 else {"woman": 4, "man": 1}), (name, seen)
    # the curation rules pick each analysis image for the class it is listed in
    sizes = {c: 2 for c in aset["classes"]}
    options = {k: v for k, v in cur.items() if k != "sizes"}
    picked = oi.curate(labels, classes, sizes, root=tmp_path, **options)
    listed = {
        line.strip(): c
        for c in aset["classes"]
        for line in open(apply_mirror(f"{aset['paper']['base_url']}/{c}.txt", tmp_path))
    }
    assert {
        i: listed.get(i) for i in picked["image_id"] if picked.set_index("image_id").loc[i, "class"] != "random"
    } == {i: c for i, c in zip(picked["image_id"], picked["class"]) if c != "random"}
    # the test split's labels and MIAP boxes give the planned attributes: MIAP first, then the labels
    test = oi.load_labels(local["test-annotations-human-imagelabels-boxable.csv"], classes)
    ids = sorted(set(test["image_id"]))
    attrs = oi.image_attributes(ids, test, classes, oi.load_miap(local[oi.MIAP_FILE])).set_index("image_id")
    assert len(ids) == 12 and attrs["attribute"].value_counts().to_dict() == {"man": 5, "woman": 5}
    assert attrs["source"].str.startswith("MIAP").sum() == 6 and attrs["source"].str.startswith("labels").sum() == 6
    first = toy_mirror._oi_id("test", 0)  # a Masculine box beside a Woman label
    assert attrs.loc[first, "attribute"] == "man" and "Woman" in set(
        test.loc[test["image_id"] == first, "mid"].map(dict(zip(classes["mid"], classes["name"])))
    )


@pytest.mark.parametrize("name", ["resnet18", "moco_r50_v1", "simclr_r50_v1"])
def test_toy_weights_load_through_the_real_loaders(tmp_path, name):
    spec = REGISTRY[name]
    path = write_weights(spec, tmp_path / "w.bin")
    model = create_backbone(spec, path)
    assert model.embed_dim == (512 if name == "resnet18" else 2048)


def test_toy_crop_is_the_toy_size_or_a_vits_patch_multiple_above_it():
    assert toy_crop(REGISTRY["resnet50"], 48) == 48
    assert toy_crop(REGISTRY["clip_vit_b32"], 48) == 64 and toy_crop(REGISTRY["clip_vit_b32"], 64) == 64
    assert toy_crop(resolve_spec("vitb16", {"source": "open_clip", "arch": "ViT-B-16"}), 48) == 48
    assert toy_crop(resolve_spec("rn50", {"source": "open_clip", "arch": "RN50"}), 48) is None


def test_dataset_checksums_replace_the_published_digests():
    files = {"a.zip": ("http://x/a.zip", "f" * 32), "b.csv": ("http://x/b.csv", None)}
    assert pinned({"kind": "coco"}, files) == {"a.zip": {"md5": "f" * 32}, "b.csv": {}}
    assert pinned({"kind": "coco", "checksums": {"a.zip": "0" * 64, "b.csv": "1" * 32}}, files) == {
        "a.zip": {"sha256": "0" * 64},
        "b.csv": {"md5": "1" * 32},
    }
    with pytest.raises(ValueError, match=r"checksums: unknown file\(s\) \['c.csv'\]"):
        pinned({"kind": "coco", "checksums": {"c.csv": "0" * 64}}, files)
