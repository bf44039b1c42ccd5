"""Download a real dataset's annotation files (and, with ``images: all``, its image archives) into its root.

COCO 2017: annotations_trainval2017.zip (md5-checked), unpacked to ``<root>/annotations/``; with
``images: all`` also train2017.zip and val2017.zip, unpacked to ``<root>/{train2017,val2017}/``.
Open Images V4: the boxable class descriptions and human image-label CSVs, to ``<root>/annotations/``.
Files already present and verified are not fetched again. Writes ``ok`` (file list with sha256) last.
Standalone: python workflow/scripts/download_dataset.py --dataset '{"kind": "coco", "root": "data/coco"}' --ok x.ok
"""

import logging
import zipfile
from pathlib import Path

from biastransfer.data import coco
from biastransfer.data import openimages
from biastransfer.atomic import atomic_path, write_text
from biastransfer.data.download import fetch, sidecar_path
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def unzip(archive: Path, into: Path, members: tuple = ()) -> int:
    """Unpack (selected) members whose file is missing or of the wrong size; each file atomically."""
    n = 0
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            if info.is_dir() or (members and Path(info.filename).name not in members):
                continue
            target = into / info.filename
            if target.is_file() and target.stat().st_size == info.file_size:
                continue
            with zf.open(info) as src, atomic_path(target) as tmp, open(tmp, "wb") as dst:
                while block := src.read(1 << 20):
                    dst.write(block)
            n += 1
    log.info("unpacked %d file(s) of %s into %s", n, archive, into)
    return n


def main(dataset: dict, ok: str, workers: int = 1) -> None:
    root, mirror = Path(dataset["root"]), dataset.get("mirror")
    got = []
    if dataset["kind"] == "coco":
        names = ["annotations_trainval2017.zip"]
        if dataset.get("images", "needed") == "all":
            names += ["val2017.zip", "train2017.zip"]
        wanted = tuple(f"{k}_{s}.json" for k in ("instances", "captions") for s in coco.SPLITS)
        for name in names:
            url, md5 = coco.FILES[name]
            archive = fetch(url, root / name, md5=md5, mirror=mirror)
            unzip(archive, root, wanted if name.startswith("annotations") else ())
            got.append(archive)
    elif dataset["kind"] == "openimages":
        for name, (url, sha256) in openimages.FILES.items():
            got.append(fetch(url, root / "annotations" / name, sha256=sha256, mirror=mirror))
    else:
        raise ValueError(f"dataset kind {dataset['kind']!r}: only coco and openimages are downloaded")
    lines = [f"{sidecar_path(p).read_text().split()[0]}  {p}" for p in got]
    write_text(ok, "\n".join(lines) + "\n")


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
