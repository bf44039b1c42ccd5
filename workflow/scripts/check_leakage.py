"""Fail the run if any analysis image appears in a training, validation or evaluation split, or an
evaluation image in a training split of its dataset.

Images are compared by id and also by the sha256 of their files (the same picture under another id) in
the splits the settings' ``hash_files`` names; a split's files are hashed only when its rows do not record a
sha256 already. Their ``evaluation`` pairs each evaluation split (``test``) with the training splits it must
share no image with (``training``; every split it names is one of ``splits``); the ok file records each.
Standalone: python workflow/scripts/check_leakage.py --manifest M.parquet --splits a/train.parquet
a/val.parquet a/test.parquet --ok leakage.ok --settings '{"hash_files": ["a/train.parquet"],
"evaluation": [{"test": "a/test.parquet", "training": ["a/train.parquet", "a/val.parquet"]}]}'
"""

import logging

from biastransfer.atomic import write_text
from biastransfer.data.leakage import check_no_leakage
from biastransfer.data.manifest import read_manifest
from biastransfer.data.splits import read_split_columns
from biastransfer.hashing import file_digest
from biastransfer.scripting import run
from biastransfer.workflow.rules.data import LeakageSettings

log = logging.getLogger(__name__)


def main(manifest: str, splits: list, ok: str, settings: LeakageSettings) -> None:
    analysis = read_manifest(manifest)
    hashed = set(settings.hash_files)
    frames = {}
    for path in splits:  # ids (and paths to hash) only: the labels of 1.7M training images are not needed
        if path in hashed:
            frame = read_split_columns(path, ["image_id", "path"])
            frames[path] = frame.assign(sha256=[file_digest(p) for p in frame["path"]])
        else:
            frames[path] = read_split_columns(path, ["image_id"])
    check_no_leakage(analysis, frames)
    lines = []
    for test, training in ((e["test"], e["training"]) for e in settings.evaluation):
        unknown = [p for p in (test, *training) if p not in frames]
        if unknown:
            raise ValueError(f"evaluation: {unknown[0]} is not one of the splits checked")
        check_no_leakage(frames[test], {p: frames[p] for p in training}, what=f"evaluation ({test})")
        lines.append(
            f"evaluation split {test}: {len(frames[test])} images, in none of "
            f"{', '.join(f'{p} ({len(frames[p])})' for p in training)}"
        )
    n = sum(len(f) for f in frames.values())
    write_text(
        ok, "\n".join([f"{len(analysis)} analysis images of {manifest} are in none of {n} split images", *lines]) + "\n"
    )
    log.info("no leakage: %d analysis images vs %d split images in %d splits", len(analysis), n, len(frames))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
