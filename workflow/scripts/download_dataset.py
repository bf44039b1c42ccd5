"""Download a real dataset's annotation files (and, with ``images: all``, its image archives) into its root.

COCO 2017: annotations_trainval2017.zip (md5-checked), unpacked to ``<root>/annotations/``; with
``images: all`` also train2017.zip and val2017.zip, unpacked to ``<root>/{train2017,val2017}/``.
Open Images V4: the boxable class descriptions and human image-label CSVs, to ``<root>/annotations/``.
A table dataset (kind ``table``, your own images) downloads nothing: its table is checked and recorded.
Files already present and verified are not fetched again. Writes ``ok`` (file list with sha256) last.
Standalone: python workflow/scripts/download_dataset.py --dataset '{"kind": "coco", "root": "data/coco"}' --ok x.ok
"""

from biastransfer.atomic import write_text
from biastransfer.data.download import sidecar_path
from biastransfer.data.kinds import kind_of
from biastransfer.hashing import file_digest
from biastransfer.scripting import run


def main(dataset: dict, ok: str) -> None:
    got = kind_of(dataset).download(dataset)
    lines = [
        f"{sidecar_path(p).read_text().split()[0] if sidecar_path(p).is_file() else file_digest(p)}  {p}" for p in got
    ]
    write_text(ok, "\n".join(lines) + "\n")


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
