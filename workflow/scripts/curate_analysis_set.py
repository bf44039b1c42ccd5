"""Choose the images of a COCO or Open Images analysis set: the authors' lists or our own curation.

Writes a selection (a manifest without hashes; see biastransfer.data.curation). ``analysis_set`` and
``dataset`` are the config entries; ``lists_dir`` holds the downloaded paper lists (source ``paper``);
``gender_words`` is the word-list file of a curated COCO set (resources/gender_words.yaml).
Standalone:
python workflow/scripts/curate_analysis_set.py --dataset '{"kind": "coco", "root": "data/coco"}' \
    --analysis_set '{"dataset": "coco", "source": "curated", "classes": [...], "curation": {...}}' \
    --gender_words resources/gender_words.yaml --selection sel.parquet
"""

import logging
from pathlib import Path

from biastransfer.atomic import atomic_path
from biastransfer.data.kinds import kind_of, read_gender_words
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(
    dataset: dict, analysis_set: dict, selection: str, lists_dir: str | None = None, gender_words: str | None = None
) -> None:
    kind, source = kind_of(dataset), analysis_set["source"]
    if source == "paper":
        if not lists_dir:
            raise ValueError("source 'paper' needs the downloaded lists (lists_dir)")
        sel = kind.paper_selection(dataset, {c: Path(lists_dir) / f"{c}.txt" for c in analysis_set["classes"]})
    elif source == "curated":
        words = None
        if gender_words:
            words = read_gender_words(
                gender_words, analysis_set.get("curation", {}).get("gender_words", {}).get("list")
            )
        sel = kind.curate(dataset, analysis_set, words)
    else:
        raise ValueError(
            f"analysis set source {source!r}: expected 'paper' or 'curated' for a {dataset['kind']} dataset"
        )
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
