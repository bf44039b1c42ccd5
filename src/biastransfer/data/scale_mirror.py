"""A scale mirror of COCO 2017 and Open Images V4: the annotation files at their real row counts, tiny pixels.

Every file sits where ``biastransfer.data.download.apply_mirror`` looks for its real URL (as
:mod:`biastransfer.data.toy_mirror`, which writes the same formats at toy size): the COCO annotation zip
(instances and captions of train2017 and val2017), the Open Images V4 class descriptions, the
human-verified image-label CSVs of train, validation and test, the MIAP boxes of the test split, and the
authors' analysis-set lists at the config's pinned-commit path. Row counts are :class:`ScaleCounts`
(the real files' by default, any fraction of them with :meth:`ScaleCounts.scaled`). The rows are
random but seeded and plausible (category and label frequencies, captions with and without gender
words, crowd annotations, verified negatives, images without annotations); the analysis images are
planted so that they meet the curation rules of their class (``coco.curate``, ``openimages.curate``),
so the mirror serves ``source: paper`` and ``source: curated`` analysis sets.

Pixels: the analysis images are distinct 8 x 8 JPEGs in the mirror (the run fetches and hashes them);
:func:`place_images` puts hard links to a few tiny JPEGs wherever a split's images are expected on disk
(a rule that only checks or copies them needs no more). Nothing here can stand for real pixels.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
from PIL import Image

from biastransfer.data import coco
from biastransfer.data import openimages as oi
from biastransfer.data.download import apply_mirror
from biastransfer.data.toy_mirror import SUPERCATEGORIES
from biastransfer.hashing import file_digest
from biastransfer.vocabulary import COCO_CATEGORIES


@dataclass(frozen=True)
class ScaleCounts:
    """Rows of each annotation file. COCO 2017 (cocodataset.org; the annotation zip of
    docs/sources.md §2): 118,287 / 5,000 images, 860,001 / 36,781 instance annotations and 591,753 /
    25,014 captions in train2017 / val2017. Open Images V4 boxable (docs/sources.md §4): 1,743,042 train,
    41,620 validation and 125,436 test images; no row count of the V4 label files is recorded there, so
    their rows are those that give the byte sizes of the V5 copies (376,764,810, 10,649,275 and
    32,055,857 B at about 43 B a row). MIAP: boxes on 22,590 test images (docs/datasets.md), about three
    boxes an image (an assumption: no count is recorded)."""

    coco_train_images: int = 118_287
    coco_train_annotations: int = 860_001
    coco_train_captions: int = 591_753
    coco_val_images: int = 5_000
    coco_val_annotations: int = 36_781
    coco_val_captions: int = 25_014
    oi_train_images: int = 1_743_042
    oi_train_rows: int = 8_760_000
    oi_validation_images: int = 41_620
    oi_validation_rows: int = 247_600
    oi_test_images: int = 125_436
    oi_test_rows: int = 745_000
    miap_test_images: int = 22_590
    miap_test_boxes: int = 68_000

    def scaled(self, factor: float) -> ScaleCounts:
        """Every count times ``factor`` (at least 1)."""
        return replace(self, **{f.name: max(1, round(getattr(self, f.name) * factor)) for f in fields(self)})


def tiny_jpeg(seed: int, side: int = 8) -> bytes:
    """A ``side`` x ``side`` JPEG of seeded noise (distinct seeds: distinct files)."""
    pixels = np.random.default_rng(seed).integers(0, 256, size=(side, side, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def _write(mirror: Path, url: str, data: bytes) -> Path:
    path = Path(apply_mirror(url, mirror))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _write_lists(mirror: Path, base_url: str, lists: Mapping[str, list]) -> dict[str, str]:
    return {
        cls: file_digest(_write(mirror, f"{base_url.rstrip('/')}/{cls}.txt", ("\n".join(lines) + "\n").encode()))
        for cls, lines in lists.items()
    }


def _parts(cls: str, objects: Iterable[str], genders: Iterable[str]) -> tuple[str | None, str | None]:
    """(object, gender) of an analysis class name such as ``car_man``, ``car``, ``man`` or ``random``."""
    for o in sorted(objects, key=len, reverse=True):
        if cls == o:
            return o, None
        if cls.startswith(o + "_") and cls[len(o) + 1 :] in genders:
            return o, cls[len(o) + 1 :]
    return None, (cls if cls in genders else None)


def place_images(paths: Iterable[str | os.PathLike], *, per_file: int = 50_000, seed: int = 0) -> int:
    """Hard links at ``paths`` to tiny JPEGs (a new one every ``per_file`` links: file systems limit the
    links of one file); existing paths are left alone. Returns the number of links made."""
    made, source = 0, None
    for path in map(Path, paths):
        if path.exists():
            continue
        if made % per_file == 0:
            source = path.with_name(f".tiny-{seed}-{made // per_file}.jpg")
            source.parent.mkdir(parents=True, exist_ok=True)
            source.write_bytes(tiny_jpeg(seed * 1_000_003 + made // per_file))
        path.parent.mkdir(parents=True, exist_ok=True)
        os.link(source, path)
        made += 1
    return made


def _spread(rng: np.random.Generator, total: int, n: int, minimum: int, shape: float = 0.8) -> np.ndarray:
    """``n`` counts of at least ``minimum`` summing to ``total``, over-dispersed (a few large ones)."""
    if n == 0:
        if total:
            raise ValueError(f"{total} rows for no image")
        return np.zeros(0, dtype=np.int64)
    extra = total - minimum * n
    if extra < 0:
        raise ValueError(f"{total} rows cannot give {n} images at least {minimum} each")
    weights = rng.gamma(shape, size=n)
    return minimum + rng.multinomial(extra, weights / weights.sum())


# --------------------------------------------------------------------------- COCO 2017

_MALE = ("man", "men", "boy", "gentleman", "male")
_FEMALE = ("woman", "women", "girl", "lady", "female")
_NEUTRAL = ("person", "people", "player", "child", "skier")
_VERBS = ("standing next to", "holding", "looking at", "riding", "sitting near")
_PLACES = ("on a street.", "in a kitchen.", "at the beach.", "in a park.", "near a building.")
_SIZES = np.array([(640, 480), (480, 640), (640, 427), (427, 640), (500, 375), (640, 360)])
_EMPTY = "An empty room with a table."
_PERSON_SHARE = 0.305  # person annotations in instances_train2017: 262,465 of 860,001


@dataclass(frozen=True)
class _CocoImage:
    split: str
    image_id: int
    objects: tuple  # (category name, area fraction) per annotation
    gender: str | None  # what its captions say: man, woman or None (no gender word)


def _coco_planted(sizes: Mapping[str, int], objects: Mapping[str, str], ids: Iterator) -> list[tuple[str, _CocoImage]]:
    """Analysis images meeting the curated rule of their class, alternately in val2017 and train2017."""
    out, k = [], 0
    for cls, n in sizes.items():
        obj, gender = _parts(cls, objects, ("man", "woman"))
        for _ in range(int(n)):
            cats = ([(objects[obj], 0.3)] if obj else []) + ([("person", 0.2)] if gender else [])
            if cls == "random":
                cats = [(("bench", "dog", "chair", "bicycle")[k % 4], 0.1)]
            out.append((cls, _CocoImage(("val2017", "train2017")[k % 2], next(ids), tuple(cats), gender)))
            k += 1
    return out


def _coco_split_json(
    rng: np.random.Generator, split: str, image_ids: np.ndarray, n_ann: int, n_cap: int, planted: Sequence[_CocoImage]
) -> tuple[Iterable[str], Iterable[str]]:
    """(instances, captions) JSON text chunks of one split: the planted images first, then the rest."""
    names = [n for _, n in COCO_CATEGORIES]
    cat_ids = np.array([i for i, _ in COCO_CATEGORIES])
    index = {n: k for k, n in enumerate(names)}
    n_img, n_planted = len(image_ids), len(planted)
    size_index = rng.integers(0, len(_SIZES), n_img)
    size = _SIZES[size_index]
    # annotations: planted ones as planned; about 0.9% of the other images have none (1,021 of train2017)
    p_img = [k for k, im in enumerate(planted) for _ in im.objects]
    p_cat = [index[c] for im in planted for c, _ in im.objects]
    p_frac = [f for im in planted for _, f in im.objects]
    bulk = np.arange(n_planted, n_img)
    empty = rng.random(len(bulk)) < 0.0086
    filled = bulk[~empty]
    counts = _spread(rng, n_ann - len(p_img), len(filled), 1)
    ann_img = np.concatenate([np.array(p_img, dtype=np.int64), np.repeat(filled, counts)])
    others = np.arange(1, 80)
    weights = 1.0 / np.arange(1, 80) ** 0.7
    bulk_cat = np.where(
        rng.random(len(ann_img) - len(p_img)) < _PERSON_SHARE,
        0,
        rng.choice(others, len(ann_img) - len(p_img), p=weights / weights.sum()),
    )
    ann_cat = np.concatenate([np.array(p_cat, dtype=np.int64), bulk_cat])
    frac = np.concatenate([np.array(p_frac), np.exp(rng.uniform(np.log(5e-4), np.log(0.6), len(bulk_cat)))])
    crowd = np.concatenate([np.zeros(len(p_img), dtype=bool), rng.random(len(bulk_cat)) < 0.011])
    size_of = size_index[ann_img]
    area = np.round(frac * size[ann_img, 0] * size[ann_img, 1], 2)
    # captions: as many an image (5 in COCO), the rest one more each for a few images
    per_image = np.full(n_img, n_cap // n_img)
    per_image[rng.choice(n_img, n_cap % n_img, replace=False)] += 1
    first_cat = np.full(n_img, -1)
    first_cat[ann_img[::-1]] = ann_cat[::-1]
    has_person = np.zeros(n_img, dtype=bool)
    has_person[ann_img[ann_cat == 0]] = True
    mode = np.where(has_person, rng.choice(4, n_img, p=[0.35, 0.2, 0.1, 0.35]), 3)  # male, female, both, none
    for k, im in enumerate(planted):
        mode[k] = {"man": 0, "woman": 1}.get(im.gender, 3)

    def captions():
        """Caption objects in chunks of 100,000: words of the image's mode, its first category as the thing."""
        cap_img = np.repeat(np.arange(n_img), per_image)
        nth = np.arange(len(cap_img)) - np.repeat(np.cumsum(per_image) - per_image, per_image)
        word, verb, place = (rng.integers(0, 5, len(cap_img)).tolist() for _ in range(3))
        modes, things, ids = mode.tolist(), first_cat.tolist(), image_ids.tolist()
        chunk = []
        for j, (i, n) in enumerate(zip(cap_img.tolist(), nth.tolist())):
            who = (_MALE, _FEMALE, (_MALE, _FEMALE)[n % 2], _NEUTRAL)[modes[i]][word[j]]
            thing = names[things[i]] if things[i] > 0 else "table"
            text = f"A {who} {_VERBS[verb[j]]} a {thing} {_PLACES[place[j]]}" if things[i] >= 0 else _EMPTY
            chunk.append(f'{{"image_id": {ids[i]}, "id": {j + 1}, "caption": "{text}"}}')
            if len(chunk) == 100_000:
                yield chunk
                chunk = []
        if chunk:
            yield chunk

    header = (
        '{"info": {"description": "biastransfer scale COCO 2017", "year": 2017}, '
        f'"licenses": [{_LICENSES}], "images": ['
    )
    images = ",".join(
        f'{{"license": {1 + k % 8}, "file_name": "{i:012d}.jpg", "coco_url": "{coco.image_url(split, i)}", '
        f'"height": {hh}, "width": {ww}, "date_captured": "2013-11-14 11:18:45", '
        f'"flickr_url": "{_flickr_url(i)}", "id": {i}}}'
        for k, (i, (ww, hh)) in enumerate(zip(image_ids.tolist(), size.tolist()))
    )
    polygons = []
    for _ in range(2000):  # COCO polygons average about 25 points
        n = int(rng.integers(8, 40)) * 2
        polygons.append("[[" + ", ".join(f"{x:.2f}" for x in rng.uniform(0, 640, n)) + "]]")
    pick = rng.integers(0, len(polygons), len(ann_img)).tolist()
    rle = [
        f'{{"counts": [{", ".join(str(17 + c) for c in range(3 * (k % 40 + 2)))}], "size": [{hh}, {ww}]}}'
        for k, (ww, hh) in enumerate(_SIZES.tolist())
    ]  # uncompressed RLE, as crowd annotations have

    def instances():
        yield header
        yield images
        yield '], "annotations": ['
        cols = (
            image_ids[ann_img].tolist(),
            cat_ids[ann_cat].tolist(),
            area.tolist(),
            crowd.tolist(),
            np.sqrt(area).round(2).tolist(),
            size_of.tolist(),
        )
        for start in range(0, len(ann_img), 50_000):
            yield ("," if start else "") + ",".join(
                f'{{"segmentation": {rle[s] if c else polygons[pick[j]]}, "area": {a}, "iscrowd": {int(c)}, '
                f'"image_id": {i}, "bbox": [1.0, 2.0, {d}, {d}], "category_id": {k}, "id": {j + 1}}}'
                for j, (i, k, a, c, d, s) in enumerate(zip(*(col[start : start + 50_000] for col in cols)), start)
            )
        yield '], "categories": ' + _CATEGORIES + "}"

    def caption_file():
        yield header
        yield images
        yield '], "annotations": ['
        for k, chunk in enumerate(captions()):
            yield ("," if k else "") + ",".join(chunk)
        yield "]}"

    return instances(), caption_file()


_LICENSES = ", ".join(
    f'{{"url": "http://creativecommons.org/licenses/by/2.0/", "id": {i}, "name": "cc"}}' for i in range(1, 9)
)
_CATEGORIES = json.dumps(
    [
        {"supercategory": next(s for lo, s in reversed(SUPERCATEGORIES) if i >= lo), "id": i, "name": n}
        for i, n in COCO_CATEGORIES
    ]
)


@dataclass(frozen=True)
class Written:
    """What a builder wrote: ``{class: sha256}`` of the paper lists, ``{file name: sha256}`` of the annotation
    files, ``{file name: (rows, bytes)}``, and the image paths of each split below the dataset root (the
    analysis images excluded), for :func:`place_images`."""

    lists: dict[str, str]
    checksums: dict[str, str]
    files: dict[str, tuple[int, int]]
    images: dict[str, list[str]]


def build_coco(
    mirror: str | os.PathLike,
    paper_base_url: str,
    sizes: Mapping[str, int],
    *,
    objects: Mapping[str, str],
    counts: ScaleCounts = ScaleCounts(),
    seed: int = 0,
) -> Written:
    """Write the COCO annotation zip (instances and captions of train2017 and val2017, deflated), the analysis
    images and the paper lists (``sizes``: images per analysis class; ``objects``: the curation's objects)."""
    mirror, rng = Path(mirror), np.random.default_rng(seed)
    n = {"train2017": counts.coco_train_images, "val2017": counts.coco_val_images}
    ann = {"train2017": counts.coco_train_annotations, "val2017": counts.coco_val_annotations}
    cap = {"train2017": counts.coco_train_captions, "val2017": counts.coco_val_captions}
    ids = iter((rng.choice(600_000, sum(n.values()), replace=False) + 1).tolist())
    planted = _coco_planted(sizes, objects, ids)
    lists: dict[str, list] = {c: [] for c in sizes}
    for k, (cls, im) in enumerate(planted):
        url = coco.image_url(im.split, im.image_id)
        _write(mirror, url, tiny_jpeg(k))
        lists[cls].append(_flickr_url(im.image_id) if cls == "random" and not lists[cls] else url)
    archive = Path(apply_mirror(coco.ANNOTATIONS_URL, mirror))
    archive.parent.mkdir(parents=True, exist_ok=True)
    files, images = {}, {}
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for split in coco.SPLITS:
            mine = [im for _, im in planted if im.split == split]
            if len(mine) > n[split]:
                raise ValueError(f"{len(mine)} analysis images do not fit in {n[split]} {split} images")
            bulk = np.array([next(ids) for _ in range(n[split] - len(mine))], dtype=np.int64)
            image_ids = np.concatenate([np.array([im.image_id for im in mine], dtype=np.int64), bulk])
            images[split] = [f"{split}/{i:012d}.jpg" for i in bulk.tolist()]
            texts = _coco_split_json(rng, split, image_ids, ann[split], cap[split], mine)
            for kind, chunks, rows in zip(("instances", "captions"), texts, (ann[split], cap[split])):
                name = f"annotations/{kind}_{split}.json"
                with zf.open(name, "w", force_zip64=True) as fh:
                    for chunk in chunks:
                        fh.write(chunk.encode())
                files[name] = (rows, zf.getinfo(name).file_size)
    files[archive.name] = (0, archive.stat().st_size)
    return Written(_write_lists(mirror, paper_base_url, lists), {archive.name: file_digest(archive)}, files, images)


def _flickr_url(image_id: int) -> str:
    return f"http://farm{1 + image_id % 9}.staticflickr.com/{image_id % 9000}/{image_id}_scale_z.jpg"


# --------------------------------------------------------------------------- Open Images V4

#: Shares of images with each person label (assumed, of the order seen in V4's boxable labels).
_PERSON_SHARES = {"Person": 0.25, "Human face": 0.2, "Man": 0.15, "Woman": 0.12, "Girl": 0.03, "Boy": 0.02}
_MIAP_HEADER = (
    "ImageID,LabelName,Confidence,XMin,XMax,YMin,YMax,IsOccluded,IsTruncated,IsGroupOf,IsDepictionOf,IsInside,"
    "GenderPresentation,AgePresentation"
)


def oi_classes(seed: int = 0) -> tuple[list[str], list[str]]:
    """(MIDs, display names) of 601 boxable classes: the real MIDs and names of ``openimages.MIDS``, made-up
    ``/m/...`` MIDs named ``Class <k>`` for the rest."""
    rng = np.random.default_rng(seed)
    names = list(oi.MIDS)
    mids = list(oi.MIDS.values())
    alphabet = np.array(list("0123456789abcdefghijklmnopqrstuvwxyz_"))
    while len(mids) < 601:
        mid = "/m/0" + "".join(rng.choice(alphabet, int(rng.integers(3, 7))))
        if mid not in mids:
            mids.append(mid)
            names.append(f"Class {len(names)}")
    return mids, names


def _oi_ids(rng: np.random.Generator, n: int, taken: set) -> np.ndarray:
    """``n`` new distinct 16-hex-digit ImageIDs, none in ``taken``, sorted."""
    out: set = set()
    while len(out) < n:
        out |= {f"{x:016x}" for x in rng.integers(0, 2**63, n - len(out)).tolist()} - taken
    return np.array(sorted(out), dtype=object)


def _label_rows(
    rng: np.random.Generator, n_images: int, n_rows: int, n_classes: int, person: Mapping[int, float], fixed: Mapping
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(image index, class index, confidence) rows, grouped by image: every image at least one positive,
    no (image, class) twice; ``fixed``: {image index: [(class index, confidence)]} given as is."""
    fixed_rows = sum(len(v) for v in fixed.values())
    free = np.setdiff1d(np.arange(n_images), np.fromiter(fixed, dtype=np.int64, count=len(fixed)))
    per = _spread(rng, n_rows - fixed_rows, len(free), 1, shape=2.0)
    img = np.repeat(free, per)
    weights = 1.0 / np.arange(1, n_classes + 1) ** 0.9
    for k in person:
        weights[k] = 0.0
    cls = rng.choice(n_classes, len(img), p=weights / weights.sum())
    start = np.cumsum(per) - per
    for k, share in person.items():  # a person label in one row of about `share` of the images
        hit = np.flatnonzero(rng.random(len(free)) < share)
        cls[start[hit] + rng.integers(0, per[hit])] = k
    key = img * n_classes + cls
    while True:  # redraw repeated (image, class) pairs
        order = np.argsort(key, kind="stable")
        dup = order[1:][np.diff(key[order]) == 0]
        if not len(dup):
            break
        cls[dup] = rng.integers(0, n_classes, len(dup))
        key[dup] = img[dup] * n_classes + cls[dup]
    conf = (rng.random(len(img)) < 0.6).astype(np.int8)
    conf[start] = 1
    f_img = np.array([i for i, rows in fixed.items() for _ in rows], dtype=np.int64)
    f_cls = np.array([c for rows in fixed.values() for c, _ in rows], dtype=np.int64)
    f_conf = np.array([v for rows in fixed.values() for _, v in rows], dtype=np.int8)
    img, cls, conf = np.concatenate([img, f_img]), np.concatenate([cls, f_cls]), np.concatenate([conf, f_conf])
    order = np.argsort(img, kind="stable")
    return img[order], cls[order], conf[order]


def _write_labels(path: Path, ids: np.ndarray, mids: Sequence[str], rows: tuple) -> tuple[int, int]:
    img, cls, conf = rows
    source = np.where(np.random.default_rng(len(img)).random(len(img)) < 0.1, 1, 0).astype(np.int8)
    table = pa.table(
        {
            "ImageID": pa.array(ids, pa.string()).take(pa.array(img)),
            "Source": pa.array(["verification", "crowdsource-verification"]).take(pa.array(source)),
            "LabelName": pa.array(mids, pa.string()).take(pa.array(cls)),
            "Confidence": pa.array(conf),
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:  # the header unquoted, as in the real files
        fh.write((",".join(table.column_names) + "\n").encode())
        pacsv.write_csv(table, fh, pacsv.WriteOptions(include_header=False, quoting_style="none"))
    return len(img), path.stat().st_size


def build_openimages(
    mirror: str | os.PathLike,
    paper_base_url: str,
    sizes: Mapping[str, int],
    *,
    objects: Mapping[str, str],
    genders: Mapping[str, str],
    counts: ScaleCounts = ScaleCounts(),
    seed: int = 0,
) -> Written:
    """Write the class descriptions, the label CSVs of train, validation and test, the MIAP boxes of the
    test split, the analysis images (validation) and the paper lists (``sizes``: images per analysis class;
    ``objects``, ``genders``: the curation's display names)."""
    mirror, rng = Path(mirror), np.random.default_rng(seed + 1)
    mids, names = oi_classes(seed)
    at = {name: k for k, name in enumerate(names)}
    person = {at[name]: share for name, share in _PERSON_SHARES.items()}
    n = {"train": counts.oi_train_images, "validation": counts.oi_validation_images, "test": counts.oi_test_images}
    rows = {"train": counts.oi_train_rows, "validation": counts.oi_validation_rows, "test": counts.oi_test_rows}
    files, checksums, images, taken = {}, {}, {}, set()
    lists: dict[str, list] = {c: [] for c in sizes}
    for split in ("validation", "train", "test"):
        ids = _oi_ids(rng, n[split], taken)
        taken |= set(ids.tolist())
        fixed, analysis = {}, set()
        if split == "validation":  # the analysis images, meeting their class's curated rule
            spots = iter(rng.choice(len(ids), sum(sizes.values()), replace=False).tolist())
            for cls, size in sizes.items():
                obj, gender = _parts(cls, objects, genders)
                for _ in range(int(size)):
                    labels = ([objects[obj]] if obj else []) + ([genders[gender], "Person"] if gender else [])
                    labels = labels or ["Surfboard"]
                    absent = next(x for x in ("Stop sign", "Mammal") if x not in labels)
                    k = next(spots)
                    fixed[k] = [(at[x], 1) for x in labels] + [(at[absent], 0)]
                    analysis.add(k)
                    lists[cls].append(ids[k])
                    _write(mirror, oi.image_url(split, ids[k]), tiny_jpeg(100_000 + k))
        name = f"{split}-annotations-human-imagelabels-boxable.csv"
        url = oi.FILES[name][0]
        path = Path(apply_mirror(url, mirror))
        files[name] = _write_labels(path, ids, mids, _label_rows(rng, len(ids), rows[split], len(mids), person, fixed))
        checksums[name] = file_digest(path)
        keep = np.ones(len(ids), dtype=bool)
        keep[list(analysis)] = False
        images[split] = [f"{split}/{i}.jpg" for i in ids[keep].tolist()]
        if split == "test":
            files[oi.MIAP_FILE], checksums[oi.MIAP_FILE] = _write_miap(mirror, rng, ids, counts)
    url = oi.FILES["class-descriptions-boxable.csv"][0]
    path = _write(mirror, url, "".join(f"{m},{d}\n" for m, d in zip(mids, names)).encode())
    files[path.name], checksums[path.name] = (len(mids), path.stat().st_size), file_digest(path)
    return Written(_write_lists(mirror, paper_base_url, lists), checksums, files, images)


def _write_miap(mirror: Path, rng: np.random.Generator, ids: np.ndarray, counts: ScaleCounts) -> tuple:
    """MIAP person boxes on ``counts.miap_test_images`` of the test images: (rows, bytes), sha256."""
    boxed = np.sort(rng.choice(len(ids), min(counts.miap_test_images, len(ids)), replace=False))
    per = _spread(rng, counts.miap_test_boxes, len(boxed), 1, shape=1.5)
    img = np.repeat(boxed, per)
    presentation = np.array(["Predominantly Masculine", "Predominantly Feminine", "Unknown"])[
        rng.choice(3, len(img), p=[0.45, 0.3, 0.25])
    ]
    age = np.array(["Young", "Middle", "Older", "Unknown"])[rng.integers(0, 4, len(img))]
    x0, y0 = rng.uniform(0, 0.5, len(img)), rng.uniform(0, 0.5, len(img))
    lines = [_MIAP_HEADER] + [
        f"{ids[i]},{oi.MIDS['Person']},1,{a:.6f},{a + 0.3:.6f},{b:.6f},{b + 0.4:.6f},0,0,0,0,0,{p},{g}"
        for i, a, b, p, g in zip(img.tolist(), x0.tolist(), y0.tolist(), presentation.tolist(), age.tolist())
    ]
    path = _write(mirror, oi.FILES[oi.MIAP_FILE][0], ("\n".join(lines) + "\n").encode())
    return (len(img), path.stat().st_size), file_digest(path)
