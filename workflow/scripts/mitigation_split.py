"""A mitigation arm's split and its attribute file: those of its ``from``, untouched, under the arm's name (so
its networks train, select and are scored on exactly the images of the plain networks', and the attribute file
describes this split's digest).

Standalone: python workflow/scripts/mitigation_split.py --split results/splits/S/train.parquet
--attributes results/splits/S/train_attributes.parquet --mitigation NAME --split_out T.parquet
--attributes_out A.parquet
"""

from dataclasses import replace

from biastransfer.data.attributes import read_attributes, write_attributes
from biastransfer.data.splits import Split, read_split, write_split
from biastransfer.hashing import file_digest
from biastransfer.scripting import run


def main(split: str, attributes: str, mitigation: str, split_out: str, attributes_out: str) -> None:
    table, attrs = read_split(split), read_attributes(attributes)
    if attrs.split_sha256 != file_digest(split):
        raise ValueError(f"{attributes}: describes another version of the split than {split}")
    write_split(split_out, Split(mitigation, table.name, table.classes, table.frame))
    write_attributes(attributes_out, replace(attrs, dataset=mitigation, split_sha256=file_digest(split_out)))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
