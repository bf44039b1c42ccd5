"""COCO 2017: annotation parsing, analysis-set curation, the paper's lists, and finetuning splits.

Facts (docs/sources.md §2): images live at ``http://images.cocodataset.org/{split}/{id:012d}.jpg``;
``instances_{split}.json`` has ``images``, ``annotations`` and ``categories``; ``captions_{split}.json``
has ``images`` and ``annotations`` with a ``caption``. Image ids are written as decimal strings.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from biastransfer.data.curation import SELECTION_COLUMNS, check_class_names, class_rng, draw, list_selection
from biastransfer.data.splits import Split

BASE_URL = "http://images.cocodataset.org"
ANNOTATIONS_URL = f"{BASE_URL}/annotations/annotations_trainval2017.zip"
# md5 of the official zips (docs/sources.md §2; several independent scripts agree)
FILES = {
    "annotations_trainval2017.zip": (ANNOTATIONS_URL, "f4bbac642086de4f52a3fdda2de5fa2c"),
    "train2017.zip": (f"{BASE_URL}/zips/train2017.zip", "cced6f7f71b7629ddf16f17bbcfab6b2"),
    "val2017.zip": (f"{BASE_URL}/zips/val2017.zip", "442b8da7639aecaf257c1dceb8ba8c80"),
}
SPLITS = ("train2017", "val2017")

# "segmentation": <polygons (nested number arrays)> or <uncompressed RLE {"counts": [...], "size": [...]}>.
# These are ~80% of instances_train2017.json and never needed here; dropping them before json.loads makes
# parsing several times faster and leaner. Only number-only values match, so nothing else can be touched.
_SEGMENTATION = re.compile(rb'"segmentation"\s*:\s*(?:\[[\d\s.,eE+\-\[\]]*\]|\{[\d\s,:"a-z\[\]]*\})')


@dataclass(frozen=True)
class Instances:
    """The parts of an instances file used here. ``images``: id, file_name, coco_url, flickr_url,
    license, width, height. ``annotations``: image_id, category_id, area, iscrowd. ``categories``:
    id, name, supercategory (sorted by id)."""

    split: str
    images: pd.DataFrame
    annotations: pd.DataFrame
    categories: pd.DataFrame

    @property
    def class_names(self) -> tuple[str, ...]:
        """The 80 category names in id order: the classifier's output order (as the paper's loader)."""
        return tuple(self.categories["name"])


def _load_json(path: Path, *, strip_segmentation: bool = False) -> dict:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"{path}: cannot read ({exc})") from exc
    if strip_segmentation:
        raw = _SEGMENTATION.sub(b'"segmentation":0', raw)
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not valid JSON, perhaps truncated or damaged ({exc})") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object at the top level, got {type(data).__name__}")
    return data


def _require(data: dict, keys: Iterable[str], path: Path) -> None:
    missing = [k for k in keys if k not in data]
    if missing:
        raise ValueError(f"{path}: missing top-level key(s) {missing}; not a COCO annotation file?")


def _column(records: list, key: str, path: Path, what: str, dtype=None, default=None):
    try:
        if default is not None:
            values = [r.get(key, default) for r in records]
        else:
            values = [r[key] for r in records]
    except KeyError:
        bad = next(i for i, r in enumerate(records) if key not in r)
        raise ValueError(f"{path}: {what}[{bad}] has no {key!r} field") from None
    except (TypeError, AttributeError):
        raise ValueError(f"{path}: {what} entries must be JSON objects") from None
    return np.asarray(values, dtype=dtype) if dtype is not None else values


def split_name(path: Path) -> str:
    """``instances_val2017.json`` -> ``val2017``."""
    return path.stem.split("_", 1)[-1]


def load_instances(path: str | Path, split: str | None = None) -> Instances:
    """Parse an instances JSON (fast; segmentation is skipped). Errors name the file and the field."""
    path = Path(path)
    data = _load_json(path, strip_segmentation=True)
    _require(data, ("images", "annotations", "categories"), path)
    imgs, anns, cats = data.pop("images"), data.pop("annotations"), data.pop("categories")
    images = pd.DataFrame(
        {
            "id": _column(imgs, "id", path, "images", np.int64),
            "file_name": _column(imgs, "file_name", path, "images"),
            "coco_url": _column(imgs, "coco_url", path, "images", default=""),
            "flickr_url": _column(imgs, "flickr_url", path, "images", default=""),
            "license": _column(imgs, "license", path, "images", np.int16, default=0),
            "width": _column(imgs, "width", path, "images", np.int32),
            "height": _column(imgs, "height", path, "images", np.int32),
        }
    )
    del imgs
    annotations = pd.DataFrame(
        {
            "image_id": _column(anns, "image_id", path, "annotations", np.int64),
            "category_id": _column(anns, "category_id", path, "annotations", np.int32),
            "area": _column(anns, "area", path, "annotations", np.float64),
            "iscrowd": _column(anns, "iscrowd", path, "annotations", np.int8, default=0),
        }
    )
    del anns
    categories = pd.DataFrame(
        {
            "id": _column(cats, "id", path, "categories", np.int32),
            "name": _column(cats, "name", path, "categories"),
            "supercategory": _column(cats, "supercategory", path, "categories", default=""),
        }
    ).sort_values("id", ignore_index=True)
    unknown = set(np.unique(annotations["category_id"])) - set(categories["id"])
    if unknown:
        raise ValueError(f"{path}: annotations use category id(s) {sorted(map(int, unknown))} not in 'categories'")
    orphans = ~annotations["image_id"].isin(images["id"])
    if orphans.any():
        raise ValueError(
            f"{path}: {int(orphans.sum())} annotation(s) refer to image ids not in 'images', "
            f"e.g. {int(annotations['image_id'][orphans].iloc[0])}"
        )
    return Instances(split or split_name(path), images, annotations, categories)


def load_captions(path: str | Path) -> pd.DataFrame:
    """Captions as a frame (image_id, caption)."""
    path = Path(path)
    data = _load_json(path)
    _require(data, ("annotations",), path)
    anns = data["annotations"]
    return pd.DataFrame(
        {
            "image_id": _column(anns, "image_id", path, "annotations", np.int64),
            "caption": _column(anns, "caption", path, "annotations"),
        }
    )


#: How punctuation is treated before captions are split on whitespace: deleted ("men's" -> "mens", as
#: directional-bias-amp's caption_to_array does) or replaced by spaces ("men's" -> "men s", close to the
#: nltk.word_tokenize of women-snowboard, which splits "men's" into "men" and "'s").
PUNCTUATION = {
    "delete": str.maketrans("", "", string.punctuation),
    "space": str.maketrans({c: " " for c in string.punctuation}),
}


def _gender_hits(
    captions: pd.DataFrame, male: Iterable[str], female: Iterable[str], punctuation: str
) -> tuple[set, set]:
    """(images with a male word in some caption, images with a female word in some caption)."""
    male, female = frozenset(w.lower() for w in male), frozenset(w.lower() for w in female)
    if not male or not female or male & female:
        raise ValueError("gender word lists must be non-empty and disjoint")
    if punctuation not in PUNCTUATION:
        raise ValueError(f"punctuation must be one of {', '.join(PUNCTUATION)}, got {punctuation!r}")
    table = PUNCTUATION[punctuation]
    has_m: set = set()
    has_f: set = set()
    for image_id, caption in zip(captions["image_id"].tolist(), captions["caption"].tolist()):
        words = set(str(caption).lower().translate(table).split())
        if words & male:
            has_m.add(image_id)
        if words & female:
            has_f.add(image_id)
    return has_m, has_f


def caption_gender(
    captions: pd.DataFrame, male: Iterable[str], female: Iterable[str], *, punctuation: str = "space"
) -> pd.Series:
    """Perceived gender per image from its captions: ``"man"`` if some caption has a male word and no
    caption has a female word, ``"woman"`` the reverse; images with both or neither are left out.
    Words are matched after lower-casing and deleting punctuation or replacing it by spaces
    (``punctuation``, see :data:`PUNCTUATION`)."""
    has_m, has_f = _gender_hits(captions, male, female, punctuation)
    labels = {i: "man" for i in has_m - has_f}
    labels.update({i: "woman" for i in has_f - has_m})
    return pd.Series(labels, dtype=object, name="gender").sort_index()


#: The attribute values of a COCO evaluation split (caption_attributes), in this order.
ATTRIBUTES = ("man", "woman")


def caption_attributes(
    image_ids: Iterable[str],
    captions: pd.DataFrame,
    male: Iterable[str],
    female: Iterable[str],
    *,
    punctuation: str = "space",
    words: str = "gender words",
) -> pd.DataFrame:
    """The protected attribute of each of ``image_ids`` from its captions (the rule of :func:`caption_gender`):
    a frame (image_id, attribute, source) with ``man`` / ``woman`` where the captions agree and a null
    attribute, with the reason in ``source``, where they hold words of both or of neither (``words``:
    the word list's name, recorded in ``source``)."""
    has_m, has_f = _gender_hits(captions, male, female, punctuation)
    captioned = set(captions["image_id"].tolist())
    rows = []
    for image_id in image_ids:
        key = int(image_id)
        m, f = key in has_m, key in has_f
        if m != f:
            g = "man" if m else "woman"
            rows.append((str(image_id), g, f"COCO captions: {g} words only ({words})"))
        elif m:
            rows.append((str(image_id), None, f"COCO captions disagree: man and woman words ({words}); excluded"))
        else:
            why = "no gender word" if key in captioned else "no caption"
            rows.append((str(image_id), None, f"COCO captions: {why} ({words}); excluded"))
    return pd.DataFrame(rows, columns=["image_id", "attribute", "source"], dtype=object)


def image_path(root: str | Path, split: str, image_id: int) -> str:
    return str(Path(root) / split / f"{int(image_id):012d}.jpg")


def image_url(split: str, image_id: int) -> str:
    return f"{BASE_URL}/{split}/{int(image_id):012d}.jpg"


# --------------------------------------------------------------------------- curated analysis sets

DEFAULT_CURATION = {
    "seed": 0,
    "splits": ["val2017", "train2017"],
    "objects": {"car": "car", "refrigerator": "refrigerator", "surfboard": "surfboard", "stop_sign": "stop sign"},
    "genders": ["man", "woman"],
    "person_category": "person",
    "min_area_fraction": 0.05,
    "max_persons": 1,
    "on_shortfall": "error",
}


def _image_table(inst: Instances, person_id: int) -> pd.DataFrame:
    """Per (image, category): instance count, crowd flag and largest area as a fraction of the image."""
    ann = inst.annotations
    g = ann.groupby(["image_id", "category_id"], sort=True).agg(
        n=("area", "size"), crowd=("iscrowd", "max"), max_area=("area", "max")
    )
    g = g.reset_index()
    size = inst.images.set_index("id")
    g["frac"] = g["max_area"].to_numpy() / (
        size.loc[g["image_id"], "width"].to_numpy() * size.loc[g["image_id"], "height"].to_numpy()
    )
    g["n_cats"] = g.groupby("image_id")["category_id"].transform("size")
    return g


def curate(
    instances: Sequence[Instances],
    captions: pd.DataFrame,
    sizes: Mapping[str, int],
    *,
    root: str | Path,
    male_words: Iterable[str],
    female_words: Iterable[str],
    punctuation: str = "space",
    **options,
) -> pd.DataFrame:
    """Build an analysis-set selection from COCO annotations (see DEFAULT_CURATION for ``options``).

    Rules, for an object class ``o`` (COCO category ``objects[o]``) and gender ``g``:

    * ``o``: the image's only annotated category is ``o``; its largest instance covers at least
      ``min_area_fraction`` of the image ("in isolation", no person);
    * ``o_g``: the only categories are ``o`` and person; at most ``max_persons`` people, no crowd;
      both the largest object and the largest person cover ``min_area_fraction``; captions say ``g``;
    * ``g``: person is the only category, at most ``max_persons`` people, no crowd, the largest
      person covers ``min_area_fraction``; captions say ``g``;
    * ``random``: uniform over all pooled images not chosen for another class.

    Images are pooled over ``splits``; each class draws ``sizes[class]`` images with its own seeded
    generator. Classes are disjoint by construction (and checked).
    """
    opts = {**DEFAULT_CURATION, **options}
    unknown = set(options) - set(DEFAULT_CURATION)
    if unknown:
        raise ValueError(f"curation: unknown option(s) {sorted(unknown)}; known: {sorted(DEFAULT_CURATION)}")
    objects, genders = dict(opts["objects"]), list(opts["genders"])
    check_class_names(sizes, objects, genders)
    by_split = {inst.split: inst for inst in instances}
    missing = [s for s in opts["splits"] if s not in by_split]
    if missing:
        raise ValueError(f"curation.splits: no instances file given for {missing}")
    inst0 = by_split[opts["splits"][0]]
    name_to_id = dict(zip(inst0.categories["name"], inst0.categories["id"]))
    for cls, cat in {**objects, "person_category": opts["person_category"]}.items():
        if cat not in name_to_id:
            raise ValueError(f"curation.objects[{cls!r}]: {cat!r} is not a COCO category")
    person = name_to_id[opts["person_category"]]
    gender = caption_gender(captions, male_words, female_words, punctuation=punctuation)
    frac, max_persons = float(opts["min_area_fraction"]), int(opts["max_persons"])

    pools: dict[str, list] = {}
    why: dict[tuple, str] = {}
    split_of: dict[int, str] = {}
    all_ids: list[int] = []
    for split in opts["splits"]:
        inst = by_split[split]
        split_of.update(dict.fromkeys(inst.images["id"].tolist(), split))
        all_ids.extend(inst.images["id"].tolist())
        t = _image_table(inst, person)
        single = t[t["n_cats"] == 1]
        pair = t[t["n_cats"] == 2]
        people = t[(t["category_id"] == person) & (t["crowd"] == 0) & (t["n"] <= max_persons) & (t["frac"] >= frac)]
        people = people.set_index("image_id")
        for o, cat in objects.items():
            cid = name_to_id[cat]
            iso = single[(single["category_id"] == cid) & (single["frac"] >= frac)]
            for r in iso.itertuples():
                pools.setdefault(o, []).append(r.image_id)
                why[(o, r.image_id)] = (
                    f"{cat} in isolation: only category annotated ({r.n} instance(s), largest {r.frac:.0%} of image)"
                )
            with_obj = pair[(pair["category_id"] == cid) & (pair["frac"] >= frac)]
            with_obj = with_obj[with_obj["image_id"].isin(people.index)]
            for r in with_obj.itertuples():
                g = gender.get(r.image_id)
                if g in genders:
                    cls = f"{o}_{g}"
                    pools.setdefault(cls, []).append(r.image_id)
                    p = people.loc[r.image_id]
                    why[(cls, r.image_id)] = (
                        f"{cat} with {int(p['n'])} person(s), no other category (largest {cat} {r.frac:.0%}, "
                        f"person {p['frac']:.0%} of image); captions: {g} words only"
                    )
        alone = people[people.index.isin(single["image_id"])]
        for image_id, p in alone.iterrows():
            g = gender.get(image_id)
            if g in genders:
                pools.setdefault(g, []).append(image_id)
                why[(g, image_id)] = (
                    f"only {int(p['n'])} person(s) annotated (largest {p['frac']:.0%} of image); captions: {g} words only"
                )

    seed, shortfall = int(opts["seed"]), opts["on_shortfall"]
    chosen: dict[str, list] = {}
    used: set = set()
    for cls, size in sizes.items():
        if cls == "random":
            continue
        chosen[cls] = draw(pools.get(cls, []), int(size), seed=seed, name=cls, on_shortfall=shortfall)
        clash = used.intersection(chosen[cls])
        if clash:  # cannot happen with the rules above; guards later edits
            raise AssertionError(f"class {cls!r} overlaps another class: {sorted(clash)[:5]}")
        used.update(chosen[cls])
    if "random" in sizes:
        rest = sorted(set(all_ids) - used)
        chosen["random"] = draw(rest, int(sizes["random"]), seed=seed, name="random", on_shortfall=shortfall)
        for i in chosen["random"]:
            why[("random", i)] = (
                f"random: uniform draw (seed {seed}) from {len(rest)} images of {'+'.join(opts['splits'])} not in other classes"
            )
    rows = [
        (str(i), cls, split_of[i], image_path(root, split_of[i], i), image_url(split_of[i], i), why[(cls, i)])
        for cls in sizes
        for i in chosen[cls]
    ]
    return pd.DataFrame(rows, columns=list(SELECTION_COLUMNS))


# --------------------------------------------------------------------------- the paper's lists

_COCO_URL = re.compile(r"^https?://images\.cocodataset\.org/(train2017|val2017)/0*(\d+)\.jpg$")


def paper_selection(
    lists: Mapping[str, str | Path], *, root: str | Path, images: Sequence[pd.DataFrame] = ()
) -> pd.DataFrame:
    """Selection from the authors' per-class URL lists (``{class: list file}``; :func:`~biastransfer.data.
    curation.list_selection`).

    ``images.cocodataset.org`` URLs give split and id directly; any other URL (the lists hold one
    flickr URL) is looked up in the ``flickr_url``/``coco_url`` columns of ``images`` (the image tables of
    train2017 and val2017, each with a ``split`` column).
    """
    lookup: dict[str, tuple[str, int]] = {}
    for table in images:
        for col in ("flickr_url", "coco_url"):
            for url, i, s in zip(table[col], table["id"], table["split"]):
                if url:
                    lookup[re.sub(r"^https?://", "", url)] = (s, int(i))

    def image_of(path, lineno: int, url: str) -> tuple[str, int]:
        m = _COCO_URL.match(url)
        if m:
            return m.group(1), int(m.group(2))
        if re.sub(r"^https?://", "", url) in lookup:
            return lookup[re.sub(r"^https?://", "", url)]
        raise ValueError(
            f"{path}:{lineno}: {url!r} is neither an images.cocodataset.org URL nor the flickr_url of a "
            "COCO 2017 image in the given annotations"
        )

    return list_selection(lists, image_of, root=root, image_path=image_path, image_url=image_url)


# --------------------------------------------------------------------------- finetuning splits


def make_split(
    inst: Instances,
    *,
    dataset: str,
    name: str,
    root: str | Path,
    exclude: Iterable[str] = (),
    drop_unlabeled: bool = False,
) -> Split:
    """A finetuning split: every image of ``inst`` (its category names as labels) except ``exclude``.

    Images without annotations are kept with no labels (as torchvision's CocoDetection, used by the
    paper, keeps them) unless ``drop_unlabeled``.
    """
    names = dict(zip(inst.categories["id"], inst.categories["name"]))
    ann = inst.annotations[["image_id", "category_id"]].drop_duplicates().sort_values(["image_id", "category_id"])
    labels = ann.groupby("image_id")["category_id"].agg(lambda c: [names[x] for x in c])
    images = inst.images[~inst.images["id"].astype(str).isin(set(map(str, exclude)))].sort_values("id")
    lab = labels.reindex(images["id"]).tolist()
    frame = pd.DataFrame(
        {
            "image_id": images["id"].astype(str).to_numpy(),
            "path": [str(Path(root) / inst.split / f) for f in images["file_name"]],
            "labels": [v if isinstance(v, list) else [] for v in lab],
        }
    )
    if drop_unlabeled:
        frame = frame[frame["labels"].map(len) > 0].reset_index(drop=True)
    return Split(dataset, name, inst.class_names, frame)


def holdout(split: Split, fraction: float, *, seed: int) -> tuple[Split, Split]:
    """(the model-selection part, the held-out evaluation part) of a val2017 split: ``round(fraction * n)``
    images drawn uniformly (seeded by ``seed`` and the dataset's name) into the second, the rest in the
    first, both in the split's order; ``fraction`` 0 gives the whole split as both (the evaluation split is
    then also the model-selection split)."""
    n = len(split.frame)
    if not 0 <= fraction < 1:
        raise ValueError(f"evaluation.holdout must be in [0, 1), got {fraction}")
    if fraction == 0:
        return split, Split(split.dataset, "test", split.classes, split.frame)
    k = round(fraction * n)
    if not 1 <= k < n:
        raise ValueError(
            f"{split.dataset}: evaluation.holdout {fraction} of {n} val2017 images holds out {k}; "
            "at least one image must be held out and one kept for model selection"
        )
    held = np.zeros(n, dtype=bool)
    held[class_rng(seed, f"{split.dataset}/test").choice(n, size=k, replace=False)] = True
    frame = split.frame.reset_index(drop=True)
    return (
        Split(split.dataset, split.name, split.classes, frame[~held].reset_index(drop=True)),
        Split(split.dataset, "test", split.classes, frame[held].reset_index(drop=True)),
    )
