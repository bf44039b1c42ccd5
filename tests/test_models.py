"""Model registry, spec resolution, weight loading in every real file format, classifier checkpoints.

All weights are random-init state dicts the tests save in the layouts the real files use.
"""

import os

os.environ["HF_HUB_OFFLINE"] = "1"

import hashlib
import json

import numpy as np
import pytest
import torch
import torchvision
from safetensors.torch import save_file

from biastransfer.models.checkpoints import (
    load_backbone_from_checkpoint,
    load_classifier_from_checkpoint,
    save_checkpoint,
)
from biastransfer.models.extractors import create_backbone, create_classifier
from biastransfer.models.loading import bit_npz_layout
from biastransfer.models.registry import REGISTRY
from biastransfer.models.resolve import resolve_spec
from biastransfer.models.spec import CLIP_MEAN, CLIP_STD, IMAGENET_MEAN, IMAGENET_STD, ModelSpec, Preprocess
from biastransfer.models.weights import (
    resolve_weights,
    weights_cache_path,
    weights_file_and_sha256,
    write_weights_record,
)

torch.manual_seed(0)


def images(n=2, size=32, seed=0):
    return torch.randn(n, 3, size, size, generator=torch.Generator().manual_seed(seed))


def assert_same_params(module, state, prefix=""):
    own = module.state_dict()
    for key, value in state.items():
        assert torch.equal(own[prefix + key], value), key


@pytest.fixture(scope="module")
def r50_state():
    return torchvision.models.resnet50(weights=None).state_dict()


@pytest.fixture(scope="module")
def r18_state():
    return torchvision.models.resnet18(weights=None).state_dict()


# ---------------------------------------------------------------- registry and specs


def test_registry_holds_the_papers_models_with_pinned_weights():
    assert {
        "resnet18",
        "resnet50",
        "bit_m_r50x1",
        "clip_vit_b32",
        "moco_r50_v1",
        "moco_r50_v2",
        "simclr_r50_v1",
    } <= set(REGISTRY)
    r50 = REGISTRY["resnet50"]
    assert r50.weights.endswith("resnet50-0676ba61.pth") and r50.sha256 == "0676ba61"  # IMAGENET1K_V1, not V2
    assert REGISTRY["resnet18"].weights.endswith(f"-{REGISTRY['resnet18'].sha256}.pth")
    assert REGISTRY["bit_m_r50x1"].weights.endswith("BiT-M-R50x1.npz")
    assert REGISTRY["bit_m_r50x1"].preprocess.mean == (0.5, 0.5, 0.5)
    clip = REGISTRY["clip_vit_b32"]
    assert clip.arch == "ViT-B-32-quickgelu" and clip.pretrained_tag == "openai"
    assert clip.preprocess.interpolation == "bicubic" and clip.preprocess.mean == CLIP_MEAN
    assert (
        "moco_v1_200ep" in REGISTRY["moco_r50_v1"].weights and REGISTRY["moco_r50_v1"].key_prefix == "module.encoder_q."
    )
    assert REGISTRY["simclr_r50_v1"].preprocess.mean is None and REGISTRY["simclr_r50_v1"].weights is None


def test_spec_dict_round_trip():
    for spec in REGISTRY.values():
        back = ModelSpec.from_dict(json.loads(json.dumps(spec.as_dict())))
        assert back == spec


def test_preprocess_validation_and_small_sizes():
    from PIL import Image

    pre = Preprocess(resize=64, crop=64, mean=None, std=None)
    img = Image.new("RGB", (80, 64), (255, 0, 0))
    x = pre.transform()(img)
    assert x.shape == (3, 64, 64) and float(x.max()) == 1.0  # unnormalised: [0, 1]
    assert pre.transform(train=True)(img).equal(x)  # training transform = eval transform by default
    with pytest.raises(ValueError, match="crop"):
        Preprocess(resize=32, crop=64)
    with pytest.raises(ValueError, match="both"):
        Preprocess(mean=(0.5, 0.5, 0.5), std=None)
    with pytest.raises(ValueError, match="interpolation"):
        Preprocess(interpolation="nearest")


def test_resolve_spec_overrides_and_rejects_unknown_keys():
    spec = resolve_spec("resnet50", {"layer": "layer3", "pool": "max", "preprocess": {"resize": 288}})
    assert (spec.layer, spec.pool, spec.preprocess.resize, spec.preprocess.crop) == ("layer3", "max", 288, 224)
    assert spec.weights == REGISTRY["resnet50"].weights
    with pytest.raises(ValueError, match="'wieghts'"):
        resolve_spec("resnet50", {"wieghts": "x"})
    with pytest.raises(ValueError, match="'size'"):
        resolve_spec("resnet50", {"preprocess": {"size": 3}})
    with pytest.raises(ValueError, match="not in the registry"):
        resolve_spec("nonexistent")
    with pytest.raises(ValueError, match="arch"):
        resolve_spec("mine", {"source": "timm"})
    with pytest.raises(ValueError, match="timm has no model"):
        resolve_spec("mine", {"source": "timm", "arch": "no_such_net"})


def test_paper_compat_uses_imagenet_statistics_for_every_non_clip_model():
    for name in ("bit_m_r50x1", "simclr_r50_v1", "resnet18", "moco_r50_v1"):
        pre = resolve_spec(name, paper_compat=True).preprocess
        assert (pre.resize, pre.crop, pre.interpolation, pre.mean, pre.std) == (
            256,
            224,
            "bilinear",
            IMAGENET_MEAN,
            IMAGENET_STD,
        )
    assert resolve_spec("clip_vit_b32", {"paper_compat": True}).preprocess == REGISTRY["clip_vit_b32"].preprocess
    assert resolve_spec("bit_m_r50x1").preprocess.mean == (0.5, 0.5, 0.5)  # off by default


def test_timm_model_from_config_alone():
    import timm
    from timm.data import resolve_data_config

    spec = resolve_spec("mnv3", {"source": "timm", "arch": "mobilenetv3_small_050"})
    cfg = resolve_data_config({}, pretrained_cfg=timm.models.get_pretrained_cfg("mobilenetv3_small_050").to_dict())
    assert spec.preprocess.crop == cfg["input_size"][-1] and spec.preprocess.mean == tuple(cfg["mean"])
    assert spec.preprocess.resize == int(cfg["input_size"][-1] / cfg["crop_pct"])
    assert spec.weights.startswith("https://huggingface.co/timm/mobilenetv3_small_050.")
    model = create_backbone(spec, None)
    ref = timm.create_model("mobilenetv3_small_050", num_classes=0)
    ref.load_state_dict(model.model.state_dict())
    x = images(2, 64)
    assert model(x).shape == (2, model.embed_dim) and torch.allclose(model(x), ref.eval()(x))


def test_open_clip_pair_from_config_alone():
    spec = resolve_spec("vitb16", {"source": "open_clip", "arch": "ViT-B-16", "pretrained_tag": "laion2b_s34b_b88k"})
    assert spec.preprocess == Preprocess(224, 224, "bicubic", CLIP_MEAN, CLIP_STD)
    assert (
        spec.weights
        == "https://huggingface.co/laion/CLIP-ViT-B-16-laion2B-s34B-b88K/resolve/main/open_clip_model.safetensors"
    )


# ---------------------------------------------------------------- loaders, one per real format


def test_torchvision_pth_loads_with_only_the_classifier_dropped(tmp_path, r18_state):
    path = tmp_path / "resnet18-f37072fd.pth"
    torch.save(r18_state, path)
    model = create_backbone(REGISTRY["resnet18"], path)
    assert model.embed_dim == 512
    assert_same_params(model.model, {k: v for k, v in r18_state.items() if not k.startswith("fc.")})
    ref = torchvision.models.resnet18(weights=None)
    ref.load_state_dict(r18_state)
    ref.fc = torch.nn.Identity()
    x = images()
    assert torch.allclose(model(x), ref.eval()(x), atol=1e-6)
    # a file without the classifier also fits (the classifier is the only key allowed to be absent)
    no_fc = tmp_path / "nofc.pth"
    torch.save({k: v for k, v in r18_state.items() if not k.startswith("fc.")}, no_fc)
    create_backbone(REGISTRY["resnet18"], no_fc)


def test_moco_pth_tar_strips_encoder_q_prefix(tmp_path, r50_state):
    state = {f"module.encoder_q.{k}": v for k, v in r50_state.items() if not k.startswith("fc.")}
    state["module.encoder_q.fc.weight"] = torch.randn(128, 2048)  # MoCo v1: 128-d projection
    state["module.encoder_q.fc.bias"] = torch.randn(128)
    state.update({f"module.encoder_k.{k}": v.clone() + 1 for k, v in list(r50_state.items())[:5]})
    state["module.queue"] = torch.randn(128, 16)
    ckpt = {
        "epoch": 200,
        "arch": "resnet50",
        "state_dict": state,
        "optimizer": {"state": {}, "param_groups": [{"lr": 0.03}]},
    }
    path = tmp_path / "moco_v1_200ep_pretrain.pth.tar"
    torch.save(ckpt, path)
    model = create_backbone(REGISTRY["moco_r50_v1"], path)
    assert model.embed_dim == 2048
    assert_same_params(model.model, {k: v for k, v in r50_state.items() if not k.startswith("fc.")})


def test_simclr_converted_state_dict(tmp_path, r50_state):
    path = tmp_path / "resnet50-1x.pth"
    torch.save({"state_dict": r50_state}, path)
    spec = resolve_spec("simclr_r50_v1", {"weights": str(path)})
    model = create_backbone(spec, path)
    assert model.embed_dim == 2048 and model(images(1, 32)).shape == (1, 2048)
    assert_same_params(model.model, {k: v for k, v in r50_state.items() if not k.startswith("fc.")})


def test_bit_npz_in_google_layout_loads_through_timm(tmp_path):
    import timm

    source = timm.create_model("resnetv2_50x1_bit", num_classes=0)
    with torch.no_grad():
        for p in source.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    own = source.state_dict()
    arrays = {}
    for npz_key, param in bit_npz_layout(source).items():
        w = own[param].numpy()
        arrays[npz_key] = w.transpose(2, 3, 1, 0) if w.ndim == 4 else w  # torch OIHW -> TF HWIO
    arrays["resnet/head/conv2d/kernel"] = np.zeros((1, 1, 2048, 7), np.float32)  # classifier: dropped
    arrays["resnet/head/conv2d/bias"] = np.zeros(7, np.float32)
    path = tmp_path / "BiT-M-R50x1.npz"
    np.savez(path, **arrays)
    model = create_backbone(REGISTRY["bit_m_r50x1"], path)
    assert model.embed_dim == 2048
    assert_same_params(model.model, own)
    del arrays["resnet/block2/unit01/b/group_norm/gamma"]
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match="block2/unit01/b/group_norm/gamma"):
        create_backbone(REGISTRY["bit_m_r50x1"], path)


@pytest.mark.slow  # about 12 s of CPU (make test-fast leaves it out)
def test_open_clip_state_dict_files(tmp_path):
    import open_clip

    clip = open_clip.create_model("ViT-B-32-quickgelu", pretrained=None, load_weights=False)
    state = clip.state_dict()
    visual = {k[len("visual.") :]: v for k, v in state.items() if k.startswith("visual.")}
    st, pt = tmp_path / "open_clip_model.safetensors", tmp_path / "open_clip_pytorch_model.bin"
    save_file({k: v.contiguous() for k, v in state.items()}, str(st))
    torch.save(state, pt)
    model = create_backbone(REGISTRY["clip_vit_b32"], st)
    assert model.embed_dim == 512
    assert_same_params(model.model, visual)
    x = images(1, 224)
    with torch.no_grad():
        assert torch.allclose(model(x), clip.eval().encode_image(x), atol=1e-5)
    # a torch.save'd state dict, read at a token layer with CLS pooling
    spec = resolve_spec("clip_vit_b32", {"layer": "transformer.resblocks.11", "pool": "cls"})
    tokens = create_backbone(spec, pt)
    assert tokens.embed_dim == 768
    assert_same_params(tokens.model, visual)


@pytest.mark.slow  # builds CLIP twice (make test-fast leaves it out)
def test_open_clip_vit_at_another_crop_interpolates_its_position_embeddings(tmp_path):
    """A 224 px checkpoint read at a 64 px crop: a 2 x 2 grid of position embeddings, interpolated from the
    7 x 7 one (a constant grid stays that constant; the class token's row is kept), the rest unchanged."""
    import open_clip

    clip = open_clip.create_model("ViT-B-32-quickgelu", pretrained=None, load_weights=False)
    state = clip.state_dict()
    cls_row, grid_row = torch.randn(768), torch.randn(768)
    state["visual.positional_embedding"] = torch.cat([cls_row[None], grid_row.expand(49, 768)])
    path = tmp_path / "open_clip_model.safetensors"
    save_file({k: v.contiguous() for k, v in state.items()}, str(path))
    spec = resolve_spec("clip_vit_b32", {"preprocess": {"resize": 64, "crop": 64}})
    model = create_backbone(spec, path)
    pos = model.model.positional_embedding
    assert pos.shape == (5, 768)
    assert torch.equal(pos[0], cls_row)
    assert torch.allclose(pos[1:], grid_row.expand(4, 768), atol=1e-5)
    assert torch.equal(model.model.conv1.weight, state["visual.conv1.weight"])
    with torch.no_grad():
        out = model(images(2, 64))
    assert out.shape == (2, 512) and torch.isfinite(out).all()


# ---------------------------------------------------------------- errors


def test_keys_that_do_not_fit_are_named(tmp_path, r18_state):
    path = tmp_path / "r18.pth"
    torch.save(r18_state, path)
    with pytest.raises(ValueError, match=r"missing keys: .*layer1\.0\.conv3\.weight"):
        create_backbone(REGISTRY["resnet50"], path)
    state = dict(r18_state, **{"bogus.weight": torch.zeros(1)})
    state.pop("layer4.1.bn2.weight")
    torch.save(state, path)
    with pytest.raises(ValueError, match=r"missing keys: layer4\.1\.bn2\.weight; unexpected keys: bogus\.weight"):
        create_backbone(REGISTRY["resnet18"], path)
    torch.save({"state_dict": {"module.encoder_k.conv1.weight": torch.zeros(1)}}, path)
    with pytest.raises(ValueError, match="module.encoder_q."):
        create_backbone(REGISTRY["moco_r50_v1"], path)


def test_corrupt_files_give_clear_errors(tmp_path, r18_state):
    bad = tmp_path / "resnet18.pth"
    bad.write_bytes(b"this is not a checkpoint" * 10)
    with pytest.raises(ValueError, match="resnet18.pth"):
        create_backbone(REGISTRY["resnet18"], bad)
    good = tmp_path / "ok.safetensors"
    save_file(dict(r18_state), str(good))
    trunc = tmp_path / "trunc.safetensors"
    trunc.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(ValueError, match="trunc.safetensors"):
        create_backbone(REGISTRY["resnet18"], trunc)
    with pytest.raises(FileNotFoundError, match="nope.pth"):
        create_backbone(REGISTRY["resnet18"], tmp_path / "nope.pth")


def test_pickled_code_is_refused(tmp_path):
    path = tmp_path / "evil.pth"
    torch.save({"state_dict": {"w": torch.zeros(1)}, "obj": torch.nn.Linear(1, 1)}, path)  # a pickled module
    with pytest.raises(ValueError, match="weights_only"):
        create_backbone(REGISTRY["resnet18"], path)


def test_resolve_weights_verifies_checksums(tmp_path):
    path = tmp_path / "w.pth"
    path.write_bytes(b"weights")
    sha, md5 = hashlib.sha256(b"weights").hexdigest(), hashlib.md5(b"weights").hexdigest()
    ok = ModelSpec("m", "torchvision", "resnet18", weights=str(path), sha256=sha[:8], md5=md5)
    assert resolve_weights(ok, tmp_path / "cache") == path
    with pytest.raises(ValueError, match="sha256 .* does not match"):
        resolve_weights(ModelSpec("m", "torchvision", "resnet18", weights=str(path), sha256="0" * 64), tmp_path)
    with pytest.raises(ValueError, match="md5"):
        resolve_weights(ModelSpec("m", "torchvision", "resnet18", weights=str(path), md5="deadbeef"), tmp_path)
    # a cached download that does not match is refused, not used
    remote = ModelSpec("m", "torchvision", "resnet18", weights="https://example.org/x/w-0000.pth", sha256="00000000")
    cached = weights_cache_path(remote, tmp_path / "cache")
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"weights")
    with pytest.raises(ValueError, match="refusing"):
        resolve_weights(remote, tmp_path / "cache")
    with pytest.raises(ValueError, match="tonylins/simclr-converter"):
        resolve_weights(REGISTRY["simclr_r50_v1"], tmp_path)


def test_resolve_weights_fetches_from_a_local_mirror(tmp_path):
    mirror = tmp_path / "mirror"
    (mirror / "example.org" / "w").mkdir(parents=True)
    (mirror / "example.org" / "w" / "model.pth").write_bytes(b"mirrored")
    sha = hashlib.sha256(b"mirrored").hexdigest()
    spec = ModelSpec("m", "torchvision", "resnet18", weights="https://example.org/w/model.pth", sha256=sha)
    got = resolve_weights(spec, tmp_path / "cache", mirror=mirror)
    assert got == weights_cache_path(spec, tmp_path / "cache") and got.read_bytes() == b"mirrored"
    assert got.name == "model.pth" and got.parent.parent == tmp_path / "cache" / "m"
    bad = ModelSpec("m2", "torchvision", "resnet18", weights="https://example.org/w/model.pth", sha256="1" * 64)
    with pytest.raises(ValueError):
        resolve_weights(bad, tmp_path / "cache", mirror=mirror)
    assert not weights_cache_path(bad, tmp_path / "cache").exists()


def test_a_new_tag_under_the_same_model_name_never_reuses_the_old_cached_file(tmp_path):
    """Hub files are all model.safetensors: the cache is keyed by source, tag and URL (hub id and file),
    and the weights record names the digest of the file that is loaded."""
    mirror, specs = tmp_path / "mirror", {}
    for tag in ("a1_in1k", "tv_in1k"):
        hub = mirror / "huggingface.co" / "timm" / f"resnet18.{tag}" / "resolve" / "main"
        hub.mkdir(parents=True)
        (hub / "model.safetensors").write_bytes(tag.encode())
        url = f"https://huggingface.co/timm/resnet18.{tag}/resolve/main/model.safetensors"
        specs[tag] = ModelSpec("r18", "timm", "resnet18", weights=url, pretrained_tag=tag)
    old = resolve_weights(specs["a1_in1k"], tmp_path / "cache", mirror=mirror)
    new = resolve_weights(specs["tv_in1k"], tmp_path / "cache", mirror=mirror)
    assert old.read_bytes() == b"a1_in1k" and new.read_bytes() == b"tv_in1k" and old != new
    assert new.parent.name.startswith("timm-tv_in1k-")
    record = write_weights_record(tmp_path / "record.json", specs["tv_in1k"], new)
    assert record["sha256"] == hashlib.sha256(b"tv_in1k").hexdigest() and record["url"] == specs["tv_in1k"].weights
    same_tag_other_hub = ModelSpec("r18", "timm", "resnet18", weights=specs["a1_in1k"].weights.replace("timm/", "x/"))
    assert weights_cache_path(same_tag_other_hub, tmp_path / "cache") != old


# ---------------------------------------------------------------- layers and pooling


def test_named_layers_and_pooling():
    spec = ModelSpec("r18", "torchvision", "resnet18", preprocess=Preprocess(32, 32))
    x = images(2, 32)
    full = create_backbone(spec, None)
    for pool, dim in (("avg", 256), ("max", 256), ("none-flatten", 256 * 2 * 2)):
        layer3 = create_backbone(
            ModelSpec("r18", "torchvision", "resnet18", preprocess=Preprocess(32, 32), layer="layer3", pool=pool), None
        )
        layer3.load_state_dict(full.state_dict())
        out = layer3(x)
        assert layer3.embed_dim == dim and out.shape == (2, dim)
    trunk = full.model
    with torch.no_grad():
        h = trunk.layer3(trunk.layer2(trunk.layer1(trunk.maxpool(trunk.relu(trunk.bn1(trunk.conv1(x)))))))
    assert torch.allclose(out, h.flatten(1))
    with pytest.raises(ValueError, match="'cls'"):
        create_backbone(
            ModelSpec("r18", "torchvision", "resnet18", preprocess=Preprocess(32, 32), layer="layer3", pool="cls"), None
        )
    with pytest.raises(ValueError, match="layer9"):
        create_backbone(ModelSpec("r18", "torchvision", "resnet18", layer="layer9"), None)


# ---------------------------------------------------------------- classifier and checkpoints


def test_classifier_head_init_and_checkpoint_round_trip(tmp_path):
    spec = ModelSpec("demo", "timm", "resnet18", preprocess=Preprocess(64, 64))
    clf = create_classifier(spec, 5, None)
    assert clf.head.in_features == clf.backbone.embed_dim == 512
    assert torch.count_nonzero(clf.head.bias) == 0 and 0.008 < clf.head.weight.std().item() < 0.012
    x = images(2, 64)
    path = tmp_path / "ft" / "model.safetensors"
    save_checkpoint(clf, path, spec=spec, class_names=list("abcde"), extra={"seed": 3})
    assert [p.name for p in path.parent.iterdir()] == ["model.safetensors"]  # no temp files left
    loaded, meta = load_classifier_from_checkpoint(path)
    assert meta["class_names"] == list("abcde") and meta["extra"] == {"seed": 3} and meta["num_classes"] == 5
    assert torch.equal(loaded(x), clf(x))
    backbone = load_backbone_from_checkpoint(path)
    assert torch.equal(backbone(x), clf.backbone(x))
    # the synthetic demo's route: a timm spec whose weights are a checkpoint the workflow trained
    demo = ModelSpec("demo", "timm", "resnet18", weights=str(path), preprocess=Preprocess(64, 64))
    assert torch.equal(create_backbone(demo, path)(x), clf.backbone(x))
    with pytest.raises(ValueError, match="5 classes, 80 were requested"):
        load_classifier_from_checkpoint(path, num_classes=80)
    with pytest.raises(ValueError, match="3 class names"):
        save_checkpoint(clf, tmp_path / "bad.safetensors", spec=spec, class_names=["a", "b", "c"])
    with pytest.raises(ValueError, match="num_classes"):
        create_classifier(spec, 0, None)


def test_plain_timm_safetensors_state_dict_loads(tmp_path):
    import timm

    ref = timm.create_model("resnet18", num_classes=10)
    path = tmp_path / "model.safetensors"
    save_file(ref.state_dict(), str(path))
    spec = ModelSpec("demo", "timm", "resnet18", weights=str(path), preprocess=Preprocess(64, 64))
    model = create_backbone(spec, path)
    ref.reset_classifier(0)
    x = images(2, 64)
    assert torch.allclose(model(x), ref.eval()(x), atol=1e-6)


def test_checkpoint_source_with_torchvision_arch(tmp_path, r18_state):
    path = tmp_path / "mine.pt"
    torch.save({"model": {f"module.{k}": v for k, v in r18_state.items()}}, path)  # DataParallel-style keys
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    spec = resolve_spec("mine", {"source": "checkpoint", "arch": "resnet18", "weights": str(path), "sha256": sha})
    model = create_backbone(spec, resolve_weights(spec, tmp_path))
    assert model.embed_dim == 512
    assert_same_params(model.model, {k: v for k, v in r18_state.items() if not k.startswith("fc.")})


def test_fetch_weights_script_writes_a_record_that_create_backbone_follows(tmp_path, r18_state):
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "workflow" / "scripts" / "fetch_weights.py"
    mod_spec = importlib.util.spec_from_file_location("fetch_weights", script)
    fetch_weights = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(fetch_weights)
    path = tmp_path / "r18.pth"
    torch.save(r18_state, path)
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    record_path = tmp_path / "weights" / "weights.done"
    fetch_weights.main(
        str(record_path), {"weights": str(path), "sha256": sha}, model="resnet18", cache_dir=str(tmp_path)
    )
    record = json.loads(record_path.read_text())
    assert record["sha256"] == sha and record["path"] == str(path.resolve()) and record["model"] == "resnet18"
    assert weights_file_and_sha256(record_path) == (path.resolve(), sha)
    assert_same_params(
        create_backbone(REGISTRY["resnet18"], record_path).model,
        {k: v for k, v in r18_state.items() if not k.startswith("fc.")},
    )
    with pytest.raises(ValueError, match="sha256"):
        fetch_weights.main(
            str(tmp_path / "w2.done"),
            {"weights": str(path), "sha256": "f" * 64},
            model="resnet18",
            cache_dir=str(tmp_path),
        )
    assert not (tmp_path / "w2.done").exists()
    path.write_bytes(b"tampered")
    with pytest.raises(ValueError, match="sha256"):
        create_backbone(REGISTRY["resnet18"], record_path)
