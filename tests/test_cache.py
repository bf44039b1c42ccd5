"""The decoded-once training cache: exact for small images, close for resized ones, checked, and equal in training."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import ROOT, Killed, die_after_resume_save, in_small_file_system, run_snakemake
from fake_datasets import coco_splits
from PIL import Image
from torchvision import transforms as T

from biastransfer.data.cache import CACHE_FORMAT, CacheError, CacheSetting, ImageCache, build_cache, resized_size
from biastransfer.data.splits import Split, read_split, write_split
from biastransfer.hashing import file_digest
from biastransfer.images import load_rgb
from biastransfer.models.checkpoints import load_classifier_from_checkpoint
from biastransfer.models.extractors import create_classifier
from biastransfer.models.resolve import resolve_spec
from biastransfer.models.spec import Preprocess
from biastransfer.train import loop as tr
from biastransfer.train.data import ImageLabelDataset
from biastransfer.train.run import TrainingFiles, run_training, train_config

PRE = {"resize": 32, "crop": 32, "interpolation": "bilinear", "mean": [0.5] * 3, "std": [0.25] * 3, "train_hflip": True}


def photo(width: int, height: int, seed: int = 0) -> Image.Image:
    """Smooth colour fields with texture: JPEG-like content, not flat noise."""
    rng = np.random.default_rng(seed)
    low = Image.fromarray(rng.integers(0, 256, (6, 8, 3), dtype=np.uint8)).resize((width, height), Image.BICUBIC)
    grain = rng.normal(0, 12, (height, width, 3))
    return Image.fromarray(np.clip(np.asarray(low, float) + grain, 0, 255).astype(np.uint8))


@pytest.fixture()
def images(tmp_path):
    """A large JPEG, a small PNG and a JPEG whose short side equals the cache side (64)."""
    paths = [tmp_path / "big.jpg", tmp_path / "small.png", tmp_path / "edge.jpg", tmp_path / "tall.jpg"]
    photo(300, 200, 1).save(paths[0], quality=92)
    photo(40, 50, 2).save(paths[1])
    photo(64, 90, 3).save(paths[2], quality=90)
    photo(150, 400, 4).save(paths[3], quality=90)
    split = tmp_path / "split.parquet"
    split.write_bytes(b"stands in for the split file: only its digest is recorded")
    return split, [str(p) for p in paths]


def build(tmp_path, split, paths, **kwargs):
    index = tmp_path / "cache" / "train.json"
    built = build_cache(
        split,
        [f"img{i}" for i in range(len(paths))],
        paths,
        index,
        index.with_suffix(".shards"),
        CacheSetting(64, "bilinear", 95),
        log=lambda m: None,
        **kwargs,
    )
    return index, built


@pytest.mark.parametrize("size", [(640, 480), (480, 640), (1024, 768), (333, 500), (257, 256), (256, 256), (99, 1000)])
def test_resized_size_is_what_torchvision_resize_gives(size):
    img = Image.new("RGB", size)
    assert T.Resize(256)(img).size == resized_size(*size, 256)


@pytest.mark.parametrize("hflip, mean", [(True, (0.485, 0.456, 0.406)), (False, None)])
def test_uint8_transform_then_normalize_is_the_float_transform_bit_for_bit(hflip, mean):
    pre = Preprocess(40, 32, "bicubic", mean, (0.229, 0.224, 0.225) if mean else None, train_hflip=hflip)
    img = photo(70, 50, 5)
    for seed in range(4):  # seeded flips: both paths draw the same
        torch.manual_seed(seed)
        expected = pre.transform(train=True)(img)
        torch.manual_seed(seed)
        got = pre.uint8_transform(train=True)(img)
        assert got.dtype == torch.uint8
        assert torch.equal(pre.normalize(got[None])[0], expected)


def test_round_trip_keeps_small_images_byte_for_byte_and_resizes_large_ones(tmp_path, images):
    split, paths = images
    index, built = build(tmp_path, split, paths, shard_bytes=1, rows_per_batch=1)  # one image per shard
    cache = ImageCache(index, split_sha256=file_digest(split), image_ids=[f"img{i}" for i in range(4)])
    assert len(cache) == 4 and built["count"] == 4 and built["split_sha256"] == file_digest(split)
    assert cache.data(1) == open(paths[1], "rb").read() and cache.data(2) == open(paths[2], "rb").read()
    for i, shape in ((0, (96, 64)), (3, (64, 170))):
        img = cache.image(i)
        assert img.size == shape
        reference = T.Resize(64)(load_rgb(paths[i]))  # today's path: full decode, then the model's resize
        assert np.abs(np.asarray(img, float) - np.asarray(reference, float)).mean() < 4
        assert T.Resize(64)(img).size == img.size  # the model's resize leaves a cached image as it is
    assert built["bytes"] == sum(s["bytes"] for s in built["shards"])
    folder = index.with_suffix(".shards")
    assert [(s["file"], s["rows"]) for s in built["shards"]] == [(f"shard-0000{k}.arrow", 1) for k in range(4)]
    assert all(s["bytes"] == (folder / s["file"]).stat().st_size for s in built["shards"])


def test_a_cache_pickles_for_spawned_loader_workers(tmp_path, images):
    split, paths = images
    index, _ = build(tmp_path, split, paths)
    cache = ImageCache(index)
    first = cache.data(0)
    assert pickle.loads(pickle.dumps(cache)).data(0) == first


def test_parallel_build_writes_the_same_shards(tmp_path, images):
    split, paths = images
    one, _ = build(tmp_path / "a", split, paths)
    two, _ = build(tmp_path / "b", split, paths, workers=2)
    shard = "shard-00000.arrow"
    assert (one.with_suffix(".shards") / shard).read_bytes() == (two.with_suffix(".shards") / shard).read_bytes()


def test_jpeg_draft_mode_decodes_at_a_reduced_scale_that_keeps_the_short_side(tmp_path):
    path = tmp_path / "p.jpg"
    photo(1024, 768, 6).save(path, quality=90)
    assert load_rgb(path, min_side=256).size == (512, 384)  # 1/2: a quarter would leave 192 px
    assert load_rgb(path, min_side=100).size == (256, 192)  # 1/4: the largest reduction keeping 100 px
    assert load_rgb(path).size == (1024, 768)


def test_a_corrupt_image_names_shard_and_image_and_deletes_the_index(tmp_path, images):
    split, paths = images
    index, built = build(tmp_path, split, paths)
    shard = index.with_suffix(".shards") / built["shards"][0]["file"]
    blob = bytearray(shard.read_bytes())
    at = bytes(blob).find(open(paths[2], "rb").read())  # image 2 is stored verbatim
    assert at > 0
    blob[at + 300] ^= 0xFF
    shard.write_bytes(bytes(blob))
    cache = ImageCache(index)
    assert cache.data(0)  # the other images still read
    with pytest.raises(CacheError, match=r"shard-00000.arrow: image 'img2' \(row 2\) is corrupt.*rebuilds"):
        cache.data(2)
    assert not index.exists()


def test_a_truncated_shard_is_a_clear_error_at_open(tmp_path, images):
    split, paths = images
    index, built = build(tmp_path, split, paths)
    shard = index.with_suffix(".shards") / built["shards"][0]["file"]
    shard.write_bytes(shard.read_bytes()[:-100])
    with pytest.raises(CacheError, match=rf"shard .*shard-00000.arrow is {built['shards'][0]['bytes'] - 100} bytes"):
        ImageCache(index).data(0)
    assert not index.exists()


def test_a_cache_of_another_split_is_refused_and_deleted(tmp_path, images):
    split, paths = images
    index, _ = build(tmp_path, split, paths)
    with pytest.raises(CacheError, match="built from another split"):
        ImageCache(index, split_sha256="0" * 64)
    assert not index.exists()
    index, _ = build(tmp_path, split, paths)
    with pytest.raises(CacheError, match="does not match its split \\(rows differ from row 1\\)"):
        ImageCache(index, image_ids=["img0", "other", "img2", "img3"])
    with pytest.raises(CacheError, match="cannot read cache index"):
        ImageCache(index)


def test_a_missing_image_fails_before_anything_is_written(tmp_path, images):
    split, paths = images
    with pytest.raises(ValueError, match="1 image file\\(s\\) missing, first .*nothere.jpg"):
        build(tmp_path, split, [*paths[:3], str(tmp_path / "nothere.jpg")])
    assert not (tmp_path / "cache").exists()


def test_an_image_edited_in_place_is_read_from_its_file_as_a_rebuilt_cache_would_store_it(tmp_path, images):
    split, paths = images
    index, _ = build(tmp_path, split, paths)
    recorded = [os.stat(p) for p in paths]
    photo(300, 200, 9).save(paths[0], quality=92)  # other pixels, same path: resized in the cache
    small = np.asarray(Image.open(paths[1])).copy()
    small[:10] = 255 - small[:10]
    Image.fromarray(small).save(paths[1])  # a small image: stored verbatim
    for path, stat in zip(paths[:2], recorded):  # a later time, even on a file system with coarse times
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    os.utime(paths[2], ns=(recorded[2].st_atime_ns, recorded[2].st_mtime_ns + 10**9))  # touched only
    ids = [f"img{i}" for i in range(4)]
    cache = ImageCache(index, image_ids=ids, paths=paths)
    assert cache.changed == {0: paths[0], 1: paths[1]} and cache.touched == 1 and cache.missing == []
    assert "2 image(s) changed since it was built (first: " in cache.source_note()
    assert "1 image file(s) with a new modification time but the same contents" in cache.source_note()
    rebuilt, _ = build(tmp_path / "again", split, paths)
    fresh = ImageCache(rebuilt, paths=paths)
    assert fresh.changed == {} and fresh.source_note() == ""
    assert [cache.data(i) for i in range(4)] == [fresh.data(i) for i in range(4)]
    assert np.array_equal(np.asarray(cache.image(1)), small)
    assert pickle.loads(pickle.dumps(cache)).data(0) == fresh.data(0)  # loader workers see the new pixels too


def test_an_image_edited_without_a_new_size_or_time_is_the_documented_blind_spot(tmp_path):
    """Same size, same modification time, other pixels: not looked at (the module docstring says so)."""
    path = tmp_path / "a.bmp"  # uncompressed: other pixels keep the size
    photo(40, 30, 1).save(path)
    index, _ = build(tmp_path, path, [str(path)])
    stat = os.stat(path)
    photo(40, 30, 2).save(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert os.stat(path).st_size == stat.st_size
    assert ImageCache(index, paths=[str(path)]).changed == {}


def test_a_deleted_image_file_is_read_from_the_cache_and_named(tmp_path, images):
    split, paths = images
    index, _ = build(tmp_path, split, paths)
    kept = ImageCache(index).data(3)
    os.unlink(paths[3])
    cache = ImageCache(index, paths=paths)
    assert cache.missing == [paths[3]] and cache.data(3) == kept
    assert f"1 image file(s) no longer there (first: {paths[3]}): their cached copies are read" in cache.source_note()


def test_a_cache_of_the_old_format_is_deleted_with_the_reason(tmp_path, images):
    split, paths = images
    index, _ = build(tmp_path, split, paths)
    index.write_text(json.dumps({**json.loads(index.read_text()), "format": "biastransfer-image-cache/1"}))
    reason = (
        rf"format 'biastransfer-image-cache/1'; this version reads {CACHE_FORMAT}, which records each image "
        r"file's size, modification time and sha256; deleted .* so that the next run rebuilds the cache"
    )
    with pytest.raises(CacheError, match=reason):
        ImageCache(index)
    assert not index.exists()


def test_the_workflow_rebuilds_a_cache_of_the_old_format_and_says_why(tmp_path):
    (tmp_path / "c.yaml").write_text("datasets: {synthetic_target: {n_train: 40, n_val: 20}}\nfinetune: {cache: on}\n")
    target = "results/cache/synthetic_target/64-bilinear-q95/train.json"
    args = ("--configfile", ROOT / "config" / "config.yaml", tmp_path / "c.yaml", "--cores", "2", target)
    run_snakemake(*args, cwd=tmp_path)
    # as the previous version left it: an index of format 1, written by a rule without params
    index = tmp_path / target
    index.write_text(json.dumps({**json.loads(index.read_text()), "format": "biastransfer-image-cache/1"}))
    records = [
        p
        for p in (tmp_path / ".snakemake" / "metadata").iterdir()
        if json.loads(p.read_text())["rule"] == "image_cache"
    ]
    assert len(records) == 2  # the index and the shard folder
    for record in records:
        record.write_text(json.dumps({**json.loads(record.read_text()), "params": []}))
    done = run_snakemake(*args, cwd=tmp_path)
    assert "Params have changed since last execution" in done.stderr and CACHE_FORMAT in done.stderr
    assert json.loads(index.read_text())["format"] == CACHE_FORMAT


BUILD = """
import sys
from biastransfer.data.cache import CacheSetting, build_cache
split, folder, *paths = sys.argv[1:]
build_cache(split, [str(i) for i in range(len(paths))], paths, folder + "/train.json", folder + "/train.shards",
            CacheSetting(512), log=print)
"""


def test_a_full_disk_while_writing_a_shard_is_named_with_the_shard(tmp_path):
    """Four 400 px noise PNGs (480 kB each, kept verbatim) into a real 1 MB file system."""
    rng = np.random.default_rng(0)
    paths = [tmp_path / f"noise{i}.png" for i in range(4)]
    for path in paths:
        Image.fromarray(rng.integers(0, 256, (400, 400, 3), dtype=np.uint8)).save(path)
    split, small = tmp_path / "split.parquet", tmp_path / "small"
    split.write_bytes(b"stands in for the split file")
    small.mkdir()
    done = subprocess.run(
        [*in_small_file_system(small), sys.executable, "-c", BUILD, str(split), str(small), *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    last = done.stderr.strip().splitlines()[-1]
    assert last == f"OSError: [Errno 28] no space left on device: '{small}/train.shards/shard-00000.arrow'", done.stderr


def test_cache_setting_names_round_trip_and_bad_values_are_clear():
    assert CacheSetting.parse("256-bicubic-q90") == CacheSetting(256, "bicubic", 90)
    assert CacheSetting(224, "bicubic").name == "224-bicubic-q95"
    with pytest.raises(ValueError, match="interpolation must be one of"):
        CacheSetting(256, "nearest")
    with pytest.raises(ValueError, match="is not SIDE-INTERPOLATION-qQUALITY"):
        CacheSetting.parse("256-bilinear")


@pytest.fixture(scope="module")
def small_coco(tmp_path_factory):
    """Fake COCO splits of 24-px JPEGs: smaller than the model's resize, so the cache keeps them verbatim."""
    root = tmp_path_factory.mktemp("small")
    train, val = coco_splits(root, size=24)
    return train, val, tuple(_cache_split(path, root / "cache" / f"{path.stem}.json") for path in (train, val))


def _cache_split(split: Path, index: Path, size: int = 32) -> str:
    """Build the decoded cache of a split's images at ``index`` (resized to ``size``, bilinear); its path."""
    frame = read_split(split).frame
    setting = CacheSetting(size, "bilinear")
    build_cache(
        split,
        list(frame["image_id"]),
        list(frame["path"]),
        index,
        index.with_suffix(".shards"),
        setting,
        log=lambda m: None,
    )
    return str(index)


def _train(small_coco, tmp_path, cache, spec, epochs=1, **options):
    """Train ``spec`` on the splits ``small_coco`` starts with, into ``tmp_path``, from the ``cache`` indexes (train,
    val) or from the files (None); ``options`` replace run_training's quiet log and resume file."""
    train, val = small_coco[:2]
    return run_training(
        lambda classes: create_classifier(spec, len(classes), None),
        spec,
        TrainingFiles(
            str(train),
            str(val),
            str(tmp_path / "model.safetensors"),
            str(tmp_path / "m.json"),
            train_cache=cache and cache[0],
            val_cache=cache and cache[1],
        ),
        train_config({"epochs": epochs, "lr": 0.05, "batch_size": 8}, 5, 0),
        device=torch.device("cpu"),
        threads=1,
        **{"resume": str(tmp_path / "r.pt"), "log": lambda s: None, **options},
    )


def test_training_from_the_cache_equals_training_from_the_files(small_coco, tmp_path):
    spec = resolve_spec("tiny", {"source": "timm", "arch": "resnet10t", "weights": None, "preprocess": PRE})
    files = _train(small_coco, tmp_path / "files", None, spec)
    cached = _train(small_coco, tmp_path / "cache", small_coco[2], spec)
    assert cached["cache"] == "32-bilinear-q95" and "cache" not in files
    assert cached["history"][0]["train_loss"] == files["history"][0]["train_loss"]
    assert cached["metric_value"] == files["metric_value"]
    weights = [
        load_classifier_from_checkpoint(tmp_path / d / "model.safetensors")[0].state_dict() for d in ("files", "cache")
    ]
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])


def test_a_cache_for_another_resize_is_refused(small_coco, tmp_path):
    spec = resolve_spec(
        "tiny", {"source": "timm", "arch": "resnet10t", "weights": None, "preprocess": {**PRE, "resize": 40}}
    )
    with pytest.raises(ValueError, match="resized to 32 px \\(bilinear\\) but tiny resizes to 40 px"):
        _train(small_coco, tmp_path, small_coco[2], spec)


def test_a_training_image_edited_in_place_is_what_the_network_learns_from(tmp_path):
    """The split (paths) is unchanged, so is the cache; the training from it must still see the new pixels."""
    train, val = coco_splits(tmp_path / "data", size=24)
    indexes = [_cache_split(path, tmp_path / "cache" / f"{path.stem}.json") for path in (train, val)]
    edited = read_split(train).frame["path"].iloc[3]
    stat = os.stat(edited)
    Image.fromarray(255 - np.asarray(Image.open(edited))).save(edited, quality=95)
    os.utime(edited, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    spec = resolve_spec("tiny", {"source": "timm", "arch": "resnet10t", "weights": None, "preprocess": PRE})
    logs = []
    runs = {}
    for name, cache in (("files", None), ("cache", indexes)):
        runs[name] = _train((train, val), tmp_path / name, cache, spec, resume=None, log=logs.append)
    assert runs["cache"]["history"][0]["train_loss"] == runs["files"]["history"][0]["train_loss"]
    weights = [load_classifier_from_checkpoint(tmp_path / d / "model.safetensors")[0].state_dict() for d in runs]
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    assert any(f"train.json: 1 image(s) changed since it was built (first: {edited})" in m for m in logs), logs


def test_a_validation_cache_for_another_resize_is_refused(small_coco, tmp_path):
    train, val, (train_cache, _) = small_coco
    val_cache = _cache_split(val, tmp_path / "other" / "val.json", size=40)
    spec = resolve_spec("tiny", {"source": "timm", "arch": "resnet10t", "weights": None, "preprocess": PRE})
    with pytest.raises(
        ValueError, match=r"cache .*other/val.json is resized to 40 px \(bilinear\) but tiny resizes to 32"
    ):
        _train(small_coco, tmp_path, (train_cache, val_cache), spec)


def test_a_run_from_the_cache_resumes_and_a_state_without_it_is_discarded(small_coco, tmp_path, monkeypatch):
    spec = resolve_spec("tiny", {"source": "timm", "arch": "resnet10t", "weights": None, "preprocess": PRE})
    full = _train(small_coco, tmp_path / "full", small_coco[2], spec, epochs=2)
    save = die_after_resume_save(monkeypatch)
    with pytest.raises(Killed):
        _train(small_coco, tmp_path / "cut", small_coco[2], spec, epochs=2)
    monkeypatch.setattr(tr, "_save_resume", save)
    resumed = _train(small_coco, tmp_path / "cut", small_coco[2], spec, epochs=2)
    assert resumed["history"] == [
        dict(r, seconds=a["seconds"], images_per_s=a["images_per_s"], data_seconds=a["data_seconds"])
        for r, a in zip(full["history"], resumed["history"])
    ]
    # a resume state written without the cache is not continued with it
    die_after_resume_save(monkeypatch)
    with pytest.raises(Killed):
        _train(small_coco, tmp_path / "mixed", None, spec, epochs=2)
    monkeypatch.setattr(tr, "_save_resume", save)
    logs = []
    train, val, cache = small_coco
    run_training(
        lambda classes: create_classifier(spec, len(classes), None),
        spec,
        TrainingFiles(
            str(train),
            str(val),
            str(tmp_path / "mixed" / "model.safetensors"),
            str(tmp_path / "mixed" / "m.json"),
            train_cache=cache[0],
            val_cache=cache[1],
        ),
        train_config({"epochs": 2, "lr": 0.05, "batch_size": 8}, 5, 0),
        resume=str(tmp_path / "mixed" / "r.pt"),
        device=torch.device("cpu"),
        threads=1,
        log=logs.append,
    )
    assert any("was written with another cache; discarding it" in m for m in logs), logs


def test_dataset_and_cache_of_different_lengths_are_refused(small_coco, tmp_path, images):
    split, paths = images
    index, _ = build(tmp_path, split, paths)
    with pytest.raises(ValueError, match="split coco/train: 30 images but its cache has 4"):
        ImageLabelDataset(read_split(small_coco[0]), Preprocess(32, 32).uint8_transform(), cache=ImageCache(index))


def test_a_mitigation_arm_reads_its_sources_caches_through_the_splits_they_were_built_from(small_coco, tmp_path):
    """An arm's split is its from's under another name (another digest, the same rows): with the source's
    splits named, the source's caches train it as they train the source; without, they are another split's."""
    spec = resolve_spec("tiny", {"source": "timm", "arch": "resnet10t", "weights": None, "preprocess": PRE})
    train, val, cache = small_coco
    copies = []
    for path in (train, val):
        split = read_split(path)
        copies.append(tmp_path / f"arm_{path.name}")
        write_split(copies[-1], Split("arm", split.name, split.classes, split.frame))

    def files(**options):
        return TrainingFiles(
            str(copies[0]),
            str(copies[1]),
            str(tmp_path / "model.safetensors"),
            str(tmp_path / "m.json"),
            **{"train_cache": cache[0], "val_cache": cache[1], **options},
        )

    def train_on(chosen):
        return run_training(
            lambda classes: create_classifier(spec, len(classes), None),
            spec,
            chosen,
            train_config({"epochs": 1, "lr": 0.05, "batch_size": 8}, 5, 0),
            device=torch.device("cpu"),
            threads=1,
            log=lambda s: None,
        )

    metrics = train_on(files(train_cache_split=str(train), val_cache_split=str(val)))
    assert metrics["dataset"] == "arm"
    assert metrics["metric_value"] == pytest.approx(
        _train(small_coco, tmp_path / "source", cache, spec)["metric_value"]
    )
    stale = [shutil.copy(c, tmp_path / Path(c).name) for c in cache]  # a failed check deletes the index it read
    for c in cache:
        shutil.copytree(Path(c).with_suffix(".shards"), (tmp_path / Path(c).name).with_suffix(".shards"))
    with pytest.raises(CacheError, match="was built from another split"):
        train_on(files(train_cache=str(stale[0]), val_cache=str(stale[1])))
