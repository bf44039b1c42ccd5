"""The protected attribute of every image of a COCO, Open Images or table dataset's evaluation split, or of
its training split (what an intervention on it rebalances).

COCO: from the split's captions (val2017's for the evaluation split, train2017's for the training split)
with the configured gender-word list (``man`` / ``woman`` where the captions agree; both or no gender words:
none, counted and excluded); Open Images: its MIAP boxes' gender presentation where it has any, else its
human-verified Man/Boy and Woman/Girl labels (the training split: the labels only); a table: its
``attribute`` column (which every training row needs). Every image of the split gets a row, with the
attribute's source (or why it has none); the file records the split's name and digest
(biastransfer.data.attributes).
Standalone: python workflow/scripts/real_attributes.py --dataset '{"kind": "coco", "root": "data/coco"}' \
    --split results/splits/coco/test.parquet --attributes results/splits/coco/test_attributes.parquet \
    [--gender_words resources/gender_words.yaml --words_list wang2021]
"""

import logging

from biastransfer.data.attributes import Attributes, write_attributes
from biastransfer.data.kinds import kind_of, read_gender_words
from biastransfer.data.splits import read_split
from biastransfer.hashing import file_digest
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(
    dataset: dict, split: str, attributes: str, gender_words: str | None = None, words_list: str | None = None
) -> None:
    table, kind = read_split(split), kind_of(dataset)
    rule = getattr(kind, f"{table.name}_attributes", None)  # test_attributes or train_attributes
    if rule is None:
        raise ValueError(f"{split}: the {table.name} split of a {dataset['kind']} dataset has no attribute rule here")
    words = read_gender_words(gender_words, words_list) if gender_words else None
    values, frame = rule(dataset, table, words)
    attrs = Attributes(
        table.dataset, table.name, file_digest(split), values, kind.attribute_classes(table, values), frame
    )
    write_attributes(attributes, attrs)
    log.info("%s: %d images, attributes %s (None: excluded)", attributes, len(frame), attrs.counts())
    for source, n in frame.groupby("source", dropna=False).size().items():
        log.info("  %5d  %s", n, source)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
