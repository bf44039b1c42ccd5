"""Decoded-once training cache of a finetuning split: every image read once, resized, in a few shards.

Format (``biastransfer-image-cache/2``; docs/formats.md): an index (JSON) and a folder of shards. Each
shard is an Arrow IPC file (the Feather v2 container: memory-mapped, random access to any record batch
through its footer) with one row per image in split order: ``image_id`` (string), ``data`` (the encoded
image, binary), ``crc32`` (uint32 of ``data``) and the source file as it was read: ``source_size``,
``source_mtime_ns`` and ``source_sha256``. The index records the split's sha256, the resize setting, and
the shards' row counts and byte sizes. A reader checks the sizes and footers when it opens a shard and
each image's crc32 when it reads it; a mismatch is a :class:`CacheError` naming the shard and the image,
and the index is deleted so that the workflow rebuilds the cache.

The split's digest keys the cache by its paths, not by the images' contents: an image edited in place
keeps its path. Given the split's paths, a reader therefore compares each file's size and modification
time with its row's record when it opens the cache, and for a file whose record differs compares its
contents (sha256); an image whose contents changed is then read from its file and encoded as a rebuild
would store it, so that training sees today's pixels (:attr:`ImageCache.changed`). Size and time rather
than contents for every image: a stat per image (about a second for COCO's 118,287 training images on a
local disk, 16 in flight for a network file system) against reading every image again (19 GB for COCO),
which a cache is there to avoid; the sha256 tells a file that was only touched or copied from one that
changed. What this misses: a change that keeps both the size and the modification time (a file system
whose times are coarser than the edit, or a tool that restores the old time).

An image whose short side exceeds ``side`` is decoded (JPEG draft mode: in the DCT domain at the
largest power-of-two reduction that keeps the short side >= ``side``), resized so that its short side is
``side`` with the model's interpolation (the size torchvision's ``Resize(side)`` computes, so the
model's own resize leaves it unchanged) and stored as a JPEG of ``quality`` (4:2:0 chroma, as camera
JPEGs). A smaller image is stored byte for byte, so its pixels are exactly those of the original file.
"""

from __future__ import annotations

import bisect
import errno
import hashlib
import io
import json
import os
import shutil
import zlib
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
from PIL import Image

from biastransfer.atomic import write_text
from biastransfer.hashing import file_digest
from biastransfer.images import load_rgb

CACHE_FORMAT = "biastransfer-image-cache/2"
_FILTERS = {"bilinear": Image.BILINEAR, "bicubic": Image.BICUBIC}
_ROWS_PER_BATCH = 64  # the unit of random access inside a shard
_SHARD_BYTES = 1 << 30  # a new shard after about 1 GiB
_STAT_THREADS = 16  # the source check's stat calls in flight
_SCHEMA = pa.schema(
    [
        ("image_id", pa.string()),
        ("data", pa.binary()),
        ("crc32", pa.uint32()),
        ("source_size", pa.int64()),
        ("source_mtime_ns", pa.int64()),
        ("source_sha256", pa.binary(32)),
    ]
)


class CacheError(ValueError):
    """A missing, stale, truncated or corrupt cache (the message names the file and, where known, the image)."""


def resized_size(width: int, height: int, side: int) -> tuple[int, int]:
    """(width, height) after torchvision's ``Resize(side)``: short side ``side``, long side truncated."""
    if width <= height:
        return side, int(side * height / width)
    return int(side * width / height), side


@dataclass(frozen=True)
class Source:
    """An image file as the cache read it: its size and modification time (taken from the open file
    before reading) and the sha256 of the bytes read."""

    size: int
    mtime_ns: int
    sha256: bytes


def read_source(path: str | os.PathLike) -> tuple[bytes, Source]:
    """The bytes of an image file and its :class:`Source` record."""
    with open(path, "rb") as fh:
        stat = os.fstat(fh.fileno())
        raw = fh.read()
    return raw, Source(stat.st_size, stat.st_mtime_ns, hashlib.sha256(raw).digest())


def encode_for_cache(path: str, side: int, interpolation: str, quality: int) -> bytes:
    """The cached bytes of one image: the file itself if its short side is at most ``side``, else resized."""
    return _encoded(path, read_source(path)[0], side, interpolation, quality)


def _encoded(path: str, raw: bytes, side: int, interpolation: str, quality: int) -> bytes:
    """The cached bytes of the image file ``path`` whose bytes are ``raw``."""
    try:
        with Image.open(io.BytesIO(raw)) as probe:  # the header only
            if min(probe.size) <= side:
                return raw
    except (OSError, ValueError):
        pass  # load_rgb names what is wrong
    img = load_rgb(io.BytesIO(raw), min_side=side, name=path)
    img = img.resize(resized_size(*img.size, side), _FILTERS[interpolation])
    out = io.BytesIO()
    img.save(out, format="JPEG", quality=quality, subsampling=2)
    return out.getvalue()


def _encode_job(args: tuple[str, int, str, int]) -> tuple[bytes, Source]:
    raw, source = read_source(args[0])
    return _encoded(args[0], raw, *args[1:]), source


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
    """Encode every image of a split (rows in split order) into shards, each with its file's :class:`Source`
    record; write the index last; return it.

    The index is deleted first and written (atomically) last, so a cache without an index is unfinished."""
    if len(image_ids) != len(paths):
        raise ValueError(f"{len(image_ids)} image ids but {len(paths)} paths")
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        raise ValueError(f"{split_path}: {len(missing)} image file(s) missing, first {missing[0]}")
    Path(index_out).unlink(missing_ok=True)
    jobs = [(str(p), setting.side, setting.interpolation, setting.quality) for p in paths]
    shards: list[dict] = []
    sizes: list[int] = []
    folder = Path(shards_out)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            _write_shards(
                folder, image_ids, pool.map(_encode_job, jobs, chunksize=16), shard_bytes, rows_per_batch, shards, sizes
            )
    else:
        _write_shards(folder, image_ids, map(_encode_job, jobs), shard_bytes, rows_per_batch, shards, sizes)
    index = {
        "format": CACHE_FORMAT,
        "split_sha256": file_digest(split_path),
        "setting": setting.name,
        "count": len(image_ids),
        "rows_per_batch": rows_per_batch,
        "bytes": sum(s["bytes"] for s in shards),
        "source_bytes": sum(sizes),
        "shards": shards,
    }
    write_text(index_out, json.dumps(index, indent=2) + "\n")
    log(
        f"cached {index['count']} images in {len(shards)} shard(s), {index['bytes'] / max(index['count'], 1):.0f} "
        f"bytes per image ({index['source_bytes'] / max(index['bytes'], 1):.1f}x smaller than the originals)"
    )
    return index


def _write_shards(
    folder,
    image_ids: Sequence[str],
    encoded: Iterable[tuple[bytes, Source]],
    shard_bytes: int,
    per_batch: int,
    shards: list,
    sizes: list,
) -> None:
    """Write the rows into shards, appending each shard's entry to ``shards`` and each source's size to ``sizes``."""
    writer, sink, rows, batch = None, None, 0, []

    def flush():
        nonlocal rows
        if batch:
            ids, data, sources = zip(*batch)
            columns = [
                pa.array(ids),
                pa.array(data, pa.binary()),
                pa.array([zlib.crc32(d) for d in data], pa.uint32()),
                pa.array([s.size for s in sources], pa.int64()),
                pa.array([s.mtime_ns for s in sources], pa.int64()),
                pa.array([s.sha256 for s in sources], pa.binary(32)),
            ]
            writer.write_batch(pa.record_batch(columns, schema=_SCHEMA))
            sizes.extend(s.size for s in sources)
            rows += len(batch)
            batch.clear()

    def close():
        nonlocal writer, sink, rows
        flush()
        writer.close()
        sink.close()
        shards[-1].update(rows=rows, bytes=os.path.getsize(Path(folder) / shards[-1]["file"]))
        writer, sink, rows = None, None, 0

    try:
        for image_id, (data, source) in zip(image_ids, encoded, strict=True):
            if writer is None:
                shards.append({"file": f"shard-{len(shards):05d}.arrow"})
                sink = pa.OSFile(str(Path(folder) / shards[-1]["file"]), "wb")
                writer = pa.ipc.new_file(sink, _SCHEMA)
            batch.append((str(image_id), data, source))
            if len(batch) == per_batch:
                flush()
                if sink.tell() >= shard_bytes:
                    close()
        if writer is not None:
            close()
    except OSError as exc:  # Arrow's message names no file
        if exc.errno == errno.ENOSPC:
            raise OSError(errno.ENOSPC, "no space left on device", str(Path(folder) / shards[-1]["file"])) from exc
        raise


def _stats(paths: Sequence[str]) -> np.ndarray:
    """(size, modification time in ns) of each file, one row each; (-1, -1) for a file that is not there."""
    out = np.full((len(paths), 2), -1, np.int64)
    for k, path in enumerate(paths):
        try:
            stat = os.stat(path)
        except FileNotFoundError:
            continue
        out[k] = stat.st_size, stat.st_mtime_ns
    return out


def shards_folder(index_path: str | os.PathLike) -> Path:
    """The shard folder beside an index: ``train.json`` -> ``train.shards``."""
    return Path(index_path).with_suffix(".shards")


class ImageCache:
    """Random access to the images of a cache, checked; safe to use in forked DataLoader workers.

    ``split_sha256`` and ``image_ids``: what the cache must have been built from (the split's digest and
    its image ids in order); anything else is a :class:`CacheError` before training starts. ``paths``: the
    split's image files in row order, checked against the rows' source records when the cache opens (see
    the module docstring): :attr:`changed` maps the row of each image whose contents changed to its file,
    which :meth:`data` encodes afresh; :attr:`missing` lists the files no longer there (their cached
    bytes are read); :meth:`source_note` says what was found.
    """

    def __init__(self, index_path: str | os.PathLike, *, split_sha256: str | None = None, image_ids=None, paths=None):
        self.index_path = Path(index_path)
        self.folder = shards_folder(self.index_path)
        try:
            self.index = json.loads(self.index_path.read_text())
        except (OSError, ValueError) as exc:
            raise CacheError(f"cannot read cache index {self.index_path}: {exc}") from exc
        if self.index.get("format") != CACHE_FORMAT:
            self._fail(
                f"cache {self.index_path} has format {self.index.get('format')!r}; this version reads "
                f"{CACHE_FORMAT}, which records each image file's size, modification time and sha256"
            )
        if split_sha256 is not None and self.index["split_sha256"] != split_sha256:
            self._fail(
                f"cache {self.index_path} was built from another split (sha256 {self.index['split_sha256'][:12]})"
            )
        self.setting = CacheSetting.parse(self.index["setting"])
        self.per_batch = self.index["rows_per_batch"]
        self.starts, start = [], 0
        for shard in self.index["shards"]:
            self.starts.append(start)
            start += shard["rows"]
        if start != self.index["count"]:
            self._fail(f"cache index {self.index_path}: shards hold {start} rows, the index says {self.index['count']}")
        self._pid, self._readers = None, {}
        if image_ids is not None:
            cached = self._column("image_id").to_pylist()
            expected = [str(i) for i in image_ids]
            if cached != expected:
                first = next(
                    (k for k, (a, b) in enumerate(zip(cached, expected)) if a != b), min(len(cached), len(expected))
                )
                self._fail(f"cache {self.index_path} does not match its split (rows differ from row {first})")
        self.changed: dict[int, str] = {}
        self.missing: list[str] = []
        self.touched = 0  # files with another size or time but the same contents
        if paths is not None:
            self._check_sources([str(p) for p in paths])

    def _column(self, name: str) -> pa.ChunkedArray:
        """A column of every shard, in row order (memory-mapped: nothing is copied)."""
        return pa.chunked_array(
            [c for s in range(len(self.index["shards"])) for c in self._reader(s).read_all().column(name).chunks],
            _SCHEMA.field(name).type,
        )

    def _check_sources(self, paths: list[str]) -> None:
        if len(paths) != len(self):
            self._fail(f"cache {self.index_path} does not match its split ({len(paths)} images, {len(self)} rows)")
        sizes = self._column("source_size").to_numpy()
        times = self._column("source_mtime_ns").to_numpy()
        step = -(-len(paths) // (4 * _STAT_THREADS)) or 1
        with ThreadPoolExecutor(_STAT_THREADS) as pool:  # a network file system answers each stat slowly
            parts = list(pool.map(_stats, (paths[k : k + step] for k in range(0, len(paths), step))))
        found = np.concatenate(parts) if parts else np.empty((0, 2), np.int64)
        gone = found[:, 0] < 0
        self.missing = [paths[i] for i in np.flatnonzero(gone)]
        differ = np.flatnonzero(~gone & ((found[:, 0] != sizes) | (found[:, 1] != times)))
        if len(differ):
            digests = self._column("source_sha256")
            for i in differ.tolist():
                with open(paths[i], "rb") as fh:
                    same = hashlib.file_digest(fh, "sha256").digest() == digests[i].as_py()
                if same:
                    self.touched += 1
                else:
                    self.changed[i] = paths[i]

    def source_note(self) -> str:
        """What the check of the image files found (empty when every file is as it was cached)."""
        parts = []
        if self.changed:
            parts.append(
                f"{len(self.changed)} image(s) changed since it was built (first: {next(iter(self.changed.values()))}): "
                "read from their files and encoded as a rebuild would store them"
            )
        if self.missing:
            parts.append(
                f"{len(self.missing)} image file(s) no longer there (first: {self.missing[0]}): their cached copies are read"
            )
        if self.touched:
            parts.append(f"{self.touched} image file(s) with a new modification time but the same contents")
        return f"cache {self.index_path}: " + "; ".join(parts) if parts else ""

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
        """The stored bytes of image ``i`` (split order), checked against their crc32; those of a changed
        image (:attr:`changed`) encoded from its file."""
        if not 0 <= i < len(self):
            raise IndexError(f"image {i} of a cache of {len(self)}")
        if i in self.changed:
            return encode_for_cache(
                self.changed[i], self.setting.side, self.setting.interpolation, self.setting.quality
            )
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
