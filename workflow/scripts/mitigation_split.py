"""A mitigation arm's split: that of its ``from``, the same images, labels and classes, under the arm's name
(so its networks train, select and are scored on exactly the images of the plain networks').

Standalone: python workflow/scripts/mitigation_split.py --source results/splits/S/train.parquet
--mitigation NAME --split_out T.parquet
"""

from biastransfer.data.splits import Split, read_split, write_split
from biastransfer.scripting import run


def main(source: str, mitigation: str, split_out: str) -> None:
    table = read_split(source)
    write_split(split_out, Split(mitigation, table.name, table.classes, table.frame))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
