"""Choose the images of a COCO or Open Images analysis set: the authors' lists or our own curation.

Writes a selection (a manifest without hashes; see biastransfer.curation). ``analysis_set`` and
``dataset`` are the config entries; ``lists_dir`` holds the downloaded paper lists (source ``paper``).
Standalone:
python workflow/scripts/curate_analysis_set.py --dataset '{"kind": "coco", "root": "data/coco"}' \
    --analysis_set '{"dataset": "coco", "source": "curated", "classes": [...], "curation": {...}}' \
    --selection sel.parquet
"""

import logging
from pathlib import Path

import pandas as pd
import yaml

from biastransfer.data import coco
from biastransfer.data import openimages
from biastransfer.atomic import atomic_path
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def gender_words(spec: dict) -> tuple[list, list]:
    """Male and female word lists named by ``{file, list}`` (resources/gender_words.yaml)."""
    data = yaml.safe_load(Path(spec.get("file", "resources/gender_words.yaml")).read_text())
    name = spec.get("list", data["default"])
    if name not in data["lists"]:
        raise ValueError(f"curation.gender_words.list: unknown list {name!r}; known: {sorted(data['lists'])}")
    entry = data["lists"][name]
    log.info("gender words %r (%s)", name, " ".join(entry["source"].split()))
    return entry["male"], entry["female"]


def curation_options(analysis_set: dict) -> tuple[dict, dict]:
    """(sizes per class, remaining curation options); every listed class needs a size."""
    options = dict(analysis_set.get("curation", {}))
    sizes = options.pop("sizes", {})
    missing = [c for c in analysis_set["classes"] if c not in sizes]
    if missing:
        raise ValueError(f"curation.sizes: no size for class(es) {missing}")
    options.pop("gender_words", None)
    return {c: sizes[c] for c in analysis_set["classes"]}, options


def select(dataset: dict, analysis_set: dict, lists_dir: str | None) -> pd.DataFrame:
    kind, root, source = dataset["kind"], Path(dataset["root"]), analysis_set["source"]
    ann = root / "annotations"
    if source == "paper":
        if not lists_dir:
            raise ValueError("source 'paper' needs the downloaded lists (lists_dir)")
        lists = {c: Path(lists_dir) / f"{c}.txt" for c in analysis_set["classes"]}
        if kind == "coco":
            tables = [coco.load_instances(ann / f"instances_{s}.json").images.assign(split=s) for s in coco.SPLITS]
            return coco.paper_selection(lists, root=root, images=tables)
        return openimages.paper_selection(lists, root=root)
    if source != "curated":
        raise ValueError(f"analysis set source {source!r}: expected 'paper' or 'curated' for a {kind} dataset")
    sizes, options = curation_options(analysis_set)
    if kind == "coco":
        splits = options.get("splits", coco.DEFAULT_CURATION["splits"])
        instances = [coco.load_instances(ann / f"instances_{s}.json") for s in splits]
        captions = pd.concat([coco.load_captions(ann / f"captions_{s}.json") for s in splits], ignore_index=True)
        male, female = gender_words(analysis_set.get("curation", {}).get("gender_words", {}))
        return coco.curate(instances, captions, sizes, root=root, male_words=male, female_words=female, **options)
    classes = openimages.load_classes(ann / "class-descriptions-boxable.csv")
    split = options.get("split", "validation")
    labels = openimages.load_labels(ann / f"{split}-annotations-human-imagelabels-boxable.csv", classes,
                                    verified_only=dataset.get("verified_only", True))
    return openimages.curate(labels, classes, sizes, root=root, **options)


def main(dataset: dict, analysis_set: dict, selection: str, lists_dir: str | None = None) -> None:
    sel = select(dataset, analysis_set, lists_dir)
    sizes = sel.groupby("class", sort=False).size()
    for cls, n in sizes.items():
        log.info("class %s: %d images", cls, n)
    empty = [c for c in analysis_set["classes"] if c not in sizes.index]
    if empty:
        raise ValueError(f"analysis set has no images for class(es) {empty}")
    with atomic_path(selection) as tmp:
        sel.to_parquet(tmp, index=False)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
