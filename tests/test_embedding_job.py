"""One embed (and embed_layers) job runs every network of a model side by side: each image decoded once, each
network's file the same bytes as one job per network wrote, a failing network named before any image is read."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from fake_datasets import write_image_manifest
from PIL import Image
from report_site import script as _script

from biastransfer.embeddings import read_metadata
from biastransfer.hashing import file_digest
from biastransfer.models import features
from biastransfer.models.checkpoints import save_checkpoint
from biastransfer.models.extractors import SideBySide, create_classifier
from biastransfer.models.resolve import resolve_spec
from biastransfer.workflow.rules.inference import EmbedLayersSettings, EmbedSettings

ROOT = Path(__file__).resolve().parents[1]
PRE = {"resize": 32, "crop": 32, "interpolation": "bilinear", "mean": [0.5] * 3, "std": [0.25] * 3}
ENTRY = {"source": "timm", "arch": "resnet10t", "weights": None, "preprocess": PRE}
INFERENCE = {"batch_size": 3, "num_workers": 0, "device": "cpu", "amp": True}
STAGES = ["pretrained", "ft-d-seed0", "scratch-d-seed0"]
N_IMAGES = 7


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A manifest of seven images and one checkpoint per stage, each with its own seeded weights."""
    folder = tmp_path_factory.mktemp("job")
    rng = np.random.default_rng(0)
    images = []
    for i in range(N_IMAGES):
        path = folder / f"{i}.png"
        Image.fromarray(rng.integers(0, 256, (40, 36, 3), dtype=np.uint8)).save(path)
        images.append((path, ["man", "woman"][i % 2]))
    write_image_manifest(folder / "manifest.parquet", images)
    spec = resolve_spec("tiny", ENTRY)
    weights = []
    for seed, stage in enumerate(STAGES):
        torch.manual_seed(seed)
        weights.append(str(folder / f"{stage}.safetensors"))
        save_checkpoint(create_classifier(spec, 2, None), weights[-1], spec=spec, class_names=["man", "woman"])
    return folder, weights


def _embed(folder, weights, stages, out, decoded=None, monkeypatch=None):
    if monkeypatch is not None:
        monkeypatch.setattr(features, "load_rgb", lambda p, load=features.load_rgb: decoded.append(p) or load(p))
    settings = EmbedSettings.from_mapping({"stages": stages, "entry": ENTRY, "inference": INFERENCE})
    files = [str(out / f"{s}.parquet") for s in stages]
    _script("embed").main(str(folder / "manifest.parquet"), weights, files, settings, analysis_set="a", model="tiny")
    return files


def test_one_job_decodes_each_image_once_and_writes_what_one_job_per_network_wrote(inputs, tmp_path, monkeypatch):
    folder, weights = inputs
    decoded = []
    together = _embed(folder, weights, STAGES, tmp_path, decoded, monkeypatch)
    monkeypatch.undo()
    assert len(decoded) == N_IMAGES  # once for the three networks
    for stage, w, file in zip(STAGES, weights, together):
        (tmp_path / stage).mkdir()
        [alone] = _embed(folder, [w], [stage], tmp_path / stage)
        assert Path(file).read_bytes() == Path(alone).read_bytes(), stage
        meta = read_metadata(file)
        assert (meta["stage"], meta["weights_sha256"], meta["analysis_set"]) == (stage, file_digest(w), "a")
        assert ("init_weights_sha256" in meta) == (stage != "pretrained")  # a trained network's origin
    assert len({file_digest(f) for f in together}) == len(STAGES)


def test_a_network_that_fails_to_load_is_named_before_any_image_is_read(inputs, tmp_path, monkeypatch):
    folder, weights = inputs
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(b"not a checkpoint")
    monkeypatch.setattr(features, "load_rgb", lambda p: pytest.fail("an image was read"))
    with pytest.raises(ValueError, match=r"tiny ft-d-seed0 \(.*broken.safetensors\): "):
        _embed(folder, [weights[0], str(broken), weights[2]], STAGES, tmp_path)
    with pytest.raises(ValueError, match=r"2 embedding files for 3 stages"):
        _script("embed").main(
            str(folder / "manifest.parquet"),
            weights,
            [str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")],
            EmbedSettings.from_mapping({"stages": STAGES, "entry": ENTRY, "inference": INFERENCE}),
        )
    assert not list(tmp_path.glob("*.parquet"))


def test_side_by_side_networks_split_back_and_name_the_one_whose_forward_pass_fails():
    torch.manual_seed(0)
    spec = resolve_spec("tiny", ENTRY)
    a, b = (create_classifier(spec, 2, None).backbone.eval() for _ in range(2))
    images = torch.rand(2, 3, 32, 32)
    both = SideBySide([a, b], ["tiny pretrained", "tiny ft-d-seed0"])
    with torch.no_grad():
        parts = both.split(both(images).numpy())
        assert [p.shape for p in parts] == [(2, a.embed_dim), (2, b.embed_dim)]
        assert np.array_equal(parts[1], b(images).numpy())
        with pytest.raises(RuntimeError) as failed:
            both(torch.rand(2, 5, 32, 32))  # five channels: the first network's first convolution fails
    assert "in the forward pass of tiny pretrained" in failed.value.__notes__
    with pytest.raises(ValueError, match="one name per network"):
        SideBySide([a, b], ["tiny pretrained"])


def test_one_layer_job_writes_each_networks_layers_as_one_job_per_network_did(inputs, tmp_path):
    folder, weights = inputs
    stages, weights = STAGES[:2], weights[:2]
    embed_layers = _script("embed_layers").main

    def run(stages, weights, out):
        settings = {
            "stages": stages,
            "entry": ENTRY,
            "inference": INFERENCE,
            "layers": ["layer2", "layer4"],
            "pooling": "avg",
        }
        folders = [str(out / s) for s in stages]
        embed_layers(
            str(folder / "manifest.parquet"),
            weights,
            folders,
            EmbedLayersSettings.from_mapping(settings),
            analysis_set="a",
            model="tiny",
        )
        return folders

    together = run(stages, weights, tmp_path / "together")
    for stage, w, out in zip(stages, weights, together):
        [alone] = run([stage], [w], tmp_path / stage)
        assert sorted(p.name for p in Path(out).iterdir()) == ["layer2.parquet", "layer4.parquet"]
        for layer in ("layer2", "layer4"):
            assert (Path(out) / f"{layer}.parquet").read_bytes() == (Path(alone) / f"{layer}.parquet").read_bytes()
        meta = read_metadata(Path(out) / "layer4.parquet")
        assert (meta["stage"], meta["layer"], meta["depth"], meta["weights_sha256"]) == (
            stage,
            "layer4",
            2,
            file_digest(w),
        )
