"""Decoded-once training cache of a finetuning split: every image read once, resized, in a few shards.

Format (``biastransfer-image-cache/1``; docs/formats.md): an index (JSON) and a folder of shards. Each
shard is an Arrow IPC file (the Feather v2 container: memory-mapped, random access to any record batch
through its footer) with one row per image in split order: ``image_id`` (string), ``data`` (the encoded
image, binary) and ``crc32`` (uint32 of ``data``). The index records the split's sha256, the resize
setting, and the shards' row counts and byte sizes. A reader checks the sizes and footers when it
opens a shard and each image's crc32 when it reads it; a mismatch is a :class:`CacheError` naming the
shard and the image, and the index is deleted so that the workflow rebuilds the cache.

An image whose short side exceeds ``side`` is decoded (JPEG draft mode: in the DCT domain at the
largest power-of-two reduction that keeps the short side >= ``side``), resized so that its short side is
``side`` with the model's interpolation (the size torchvision's ``Resize(side)`` computes, so the
model's own resize leaves it unchanged) and stored as a JPEG of ``quality`` (4:2:0 chroma, as camera
JPEGs). A smaller image is stored byte for byte, so its pixels are exactly those of the original file.
"""

from __future__ import annotations

import bisect
import io
import json
import os
import shutil
import zlib
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
from PIL import Image

from biastransfer.atomic import write_text
from biastransfer.hashing import file_digest
from biastransfer.images import load_rgb

CACHE_FORMAT = "biastransfer-image-cache/1"
_FILTERS = {"bilinear": Image.BILINEAR, "bicubic": Image.BICUBIC}
_ROWS_PER_BATCH = 64  # the unit of random access inside a shard
_SHARD_BYTES = 1 << 30  # a new shard after about 1 GiB
_SCHEMA = pa.schema([("image_id", pa.string()), ("data", pa.binary()), ("crc32", pa.uint32())])


class CacheError(ValueError):
    """A missing, stale, truncated or corrupt cache (the message names the file and, where known, the image)."""


def resized_size(width: int, height: int, side: int) -> tuple[int, int]:
    """(width, height) after torchvision's ``Resize(side)``: short side ``side``, long side truncated."""
    if width <= height:
        return side, int(side * height / width)
    return int(side * width / height), side


def encode_for_cache(path: str, side: int, interpolation: str, quality: int) -> bytes:
    """The cached bytes of one image: the file itself if its short side is at most ``side``, else resized."""
    try:
        with Image.open(path) as probe:  # the header only
            if min(probe.size) <= side:
                return Path(path).read_bytes()
        img = load_rgb(path, min_side=side)
        img = img.resize(resized_size(*img.size, side), _FILTERS[interpolation])
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read image {path}: {exc}") from exc
    out = io.BytesIO()
    img.save(out, format="JPEG", quality=quality, subsampling=2)
    return out.getvalue()


def _encode_job(args: tuple[str, int, str, int]) -> bytes:
    return encode_for_cache(*args)


@dataclass(frozen=True)
class CacheSetting:
    """How a cache resizes: the short side, the interpolation and the JPEG quality of resized images."""

    side: int
    interpolation: str = "bilinear"
    quality: int = 95

    def __post_init__(self):
        if isinstance(self.side, bool) or not isinstance(self.side, int) or self.side < 1:
            raise ValueError(f"cache side must be a positive integer, got {self.side!r}")
        if self.interpolation not in _FILTERS:
            raise ValueError(f"cache interpolation must be one of {', '.join(_FILTERS)}, got {self.interpolation!r}")
        if isinstance(self.quality, bool) or not isinstance(self.quality, int) or not 1 <= self.quality <= 100:
            raise ValueError(f"cache quality must be an integer in 1-100, got {self.quality!r}")

    @property
    def name(self) -> str:
        """The setting as a path component, e.g. ``256-bilinear-q95``."""
        return f"{self.side}-{self.interpolation}-q{self.quality}"

    @classmethod
    def parse(cls, name: str) -> CacheSetting:
        try:
            side, interpolation, quality = name.split("-")
            return cls(int(side), interpolation, int(quality.removeprefix("q")))
        except ValueError as exc:
            raise ValueError(f"cache setting {name!r} is not SIDE-INTERPOLATION-qQUALITY: {exc}") from exc


def build_cache(
    split_path: str | os.PathLike,
    image_ids: Sequence[str],
    paths: Sequence[str],
    index_out: str | os.PathLike,
    shards_out: str | os.PathLike,
    setting: CacheSetting,
    *,
    workers: int = 1,
    shard_bytes: int = _SHARD_BYTES,
    rows_per_batch: int = _ROWS_PER_BATCH,
    log: Callable[[str], None] = print,
) -> dict:
    """Encode every image of a split (rows in split order) into shards; write the index last; return it.

    The index is deleted first and written (atomically) last, so a cache without an index is unfinished."""
    if len(image_ids) != len(paths):
        raise ValueError(f"{len(image_ids)} image ids but {len(paths)} paths")
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        raise ValueError(f"{split_path}: {len(missing)} image file(s) missing, first {missing[0]}")
    Path(index_out).unlink(missing_ok=True)
    jobs = [(str(p), setting.side, setting.interpolation, setting.quality) for p in paths]
    shards: list[dict] = []
    folder = Path(shards_out)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            _write_shards(
                folder, image_ids, pool.map(_encode_job, jobs, chunksize=16), shard_bytes, rows_per_batch, shards
            )
    else:
        _write_shards(folder, image_ids, map(_encode_job, jobs), shard_bytes, rows_per_batch, shards)
    index = {
        "format": CACHE_FORMAT,
        "split_sha256": file_digest(split_path),
        "setting": setting.name,
        "count": len(image_ids),
        "rows_per_batch": rows_per_batch,
        "bytes": sum(s["bytes"] for s in shards),
        "source_bytes": sum(os.path.getsize(p) for p in paths),
        "shards": shards,
    }
    write_text(index_out, json.dumps(index, indent=2) + "\n")
    log(
        f"cached {index['count']} images in {len(shards)} shard(s), {index['bytes'] / max(index['count'], 1):.0f} "
        f"bytes per image ({index['source_bytes'] / max(index['bytes'], 1):.1f}x smaller than the originals)"
    )
    return index


def _write_shards(
    folder, image_ids: Sequence[str], encoded: Iterable[bytes], shard_bytes: int, per_batch: int, shards: list
) -> None:
    writer, sink, rows, batch = None, None, 0, []

    def flush():
        nonlocal rows
        if batch:
            ids, data = zip(*batch)
            crc = [zlib.crc32(d) for d in data]
            writer.write_batch(
                pa.record_batch(
                    [pa.array(ids), pa.array(data, pa.binary()), pa.array(crc, pa.uint32())], schema=_SCHEMA
                )
            )
            rows += len(batch)
            batch.clear()

    def close():
        nonlocal writer, sink, rows
        flush()
        writer.close()
        sink.close()
        shards[-1].update(rows=rows, bytes=os.path.getsize(Path(folder) / shards[-1]["file"]))
        writer, sink, rows = None, None, 0

    for image_id, data in zip(image_ids, encoded, strict=True):
        if writer is None:
            shards.append({"file": f"shard-{len(shards):05d}.arrow"})
            sink = pa.OSFile(str(Path(folder) / shards[-1]["file"]), "wb")
            writer = pa.ipc.new_file(sink, _SCHEMA)
        batch.append((str(image_id), data))
        if len(batch) == per_batch:
            flush()
            if sink.tell() >= shard_bytes:
                close()
    if writer is not None:
        close()


def shards_folder(index_path: str | os.PathLike) -> Path:
    """The shard folder beside an index: ``train.json`` -> ``train.shards``."""
    return Path(index_path).with_suffix(".shards")


class ImageCache:
    """Random access to the images of a cache, checked; safe to use in forked DataLoader workers.

    ``split_sha256`` and ``image_ids``: what the cache must have been built from (the split's digest and
    its image ids in order); anything else is a :class:`CacheError` before training starts.
    """

    def __init__(self, index_path: str | os.PathLike, *, split_sha256: str | None = None, image_ids=None):
        self.index_path = Path(index_path)
        self.folder = shards_folder(self.index_path)
        try:
            self.index = json.loads(self.index_path.read_text())
        except (OSError, ValueError) as exc:
            raise CacheError(f"cannot read cache index {self.index_path}: {exc}") from exc
        if self.index.get("format") != CACHE_FORMAT:
            self._fail(
                f"cache index {self.index_path} has format {self.index.get('format')!r}, expected {CACHE_FORMAT}"
            )
        if split_sha256 is not None and self.index["split_sha256"] != split_sha256:
            self._fail(
                f"cache {self.index_path} was built from another split (sha256 {self.index['split_sha256'][:12]})"
            )
        self.per_batch = self.index["rows_per_batch"]
        self.starts, start = [], 0
        for shard in self.index["shards"]:
            self.starts.append(start)
            start += shard["rows"]
        if start != self.index["count"]:
            self._fail(f"cache index {self.index_path}: shards hold {start} rows, the index says {self.index['count']}")
        self._pid, self._readers = None, {}
        if image_ids is not None:
            cached = [
                i
                for s in range(len(self.index["shards"]))
                for i in self._reader(s).read_all().column("image_id").to_pylist()
            ]
            expected = [str(i) for i in image_ids]
            if cached != expected:
                first = next(
                    (k for k, (a, b) in enumerate(zip(cached, expected)) if a != b), min(len(cached), len(expected))
                )
                self._fail(f"cache {self.index_path} does not match its split (rows differ from row {first})")

    def __len__(self) -> int:
        return self.index["count"]

    def __getstate__(self) -> dict:  # spawned loader workers open their own memory maps
        return {**self.__dict__, "_pid": None, "_readers": {}}

    def _fail(self, message: str):
        """Delete the index (the workflow then rebuilds the cache) and raise."""
        self.index_path.unlink(missing_ok=True)
        raise CacheError(f"{message}; deleted {self.index_path} so that the next run rebuilds the cache")

    def _reader(self, s: int) -> pa.ipc.RecordBatchFileReader:
        if self._pid != os.getpid():  # memory maps are opened per process (after a fork)
            self._pid, self._readers = os.getpid(), {}
        reader = self._readers.get(s)
        if reader is None:
            shard = self.index["shards"][s]
            path = self.folder / shard["file"]
            size = path.stat().st_size if path.is_file() else None
            if size != shard["bytes"]:
                self._fail(
                    f"cache shard {path} is {'missing' if size is None else f'{size} bytes'}, expected {shard['bytes']}"
                )
            try:
                reader = pa.ipc.open_file(pa.memory_map(str(path)))
            except (OSError, pa.ArrowInvalid) as exc:
                self._fail(f"cache shard {path} is unreadable: {exc}")
            if (
                reader.schema != _SCHEMA
                or sum(reader.get_batch(b).num_rows for b in range(reader.num_record_batches)) != shard["rows"]
            ):
                self._fail(f"cache shard {path} does not hold the {shard['rows']} rows its index lists")
            self._readers[s] = reader
        return reader

    def data(self, i: int) -> bytes:
        """The stored bytes of image ``i`` (split order), checked against their crc32."""
        if not 0 <= i < len(self):
            raise IndexError(f"image {i} of a cache of {len(self)}")
        s = bisect.bisect_right(self.starts, i) - 1
        row = i - self.starts[s]
        batch = self._reader(s).get_batch(row // self.per_batch)
        j = row % self.per_batch
        data = batch.column(1)[j].as_py()
        if zlib.crc32(data) != batch.column(2)[j].as_py():
            image_id = batch.column(0)[j].as_py()
            self._fail(
                f"cache shard {self.folder / self.index['shards'][s]['file']}: image {image_id!r} (row {row}) is corrupt (crc32 mismatch)"
            )
        return data

    def image(self, i: int) -> Image.Image:
        """Image ``i`` decoded to RGB."""
        return load_rgb(io.BytesIO(self.data(i)))
