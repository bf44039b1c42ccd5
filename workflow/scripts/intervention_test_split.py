"""An intervention's evaluation split: the test split of ``from`` and its attribute file under the
intervention's name, the same images and attributes untouched (so its networks' predictions are measured
on exactly the images of the untouched networks', and the attribute file describes this split's digest).

Standalone: python workflow/scripts/intervention_test_split.py --test results/splits/S/test.parquet
--attributes results/splits/S/test_attributes.parquet --intervention NAME --test_out T.parquet
--attributes_out A.parquet
"""

from dataclasses import replace

from biastransfer.data.attributes import read_attributes, write_attributes
from biastransfer.data.splits import Split, read_split, write_split
from biastransfer.hashing import file_digest
from biastransfer.scripting import run


def main(test: str, attributes: str, intervention: str, test_out: str, attributes_out: str) -> None:
    split, attrs = read_split(test), read_attributes(attributes)
    if attrs.split_sha256 != file_digest(test):
        raise ValueError(f"{attributes}: describes another version of the split than {test}")
    write_split(test_out, Split(intervention, "test", split.classes, split.frame))
    write_attributes(attributes_out, replace(attrs, dataset=intervention, split_sha256=file_digest(test_out)))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
