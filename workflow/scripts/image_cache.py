"""Decode every image of a finetuning split once into its training cache (biastransfer.data.cache).

Standalone: python workflow/scripts/image_cache.py --split_file results/splits/D/train.parquet
--index C/train.json --shards C/train.shards --setting 256-bilinear-q95 --threads 4
--settings '{"cache_format": "biastransfer-image-cache/2"}' (the format the rule asks for: the only one this
library writes)
"""

from biastransfer.data.cache import CACHE_FORMAT, CacheSetting, build_cache
from biastransfer.data.splits import read_split
from biastransfer.progress import LOGGER as progress_log
from biastransfer.scripting import run
from biastransfer.workflow.rules.data import ImageCacheSettings


def main(
    split_file: str, index: str, shards: str, setting: str, settings: ImageCacheSettings, threads: int = 1
) -> None:
    if settings.cache_format != CACHE_FORMAT:
        raise ValueError(f"cache format {settings.cache_format!r} asked for, but this library writes {CACHE_FORMAT}")
    frame = read_split(split_file).frame
    build_cache(
        split_file,
        list(frame["image_id"]),
        list(frame["path"]),
        index,
        shards,
        CacheSetting.parse(setting),
        workers=threads,
        log=progress_log.info,
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
