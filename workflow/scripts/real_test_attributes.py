"""The protected attribute of every image of a COCO, Open Images or table dataset's evaluation split.

COCO: from its val2017 captions with the configured gender-word list (``man`` / ``woman`` where the
captions agree; both or no gender words: none, counted and excluded); Open Images: its MIAP boxes'
gender presentation where it has any, else its human-verified Man/Boy and Woman/Girl labels; a table: its
``attribute`` column. Every image of the split gets a row, with the attribute's source (or why it has
none); the file records the split's digest (biastransfer.data.attributes).
Standalone: python workflow/scripts/real_test_attributes.py --dataset '{"kind": "coco", "root": "data/coco"}' \
    --test results/splits/coco/test.parquet --attributes results/splits/coco/test_attributes.parquet \
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
    dataset: dict, test: str, attributes: str, gender_words: str | None = None, words_list: str | None = None
) -> None:
    split, kind = read_split(test), kind_of(dataset)
    words = read_gender_words(gender_words, words_list) if gender_words else None
    values, frame = kind.test_attributes(dataset, split, words)
    attrs = Attributes(split.dataset, "test", file_digest(test), values, kind.attribute_classes(split, values), frame)
    write_attributes(attributes, attrs)
    log.info("%s: %d images, attributes %s (None: excluded)", attributes, len(frame), attrs.counts())
    for source, n in frame.groupby("source", dropna=False).size().items():
        log.info("  %5d  %s", n, source)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
