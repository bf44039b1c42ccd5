"""Open Images V4: label CSVs, analysis-set curation, the paper's id lists, and finetuning splits.

Facts (docs/sources.md §4): image-level label files have columns
``ImageID,Source,LabelName,Confidence`` (human labels: Confidence 1 = verified present, 0 = verified
absent); ``class-descriptions-boxable.csv`` has no header and two columns ``LabelName,DisplayName``
(601 rows). Images: ``https://open-images-dataset.s3.amazonaws.com/{split}/{ImageID}.jpg``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from biastransfer.data.curation import SELECTION_COLUMNS, check_class_names, class_rng, draw, list_selection
from biastransfer.data.splits import Split

ANN_URL = "https://storage.googleapis.com/openimages/2018_04"
MIAP_URL = "https://storage.googleapis.com/openimages/open_images_extended_miap"
MIAP_FILE = "open_images_extended_miap_boxes_test.csv"
IMAGE_URL = "https://open-images-dataset.s3.amazonaws.com"
# V4 boxable files used by the paper's loader. V4 publishes no checksum for these: the download records
# the sha256 on first fetch. The V5 copies (same names under /v5/) have published md5s, noted in docs.
FILES = {
    "class-descriptions-boxable.csv": (f"{ANN_URL}/class-descriptions-boxable.csv", None),
    "train-annotations-human-imagelabels-boxable.csv": (
        f"{ANN_URL}/train/train-annotations-human-imagelabels-boxable.csv",
        None,
    ),
    "validation-annotations-human-imagelabels-boxable.csv": (
        f"{ANN_URL}/validation/validation-annotations-human-imagelabels-boxable.csv",
        None,
    ),
    # the evaluation split: the test split's human-verified labels (V4 publishes no checksum; the V5 copy
    # of this name has md5 207ed0ce2755ad5a689c8eb6eeb039bf, 32,055,857 bytes)
    "test-annotations-human-imagelabels-boxable.csv": (
        f"{ANN_URL}/test/test-annotations-human-imagelabels-boxable.csv",
        None,
    ),
    # MIAP (Schumann et al. 2021): per-person boxes with a perceived gender presentation, for 22,590 test
    # images (no checksum published either; the download records its sha256)
    MIAP_FILE: (f"{MIAP_URL}/{MIAP_FILE}", None),
}
MIDS = {  # docs/sources.md §4, from class-descriptions-boxable
    "Man": "/m/04yx4",
    "Woman": "/m/03bt1vf",
    "Person": "/m/01g317",
    "Boy": "/m/01bl7v",
    "Girl": "/m/05r655",
    "Human face": "/m/0dzct",
    "Car": "/m/0k4j",
    "Sports equipment": "/m/05y5lj",
    "Fashion accessory": "/m/0463sg",
    "Mammal": "/m/04rky",
    "Stop sign": "/m/02pv19",
    "Surfboard": "/m/019w40",
    "Refrigerator": "/m/040b_t",
}
LABEL_COLUMNS = ("ImageID", "LabelName", "Confidence")
_IMAGE_ID = re.compile(r"^[0-9a-f]{8,16}$")


def image_url(split: str, image_id: str) -> str:
    return f"{IMAGE_URL}/{split}/{image_id}.jpg"


def image_path(root: str | Path, split: str, image_id: str) -> str:
    return str(Path(root) / split / f"{image_id}.jpg")


def load_classes(path: str | Path) -> pd.DataFrame:
    """Class descriptions as (mid, name), in file order (the classifier's output order).

    Accepts the headerless V4/V5 file and the V6/V7 file with a ``LabelName,DisplayName`` header.
    Display names that occur twice are made unique as ``"Name (/m/...)"``.
    """
    path = Path(path)
    try:
        df = pd.read_csv(path, header=None, names=["mid", "name"], dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not a readable class-description CSV ({exc})") from exc
    if len(df) and df["mid"].iloc[0] == "LabelName":
        df = df.iloc[1:].reset_index(drop=True)
    bad = df.loc[~df["mid"].str.startswith("/"), "mid"].head(1).tolist()
    if df.empty or bad:
        raise ValueError(
            f"{path}: expected rows 'LabelName,DisplayName' with MIDs like /m/0k4j, got {bad or 'no rows'}"
        )
    if df["mid"].duplicated().any():
        raise ValueError(f"{path}: MID {df.loc[df['mid'].duplicated(), 'mid'].iloc[0]!r} listed twice")
    dup = df["name"].duplicated(keep=False)
    df.loc[dup, "name"] = df.loc[dup, "name"] + " (" + df.loc[dup, "mid"] + ")"
    return df


def load_labels(path: str | Path, classes: pd.DataFrame, *, verified_only: bool = True) -> pd.DataFrame:
    """Image-level labels as (image_id, mid): human-verified positives (``Confidence == 1``) only.

    ``verified_only=False`` keeps verified negatives as positives too, reproducing the authors' loader
    (a bug; see docs/sources.md §1). A missing column or a MID absent from ``classes`` raises ValueError
    naming the file.
    """
    path = Path(path)
    try:
        header = pd.read_csv(path, nrows=0).columns
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not a readable label CSV ({exc})") from exc
    missing = [c for c in LABEL_COLUMNS if c not in header]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}; expected {list(LABEL_COLUMNS)} (got {list(header)})")
    try:
        df = pd.read_csv(
            path, usecols=list(LABEL_COLUMNS), dtype={"ImageID": str, "LabelName": "category"}, engine="pyarrow"
        )
    except (ValueError, pd.errors.ParserError) as exc:
        raise ValueError(f"{path}: cannot parse ({exc})") from exc
    conf = pd.to_numeric(df["Confidence"], errors="coerce")
    if conf.isna().any():
        raise ValueError(f"{path}: non-numeric Confidence in row {int(np.flatnonzero(conf.isna())[0]) + 2}")
    if verified_only:
        df = df[conf.to_numpy() == 1]
    unknown = sorted(set(df["LabelName"].astype(str).unique()) - set(classes["mid"]))
    if unknown:
        raise ValueError(f"{path}: {len(unknown)} unknown MID(s) not in the class descriptions, e.g. {unknown[:5]}")
    out = pd.DataFrame(
        {"image_id": df["ImageID"].astype(str).to_numpy(), "mid": df["LabelName"].astype(str).to_numpy()}
    )
    return out.drop_duplicates(ignore_index=True)


def resolve(label: str, classes: pd.DataFrame, *, where: str) -> str:
    """A display name or MID -> MID; unknown ones raise ValueError naming ``where``."""
    if label in set(classes["mid"]):
        return label
    hit = classes.loc[classes["name"] == label, "mid"]
    if hit.empty:
        raise ValueError(f"{where}: unknown Open Images class {label!r} (neither a MID nor a display name)")
    return hit.iloc[0]


# --------------------------------------------------------------------------- curated analysis sets

DEFAULT_CURATION = {
    "seed": 0,
    "split": "validation",
    "objects": {
        "car": "Car",
        "sports": "Sports equipment",
        "fashion": "Fashion accessory",
        "mammal": "Mammal",
        "stop_sign": "Stop sign",
    },
    "genders": {"man": "Man", "woman": "Woman"},
    "person_labels": ["Person", "Man", "Woman", "Boy", "Girl", "Human face"],
    "exclude_other_objects": True,
    "on_shortfall": "error",
}


def curate(
    labels: pd.DataFrame, classes: pd.DataFrame, sizes: Mapping[str, int], *, root: str | Path, **options
) -> pd.DataFrame:
    """Build an analysis-set selection from human-verified image labels (``load_labels`` output).

    For object ``o`` and gender ``g`` (and ``g'`` the other gender):

    * ``o``: labelled ``o``, no person label at all (``person_labels``);
    * ``o_g``: labelled ``o`` and ``g``, not ``g'``;
    * ``g``: labelled ``g``, not ``g'``, and no analysis object;
    * ``random``: uniform over the remaining images of the label file.

    With ``exclude_other_objects`` an image of an object class carries no other analysis object.
    Classes are drawn in config order, each from candidates not yet used, so they are disjoint.
    """
    opts = {**DEFAULT_CURATION, **options}
    unknown = set(options) - set(DEFAULT_CURATION)
    if unknown:
        raise ValueError(f"curation: unknown option(s) {sorted(unknown)}; known: {sorted(DEFAULT_CURATION)}")
    objects, genders = dict(opts["objects"]), dict(opts["genders"])
    check_class_names(sizes, objects, list(genders))
    mid = {k: resolve(v, classes, where=f"curation.objects[{k!r}]") for k, v in objects.items()}
    gmid = {k: resolve(v, classes, where=f"curation.genders[{k!r}]") for k, v in genders.items()}
    person = {resolve(v, classes, where="curation.person_labels") for v in opts["person_labels"]}
    names = dict(zip(classes["mid"], classes["name"]))
    split, seed = opts["split"], int(opts["seed"])

    by_image = labels.groupby("image_id")["mid"].agg(frozenset)
    has = {m: set(labels.loc[labels["mid"] == m, "image_id"]) for m in {*mid.values(), *gmid.values(), *person}}
    with_person = set().union(*(has[m] for m in person)) if person else set()
    any_object = set().union(*(has[m] for m in mid.values()))

    def other_objects(o: str | None) -> set:
        if not opts["exclude_other_objects"]:
            return set()
        return set().union(*(has[m] for k, m in mid.items() if k != o))

    rules: dict[str, tuple[set, str]] = {}
    for o, m in mid.items():
        rules[o] = (
            has[m] - with_person - other_objects(o),
            f"human-verified label {names[m]!r} (Confidence=1); no person label",
        )
    for g, m in gmid.items():
        others = set().union(*(has[x] for k, x in gmid.items() if k != g))
        rules[g] = (
            has[m] - others - any_object,
            f"human-verified label {names[m]!r} (Confidence=1); no other gender label, no analysis object",
        )
        for o, om in mid.items():
            rules[f"{o}_{g}"] = (
                (has[om] & has[m]) - others - other_objects(o),
                f"human-verified labels {names[om]!r} and {names[m]!r} (Confidence=1); no other gender label",
            )
    chosen: dict[str, list] = {}
    used: set = set()
    for cls, size in sizes.items():
        if cls == "random":
            continue
        pool, _ = rules[cls]
        chosen[cls] = draw(pool - used, int(size), seed=seed, name=cls, on_shortfall=opts["on_shortfall"])
        used.update(chosen[cls])
    reasons = {cls: rules[cls][1] for cls in chosen}
    if "random" in sizes:
        rest = set(by_image.index) - used
        chosen["random"] = draw(rest, int(sizes["random"]), seed=seed, name="random", on_shortfall=opts["on_shortfall"])
        reasons["random"] = (
            f"random: uniform draw (seed {seed}) from {len(rest)} labelled {split} images not in other classes"
        )
    rows = [
        (i, cls, split, image_path(root, split, i), image_url(split, i), reasons[cls])
        for cls in sizes
        for i in chosen[cls]
    ]
    return pd.DataFrame(rows, columns=list(SELECTION_COLUMNS))


# --------------------------------------------------------------------------- the paper's lists


def paper_selection(lists: Mapping[str, str | Path], *, root: str | Path, split: str = "validation") -> pd.DataFrame:
    """Selection from the authors' per-class ImageID lists (validation split;
    :func:`~biastransfer.data.curation.list_selection`); a line that is not an Open Images id raises
    ValueError naming file and line."""

    def image_of(path, lineno: int, image_id: str) -> tuple[str, str]:
        if not _IMAGE_ID.match(image_id):
            raise ValueError(f"{path}:{lineno}: {image_id!r} is not an Open Images ImageID (8-16 hex digits)")
        return split, image_id

    return list_selection(lists, image_of, root=root, image_path=image_path, image_url=image_url)


# --------------------------------------------------------------------------- finetuning splits


def make_split(
    labels: pd.DataFrame,
    classes: pd.DataFrame,
    *,
    dataset: str,
    name: str,
    source_split: str,
    root: str | Path,
    exclude: Iterable[str] = (),
    subset: int | None = None,
    seed: int = 0,
) -> Split:
    """A finetuning split over the boxable classes (display names, in file order).

    Every labelled image except ``exclude``; with ``subset`` a seeded uniform sample of that many
    images (the full V4 train split has 1.7M).
    """
    ids = np.array(sorted(set(labels["image_id"].unique()) - set(map(str, exclude))), dtype=object)
    if subset is not None:
        if subset < 1:
            raise ValueError(f"subset must be >= 1, got {subset}")
        if subset < len(ids):
            ids = np.sort(ids[class_rng(seed, f"{dataset}/{name}").choice(len(ids), size=subset, replace=False)])
    names = dict(zip(classes["mid"], classes["name"]))
    keep = labels[labels["image_id"].isin(ids)]
    # each image's display names, sorted, as one list per image: sorted rows cut at the images' offsets
    # (a groupby with a Python function per image takes minutes on the 1.7M images of the train split)
    rows = pd.DataFrame({"image_id": keep["image_id"].to_numpy(), "name": keep["mid"].map(names).to_numpy()})
    rows = rows.sort_values(["image_id", "name"], ignore_index=True)
    counts = rows.groupby("image_id").size().reindex(ids).to_numpy(dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    grouped = pa.ListArray.from_arrays(pa.array(offsets, pa.int64()), pa.array(rows["name"].to_numpy(), pa.string()))
    folder = Path(root) / source_split  # image_path's, written out: a Path per image is slow at this size
    frame = pd.DataFrame(
        {
            "image_id": ids.astype(str),
            "path": [f"{folder}/{i}.jpg" for i in ids],
            "labels": grouped.to_pylist(),
        }
    )
    return Split(dataset, name, tuple(classes["name"]), frame)


# --------------------------------------------------------------------------- the evaluation split's attribute

#: The attribute values of an Open Images evaluation split (image_attributes), in this order.
ATTRIBUTES = ("man", "woman")
#: MIAP's GenderPresentation values (Schumann et al. 2021) and the attribute each gives (None: unknown).
PRESENTATION = {"Predominantly Masculine": "man", "Predominantly Feminine": "woman", "Unknown": None}
#: The image-level labels that give the attribute where an image has no MIAP box.
GENDER_LABELS = {"Man": "man", "Boy": "man", "Woman": "woman", "Girl": "woman"}
MIAP_COLUMNS = ("ImageID", "GenderPresentation")


def load_miap(path: str | Path) -> pd.DataFrame:
    """MIAP person boxes as (image_id, presentation); a missing column or an unknown GenderPresentation
    raises ValueError naming the file and the line."""
    path = Path(path)
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not a readable MIAP box CSV ({exc})") from exc
    missing = [c for c in MIAP_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}; expected a MIAP box file with {list(MIAP_COLUMNS)}")
    bad = ~df["GenderPresentation"].isin(PRESENTATION)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{path}: line {row + 2}: GenderPresentation {df['GenderPresentation'].iloc[row]!r} is not one of "
            f"{', '.join(PRESENTATION)}"
        )
    return pd.DataFrame({"image_id": df["ImageID"].to_numpy(), "presentation": df["GenderPresentation"].to_numpy()})


def _agreement(values: set, what: str) -> tuple[str | None, str]:
    """(attribute or None, source) from the attribute values one image's boxes or labels give."""
    if len(values) == 1:
        value = next(iter(values))
        return value, f"{what}: {value} only"
    return None, f"{what}: both man and woman; excluded"


def image_attributes(image_ids, labels: pd.DataFrame, classes: pd.DataFrame, miap: pd.DataFrame | None) -> pd.DataFrame:
    """The protected attribute of each of ``image_ids``: from its MIAP boxes where it has any (every box
    with a known presentation agrees: ``man`` / ``woman``; presentations that disagree or are all Unknown:
    none), else from its human-verified Man / Boy and Woman / Girl labels (``load_labels`` output; one
    side only: that attribute; both or neither: none); ``miap`` None: from the labels only (a training
    split, whose MIAP boxes are not downloaded). A frame (image_id, attribute, source), the reason in
    ``source`` for an image without one."""
    names = dict(zip(classes["mid"], classes["name"]))
    labelled = labels.assign(name=labels["mid"].map(names))
    by_label = (
        labelled[labelled["name"].isin(GENDER_LABELS)]
        .groupby("image_id")["name"]
        .agg(lambda n: {GENDER_LABELS[x] for x in n})
    )
    if miap is None:
        by_box, nothing = pd.Series(dtype=object), "no Man/Boy/Woman/Girl label; excluded"
    else:
        by_box = miap.groupby("image_id")["presentation"].agg(lambda p: {PRESENTATION[x] for x in p} - {None})
        nothing = "no MIAP box and no Man/Boy/Woman/Girl label; excluded"
    rows = []
    for image_id in map(str, image_ids):
        if image_id in by_box.index:
            found = by_box[image_id]
            if not found:
                rows.append((image_id, None, "MIAP boxes: every gender presentation Unknown; excluded"))
                continue
            rows.append((image_id, *_agreement(found, "MIAP boxes")))
        elif image_id in by_label.index:
            rows.append((image_id, *_agreement(by_label[image_id], "labels Man/Boy/Woman/Girl")))
        else:
            rows.append((image_id, None, nothing))
    return pd.DataFrame(rows, columns=["image_id", "attribute", "source"], dtype=object)
