"""Download the authors' analysis-set lists (one text file per class) pinned by commit and sha256.

``paper`` is the analysis set's ``paper`` entry: ``base_url`` (raw.githubusercontent.com URL of the
list folder at a fixed commit) and ``files`` ({class: sha256}). Lists go to ``out_dir/<class>.txt``;
``ok`` is written last. Standalone:
python workflow/scripts/download_paper_lists.py --paper '{"base_url": "...", "files": {"car": "<sha256>"}}' \
    --out_dir lists --ok lists/lists.ok
"""

import logging
from pathlib import Path

from biastransfer.atomic import write_text
from biastransfer.data.download import Download, fetch_many
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(paper: dict, out_dir: str, ok: str, mirror: str | None = None) -> None:
    base = paper["base_url"].rstrip("/")
    items = [Download(f"{base}/{cls}.txt", f"{cls}.txt", sha256) for cls, sha256 in paper["files"].items()]
    paths = fetch_many(items, Path(out_dir), workers=4, mirror=mirror)
    write_text(ok, "".join(f"{i.sha256}  {p}\n" for i, p in zip(items, paths)))
    log.info("%d lists from %s verified", len(paths), base)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
