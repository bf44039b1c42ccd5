"""Feature extraction: order, reference values, determinism, batch-size invariance, bad files, provenance."""

import os

os.environ["HF_HUB_OFFLINE"] = "1"

import json

import numpy as np
import pytest
import torch
from PIL import Image

from biastransfer.embeddings import read_embeddings, write_embeddings
from biastransfer.models.extractors import create_backbone
from biastransfer.models.features import embed_batches, embedding_provenance, extract_features, preprocessed_images
from biastransfer.models.spec import ModelSpec, Preprocess

PRE = Preprocess(resize=36, crop=32, interpolation="bilinear")
SPEC = ModelSpec("r18", "torchvision", "resnet18", preprocess=PRE)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return create_backbone(SPEC, None)


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    folder = tmp_path_factory.mktemp("imgs")
    rng = np.random.default_rng(0)
    out = []
    for i, (w, h) in enumerate([(48, 40), (40, 56), (64, 64), (50, 45), (36, 36)]):
        arr = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        img = Image.fromarray(arr)
        if i == 1:
            img = img.convert("L")  # greyscale input is converted to RGB
        path = folder / (f"img{i}.png" if i % 2 else f"img{i}.jpg")
        img.save(path)
        out.append(path)
    return out


def test_features_match_a_direct_forward_in_order(model, paths):
    feats = extract_features(model, paths, PRE, batch_size=2)
    assert feats.dtype == np.float32 and feats.shape == (len(paths), 512)
    transform = PRE.transform()
    batch = torch.stack([transform(Image.open(p).convert("RGB")) for p in paths])
    with torch.no_grad():
        ref = model.eval()(batch).numpy()
    np.testing.assert_allclose(feats, ref, rtol=1e-4, atol=1e-5)


def test_deterministic_across_runs_batch_sizes_and_workers(model, paths):
    first = extract_features(model, paths, PRE, batch_size=3)
    assert np.array_equal(first, extract_features(model, paths, PRE, batch_size=3))
    np.testing.assert_allclose(extract_features(model, paths, PRE, batch_size=1), first, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        extract_features(model, paths, PRE, batch_size=64, num_workers=1), first, rtol=1e-4, atol=1e-5
    )


def test_gpu_code_path_bf16_channels_last_runs_on_cpu(model, paths):
    fp32 = extract_features(model, paths, PRE, batch_size=5)
    bf16 = extract_features(model, paths, PRE, batch_size=5, amp=True, channels_last=True)
    assert bf16.dtype == np.float32
    cos = (fp32 * bf16).sum(1) / np.linalg.norm(fp32, axis=1) / np.linalg.norm(bf16, axis=1)
    assert cos.min() > 0.99
    assert not np.array_equal(fp32, bf16)  # autocast really ran in bf16


def test_missing_and_corrupt_images_are_named(model, paths, tmp_path):
    with pytest.raises(FileNotFoundError, match="gone.jpg"):
        extract_features(model, [paths[0], tmp_path / "gone.jpg"], PRE)
    bad = tmp_path / "broken.jpg"
    bad.write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    with pytest.raises(ValueError, match="broken.jpg"):
        extract_features(model, [paths[0], bad], PRE)
    truncated = tmp_path / "truncated.jpg"
    truncated.write_bytes(paths[0].read_bytes()[:200])
    with pytest.raises(ValueError, match="truncated.jpg"):
        extract_features(model, [truncated], PRE, num_workers=1)


def test_images_decoded_once_give_exactly_the_features_from_disk(model, paths):
    images = preprocessed_images(paths, PRE, batch_size=2)
    assert images.shape == (len(paths), 3, 32, 32) and images.dtype == torch.float32
    for batch_size in (2, 5):
        from_disk = extract_features(model, paths, PRE, batch_size=batch_size)
        assert np.array_equal(embed_batches(model, images.split(batch_size)), from_disk)
    with pytest.raises(ValueError, match="no images"):
        preprocessed_images([], PRE)


def test_argument_errors_and_empty_input(model):
    assert extract_features(model, [], PRE).shape == (0, 512)
    with pytest.raises(ValueError, match="batch_size"):
        extract_features(model, [], PRE, batch_size=0)


def test_provenance_round_trips_through_the_embeddings_file(model, paths, tmp_path):
    feats = extract_features(model, paths, PRE, batch_size=5)
    meta = embedding_provenance(SPEC, "ab" * 32, stage="pretrained", analysis_set="coco_test")
    for key in ("weights_sha256", "layer", "pool", "preprocessing", "versions", "stage"):
        assert key in meta
    assert {"torch", "torchvision", "timm", "open_clip"} <= set(meta["versions"])
    out = tmp_path / "emb.parquet"
    write_embeddings(out, [p.stem for p in paths], ["x"] * len(paths), feats, metadata=meta)
    table = read_embeddings(out)
    assert np.array_equal(table.embeddings, feats)
    assert table.metadata["preprocessing"] == json.loads(json.dumps(PRE.as_dict()))
    assert ModelSpec.from_dict(table.metadata["spec"]) == SPEC
