"""A toy mirror of COCO 2017 and Open Images V4 in their real formats and ``wget -x`` layout.

Every file sits where ``biastransfer.data.download.apply_mirror`` looks for its real URL
(``<mirror>/<host>/<path>``): the COCO annotation zip and images, the Open Images class descriptions,
human-verified label CSVs and images, and the authors' analysis-set lists at the pinned-commit path
of a config's ``analysis_sets.<name>.paper.base_url``. The images are small JPEGs with one coloured
square per label (``label_image``), so a classifier can learn them. Analysis images carry annotations
that satisfy the curation rules (``coco.curate``, ``openimages.curate``) for their class, so the
same mirror serves ``source: paper`` and ``source: curated`` analysis sets.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from biastransfer.data import coco
from biastransfer.data import openimages as oi
from biastransfer.data.download import apply_mirror
from biastransfer.vocabulary import COCO_CATEGORIES

# COCO's supercategories by category id range (cocodataset.org "format-data"), first id of each.
SUPERCATEGORIES = [
    (1, "person"),
    (2, "vehicle"),
    (10, "outdoor"),
    (16, "animal"),
    (27, "accessory"),
    (34, "sports"),
    (44, "kitchen"),
    (52, "food"),
    (62, "furniture"),
    (72, "electronic"),
    (78, "appliance"),
    (84, "indoor"),
]
# Finetuning images get one or two of these labels (COCO names / Open Images display names).
_COCO_TRAIN_LABELS = ["person", "car", "dog", "chair", "surfboard", "refrigerator", "stop sign", "bicycle"]
_OI_TRAIN_LABELS = ["Person", "Car", "Mammal", "Surfboard", "Refrigerator", "Stop sign", "Sports equipment"]
_COLOURS = [
    (230, 40, 40),
    (40, 200, 60),
    (50, 80, 230),
    (240, 200, 30),
    (200, 50, 220),
    (30, 210, 210),
    (250, 130, 30),
    (120, 60, 20),
    (160, 160, 255),
    (20, 20, 20),
]
_WORDS = {"man": "a man", "woman": "a woman"}


def label_image(labels, classes, size: int, seed: int) -> Image.Image:
    """Grey noise with a coloured square in the class's grid cell for every label."""
    rng = np.random.default_rng(seed)
    pixels = rng.integers(100, 156, size=(size, size, 3), dtype=np.uint8)
    cell = size // 4
    for label in labels:
        k = list(classes).index(label)
        r, c = divmod(k % 16, 4)
        pixels[r * cell : (r + 1) * cell, c * cell : (c + 1) * cell] = _COLOURS[k % len(_COLOURS)]
    return Image.fromarray(pixels)


def _jpeg(labels, classes, size: int, seed: int) -> bytes:
    buf = io.BytesIO()
    label_image(labels, classes, size, seed).save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def _write(mirror: Path, url: str, data: bytes) -> Path:
    path = Path(apply_mirror(url, mirror))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _parts(cls: str, objects: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(object, gender) of an analysis class name such as ``car_man``, ``car``, ``man`` or ``random``."""
    for o in sorted(objects, key=len, reverse=True):
        if cls == o:
            return o, None
        if cls.startswith(o + "_"):
            return o, cls[len(o) + 1 :]
    return None, (cls if cls in _WORDS else None)


def sha256_of(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# --------------------------------------------------------------------------- COCO 2017


#: Captions of the toy evaluation images by what they say of the person: agreeing man / woman words, both, or none.
_TEST_CAPTIONS = {
    "man": ["a man next to a {noun}.", "A man with a {noun} and a dog"],
    "woman": ["a woman next to a {noun}.", "A woman with a {noun} and a dog"],
    "both": ["a man next to a {noun}.", "a woman with a dog"],
    "none": ["someone next to a {noun} and a dog"],
}


def _test_kind(k: int, n_test: int) -> str:
    """What evaluation image ``k`` of ``n_test`` shows: man and woman by turns, the last two both and neither."""
    if k == n_test - 1:
        return "none"
    if k == n_test - 2:
        return "both"
    return ("man", "woman")[k % 2]


#: Training images per curation object that show a person beside it: all but one of one gender (man beside
#: the first object in name order, woman beside the second, ...), so that an intervention to the split's
#: overall ratio (even) has a skew to cut that exceeds the subsample's tolerance of one image.
_TRAIN_PEOPLE = 5


def _coco_plan(classes, per_class: int, n_train: int, n_val: int, objects: Mapping[str, str], n_test: int = 0):
    """(split, image id, [(category, area fraction)], captions, analysis class or None). The ``n_test``
    val2017 images of the evaluation split show a person, an object and a dog (three categories: no
    curation rule picks them) with captions that agree on man or woman, but for the last two (both, neither);
    train2017 has ``_TRAIN_PEOPLE`` such images per object, with a skewed gender (an intervention's input)."""
    plan, next_id = [], {"val2017": 100, "train2017": 500_000}

    def add(split, cats, caps, cls):
        plan.append((split, next_id[split], cats, caps, cls))
        next_id[split] += 1

    for k, cls in enumerate(c for c in classes for _ in range(per_class)):
        split = ("val2017", "train2017")[k % 2]
        obj, gender = _parts(cls, objects)
        cats = ([(objects[obj], 0.3)] if obj else []) + ([("person", 0.2)] if gender else [])
        if cls == "random":
            cats = [(_COCO_TRAIN_LABELS[k % len(_COCO_TRAIN_LABELS)], 0.1), ("bench", 0.05)]
        noun = obj.replace("_", " ") if obj else "street"
        caps = (
            [f"{_WORDS[gender]} with a {noun}.", f"A photo of {_WORDS[gender]}"]
            if gender
            else [f"a {noun} seen up close"]
        )
        add(split, cats, caps, cls)
    for split, n in (("train2017", n_train), ("val2017", n_val)):
        for k in range(n):
            if k == n - 1:  # COCO has images without annotations; they stay in the splits unlabelled
                add(split, [], ["an empty room"], None)
                continue
            picks = {
                _COCO_TRAIN_LABELS[k % len(_COCO_TRAIN_LABELS)],
                _COCO_TRAIN_LABELS[(3 * k + 1) % len(_COCO_TRAIN_LABELS)],
            }
            add(split, [(c, 0.15) for c in sorted(picks)], ["people and things"], None)
    nouns = sorted(objects.values())
    for i, noun in enumerate(nouns):
        major, minor = ("man", "woman")[i % 2], ("woman", "man")[i % 2]
        for gender in [major] * (_TRAIN_PEOPLE - 1) + [minor]:
            caps = [f"{_WORDS[gender]} with a {noun} and a dog", f"A photo of {_WORDS[gender]}."]
            add("train2017", [("person", 0.2), (noun, 0.15), ("dog", 0.1)], caps, None)
    for k in range(n_test):
        noun = nouns[k % len(nouns)]
        caps = [c.format(noun=noun) for c in _TEST_CAPTIONS[_test_kind(k, n_test)]]
        add("val2017", [("person", 0.2), (noun, 0.15), ("dog", 0.1)], caps, None)
    return plan


@dataclass(frozen=True)
class ToySizes:
    """Images per analysis-set class, in the training and validation splits and in the test split (the
    evaluation images), and the side of every image in pixels."""

    per_class: int = 3
    n_train: int = 16
    n_val: int = 8
    n_test: int = 12
    size: int = 48


def build_coco(
    mirror: Path,
    paper_base_url: str,
    classes,
    *,
    objects: Mapping[str, str],
    sizes: ToySizes = ToySizes(),
) -> tuple[dict[str, str], dict[str, str]]:
    """Write the COCO annotation zip, images and paper lists (``sizes``: see :class:`ToySizes`; the training
    images with a person beside each object: see ``_coco_plan``).

    Returns (``{class: sha256}`` of the lists, ``{file name: sha256}`` of the annotation zip).
    """
    names = [n for _, n in COCO_CATEGORIES]
    ids = {n: i for i, n in COCO_CATEGORIES}
    cats = [
        {"id": i, "name": n, "supercategory": next(s for lo, s in reversed(SUPERCATEGORIES) if i >= lo)}
        for i, n in COCO_CATEGORIES
    ]
    plan = _coco_plan(classes, sizes.per_class, sizes.n_train, sizes.n_val, objects, sizes.n_test)
    files, lists = {}, {c: [] for c in classes}
    for split in coco.SPLITS:
        images, anns, caps = [], [], []
        for n, (s, image_id, objs, texts, cls) in enumerate(plan):
            if s != split:
                continue
            url = coco.image_url(split, image_id)
            flickr = f"http://farm{1 + image_id % 9}.staticflickr.com/{image_id % 9000}/{image_id}_toy_z.jpg"
            images.append(
                {
                    "license": 1 + image_id % 8,
                    "file_name": f"{image_id:012d}.jpg",
                    "coco_url": url,
                    "height": sizes.size,
                    "width": sizes.size,
                    "date_captured": "2013-11-14 11:18:45",
                    "flickr_url": flickr,
                    "id": image_id,
                }
            )
            for cat, frac in objs:
                area = frac * sizes.size * sizes.size
                side = float(np.sqrt(area))
                anns.append(
                    {
                        "segmentation": [[1.0, 1.0, side, 1.0, side, side, 1.0, side]],
                        "area": area,
                        "iscrowd": 0,
                        "image_id": image_id,
                        "bbox": [1.0, 1.0, side, side],
                        "category_id": ids[cat],
                        "id": 900_000 + len(anns) + 10_000 * len(files),
                    }
                )
            caps += [
                {"image_id": image_id, "id": 1_000_000 + len(caps) + 10_000 * len(files), "caption": t} for t in texts
            ]
            _write(mirror, url, _jpeg([c for c, _ in objs], names, sizes.size, seed=n))
            if cls is not None:  # the authors' lists hold coco_url lines and, rarely, a flickr URL
                lists[cls].append(flickr if cls == "random" and not lists[cls] else url)
        info = {"description": "biastransfer toy COCO 2017", "version": "1.0", "year": 2017}
        licenses = [{"url": "http://creativecommons.org/licenses/by/2.0/", "id": i, "name": "toy"} for i in range(1, 9)]
        files[f"annotations/instances_{split}.json"] = {
            "info": info,
            "licenses": licenses,
            "images": images,
            "annotations": anns,
            "categories": cats,
        }
        files[f"annotations/captions_{split}.json"] = {
            "info": info,
            "licenses": licenses,
            "images": images,
            "annotations": caps,
        }
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, json.dumps(data))
    archive = _write(mirror, coco.ANNOTATIONS_URL, buf.getvalue())
    return _write_lists(mirror, paper_base_url, lists), {"annotations_trainval2017.zip": sha256_of(archive)}


def _write_lists(mirror: Path, base_url: str, lists: Mapping[str, list]) -> dict[str, str]:
    out = {}
    for cls, lines in lists.items():
        path = _write(mirror, f"{base_url.rstrip('/')}/{cls}.txt", ("\n".join(lines) + "\n").encode())
        out[cls] = sha256_of(path)
    return out


# --------------------------------------------------------------------------- Open Images V4


_MIAP_HEADER = (
    "ImageID,LabelName,Confidence,XMin,XMax,YMin,YMax,IsOccluded,IsTruncated,IsGroupOf,IsDepictionOf,IsInside,"
    "GenderPresentation,AgePresentation\n"
)


def _oi_id(split: str, k: int) -> str:
    return hashlib.sha1(f"{split}/{k}".encode()).hexdigest()[:16]


def build_openimages(
    mirror: Path,
    paper_base_url: str,
    classes,
    *,
    objects: Mapping[str, str],
    genders: Mapping[str, str],
    sizes: ToySizes = ToySizes(),
) -> tuple[dict[str, str], dict[str, str]]:
    """Write the Open Images label files (the test split's too), MIAP boxes, images and paper lists.

    The training split also has ``_TRAIN_PEOPLE`` images per curation object with a person of a skewed gender
    beside it (see ``_coco_plan``). The ``sizes.n_test`` test images show a person and an object; their attribute comes from MIAP boxes for
    the first four (the first with a Woman label that its Masculine box overrides), from a Man or Woman
    label for the rest, but for the last two: MIAP boxes of both presentations, and one Unknown box.

    Returns (``{class: sha256}`` of the lists, ``{file name: sha256}`` of the annotation files).
    """
    display = list(oi.MIDS)
    rows = {"train": [], "validation": [], "test": []}
    lists = {c: [] for c in classes}
    plan, boxes = [], []
    for k, cls in enumerate(c for c in classes for _ in range(sizes.per_class)):
        obj, gender = _parts(cls, objects)
        labels = ([objects[obj]] if obj else []) + ([genders[gender], "Person"] if gender else [])
        if cls == "random":
            labels = ["Surfboard"] if k % 2 else ["Refrigerator"]
        plan.append(("validation", _oi_id("analysis", k), labels, cls))
    for split, n in (("train", sizes.n_train), ("validation", sizes.n_val)):
        for k in range(n):
            picks = {_OI_TRAIN_LABELS[k % len(_OI_TRAIN_LABELS)], _OI_TRAIN_LABELS[(2 * k + 3) % len(_OI_TRAIN_LABELS)]}
            plan.append((split, _oi_id(split, k), sorted(picks), None))
    # as COCO's (_coco_plan): _TRAIN_PEOPLE training images a curation object with a person of a skewed
    # gender beside it (a Man or Woman label: the training split's attribute), an intervention's input
    for i, obj in enumerate(sorted(objects.values())):
        major, minor = ("man", "woman")[i % 2], ("woman", "man")[i % 2]
        for j, gender in enumerate([major] * (_TRAIN_PEOPLE - 1) + [minor]):
            plan.append(
                ("train", _oi_id("train-people", _TRAIN_PEOPLE * i + j), sorted([obj, genders[gender], "Person"]), None)
            )
    presentation = {"man": ["Predominantly Masculine"], "woman": ["Predominantly Feminine"]}
    for k in range(sizes.n_test):
        image_id, kind = _oi_id("test", k), _test_kind(k, sizes.n_test)
        labels = ["Person", _OI_TRAIN_LABELS[1 + k % (len(_OI_TRAIN_LABELS) - 1)]]
        if kind in ("man", "woman") and k >= 4:
            labels.append(genders[kind])
        elif k == 0:
            labels.append(genders["woman"])  # MIAP's Masculine box decides, not this label
        miap = {
            "both": ["Predominantly Masculine", "Predominantly Feminine"],
            "none": ["Unknown"],
        }.get(kind, presentation.get(kind) if k < 4 else [])
        boxes += [(image_id, p) for p in miap]
        plan.append(("test", image_id, sorted(set(labels)), None))
    for n, (split, image_id, labels, cls) in enumerate(plan):
        rows[split] += [f"{image_id},verification,{oi.MIDS[name]},1" for name in labels]
        # a verified-absent label: Confidence 0 must not count as a positive
        absent = next(x for x in ("Stop sign", "Mammal") if x not in labels)
        rows[split].append(f"{image_id},verification,{oi.MIDS[absent]},0")
        _write(mirror, oi.image_url(split, image_id), _jpeg(labels, display, sizes.size, seed=10_000 + n))
        if cls is not None:
            lists[cls].append(image_id)
    ann = {}
    for name, (url, _) in oi.FILES.items():
        if name.startswith("class-descriptions"):
            data = "".join(f"{mid},{disp}\n" for disp, mid in oi.MIDS.items())
        elif name == oi.MIAP_FILE:
            data = _MIAP_HEADER + "".join(
                f"{i},{oi.MIDS['Person']},1,0.1,0.6,0.2,0.9,0,0,0,0,0,{p},Middle\n" for i, p in boxes
            )
        else:
            split = name.split("-", 1)[0]
            data = "ImageID,Source,LabelName,Confidence\n" + "\n".join(rows[split]) + "\n"
        ann[name] = sha256_of(_write(mirror, url, data.encode()))
    return _write_lists(mirror, paper_base_url, lists), ann
