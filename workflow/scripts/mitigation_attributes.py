"""A mitigation arm's attribute file of one split: that of its ``from``'s split, untouched, describing the
arm's copy of the split (its digest; mitigation_split.py writes the copy).

Standalone: python workflow/scripts/mitigation_attributes.py --source results/splits/S/train.parquet
--attributes results/splits/S/train_attributes.parquet --split_copy results/splits/ARM/train.parquet
--mitigation ARM --attributes_out A.parquet
"""

from dataclasses import replace

from biastransfer.data.attributes import read_attributes, write_attributes
from biastransfer.data.splits import read_split
from biastransfer.hashing import file_digest
from biastransfer.scripting import run


def main(source: str, attributes: str, split_copy: str, mitigation: str, attributes_out: str) -> None:
    attrs = read_attributes(attributes)
    if attrs.split_sha256 != file_digest(source):
        raise ValueError(f"{attributes}: describes another version of the split than {source}")
    if read_split(split_copy).frame["image_id"].tolist() != read_split(source).frame["image_id"].tolist():
        raise ValueError(f"{split_copy}: not a copy of {source} (other images)")
    write_attributes(attributes_out, replace(attrs, dataset=mitigation, split_sha256=file_digest(split_copy)))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
