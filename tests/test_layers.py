"""Layer profiles: one-pass hooks against truncated networks, the paper's layer lists, bad layer names,
and the per-layer statistics and findings on embeddings with a known answer."""

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from biastransfer.embeddings import EmbeddingTable
from biastransfer.models.layers import LayerExtractor, _every_third, default_layers, layer_extractor, resolve_layers
from biastransfer.models.resolve import model_spec, resolve_spec
from biastransfer.report.findings.layers import describe_layers
from biastransfer.stats.layer_profile import layer_profile_table


def _images(n=3, size=64, seed=0):
    return torch.randn(n, 3, size, size, generator=torch.Generator().manual_seed(seed))


@pytest.mark.slow  # about 9 s of CPU (make test-fast leaves it out)
def test_one_pass_hooks_equal_a_resnet_truncated_at_each_layer():
    import torchvision

    torch.manual_seed(0)
    net = torchvision.models.resnet18(weights=None).eval()
    x = _images()
    for pool, reduce in (("avg", lambda t: t.mean(dim=(2, 3))), ("max", lambda t: t.amax(dim=(2, 3)))):
        ext = LayerExtractor(net, None, pool=pool, probe_size=64).eval()
        assert ext.layers == ["layer1", "layer2", "layer3", "layer4"] and ext.dims == [64, 128, 256, 512]
        with torch.no_grad():
            parts = ext.split(ext(x).numpy())
            stem = nn.Sequential(net.conv1, net.bn1, net.relu, net.maxpool)
            for k, name in enumerate(ext.layers, start=1):
                truncated = nn.Sequential(stem, *[getattr(net, f"layer{i}") for i in range(1, k + 1)])
                np.testing.assert_allclose(parts[name], reduce(truncated(x)).numpy(), rtol=0, atol=1e-6)
    # the penultimate features are layer4 average-pooled: the profile's last layer is the usual embedding
    with torch.no_grad():
        net.fc = nn.Identity()
        avg = LayerExtractor(net, ["layer4"], pool="avg", probe_size=64).eval()
        np.testing.assert_allclose(avg(x).numpy(), net(x).numpy(), rtol=0, atol=1e-6)


def test_one_pass_hooks_equal_a_vit_truncated_at_each_block():
    import timm

    torch.manual_seed(0)
    vit = timm.create_model("vit_tiny_patch16_224", pretrained=False, num_classes=0, img_size=32).eval()
    ext = LayerExtractor(vit, None, probe_size=32).eval()  # auto pooling: the class token
    assert ext.layers == ["blocks.2", "blocks.5", "blocks.8", "blocks.11"] and ext.pools == ["cls"] * 4
    x = _images(size=32)
    with torch.no_grad():
        parts = ext.split(ext(x).numpy())
        tokens = vit.norm_pre(vit.patch_drop(vit._pos_embed(vit.patch_embed(x))))
        for i, block in enumerate(vit.blocks):
            tokens = block(tokens)
            if f"blocks.{i}" in parts:
                np.testing.assert_allclose(parts[f"blocks.{i}"], tokens[:, 0].numpy(), rtol=0, atol=1e-6)
        mean = LayerExtractor(vit, ["blocks.0"], pool="avg", probe_size=32)
        np.testing.assert_allclose(
            mean(x).numpy(),
            vit.blocks[0](vit.norm_pre(vit.patch_drop(vit._pos_embed(vit.patch_embed(x))))).mean(1).numpy(),
            atol=1e-6,
        )


@pytest.mark.parametrize("depth, blocks", [(12, [2, 5, 8, 11]), (10, [2, 5, 8, 9]), (2, [1]), (3, [2])])
def test_every_third_block_and_the_final_one(depth, blocks):
    assert _every_third("blocks", depth) == [f"blocks.{i}" for i in blocks]


#: The paper's six models: layer names and output sizes (torchvision/timm ResNet-50 stages 256-2048 channels,
#: BiT-M R50x1 the same widths, CLIP ViT-B/32 width 768 at every block).
PAPER_LAYERS = {
    "resnet18": (["layer1", "layer2", "layer3", "layer4"], [64, 128, 256, 512]),
    "resnet50": (["layer1", "layer2", "layer3", "layer4"], [256, 512, 1024, 2048]),
    "moco_r50_v1": (["layer1", "layer2", "layer3", "layer4"], [256, 512, 1024, 2048]),
    "simclr_r50_v1": (["layer1", "layer2", "layer3", "layer4"], [256, 512, 1024, 2048]),
    "bit_m_r50x1": (["stages.0", "stages.1", "stages.2", "stages.3"], [256, 512, 1024, 2048]),
    "clip_vit_b32": ([f"transformer.resblocks.{i}" for i in (2, 5, 8, 11)], [768] * 4),
}


@pytest.mark.parametrize("name", sorted(PAPER_LAYERS))
def test_each_paper_architecture_resolves_its_layer_list(name):
    layers, dims = PAPER_LAYERS[name]
    resolved = resolve_layers(resolve_spec(name))  # random initialisation: no weights, no network
    assert [r["layer"] for r in resolved] == layers
    assert [r["dim"] for r in resolved] == dims
    assert [r["depth"] for r in resolved] == [1, 2, 3, 4]
    assert {r["pool"] for r in resolved} == ({"cls"} if name == "clip_vit_b32" else {"avg"})


def test_a_configured_layer_list_overrides_the_default_in_depth_order():
    spec = model_spec(
        "demo",
        {
            "source": "workflow",
            "arch": "resnet18",
            "preprocess": {"resize": 32, "crop": 32},
            "layers": ["layer4", "layer2.1"],
            "layer_pooling": "max",
        },
    )
    assert [r["layer"] for r in resolve_layers(spec, ["layer4", "layer2.1"], "max")] == ["layer2.1", "layer4"]


def test_bad_layers_raise_errors_naming_the_model_and_the_layer():
    spec = model_spec("demo", {"source": "workflow", "arch": "resnet18", "preprocess": {"resize": 32, "crop": 32}})
    with pytest.raises(ValueError, match=r"model 'demo': unknown layer\(s\) 'layer9'.*layer1"):
        layer_extractor(spec, None, ["layer1", "layer9"])
    with pytest.raises(ValueError, match="model 'demo': layer list .* repeats"):
        layer_extractor(spec, None, ["layer1", "layer1"])
    with pytest.raises(ValueError, match="model 'demo': layer 'layer1' gives a feature map .* 'cls' needs tokens"):
        layer_extractor(spec, None, ["layer1"], "cls")
    with pytest.raises(ValueError, match="layer pooling must be one of"):
        layer_extractor(spec, None, None, "median")
    with pytest.raises(ValueError, match=r"model 'mlp': no default layer set .*models.mlp.layers"):
        default_layers(nn.Sequential(nn.Linear(2, 2)), "mlp")


def _planted_stages(seed=0, n=30, dim=16):
    """Two layers, a pretrained and two finetuned stages: X~A / Y~B planted at 'deep' only, nothing at 'shallow'."""
    rng = np.random.default_rng(seed)
    classes = np.repeat(["x", "y", "a", "b"], n)
    ids = np.array([f"img{i}" for i in range(len(classes))])
    shallow = rng.normal(size=(len(classes), dim))
    deep = rng.normal(size=(len(classes), dim))
    axis = np.eye(dim)[0] * 3
    deep[classes == "x"] += axis
    deep[classes == "a"] += axis
    deep[classes == "y"] -= axis
    deep[classes == "b"] -= axis
    layers = {"shallow": shallow, "deep": deep}
    return {
        stage: {
            name: EmbeddingTable(ids, classes, (m + 0.01 * k * rng.normal(size=m.shape)).astype(np.float32))
            for name, m in layers.items()
        }
        for k, stage in enumerate(["pretrained", "ft-d-seed0", "ft-d-seed1"])
    }


PLANTED = {"name": "planted", "X": "x", "Y": "y", "A": "a", "B": "b", "role": "planted"}


def _profile(tests=(PLANTED,)):
    info = {"shallow": {"depth": 1, "dim": 16, "pool": "avg"}, "deep": {"depth": 2, "dim": 16, "pool": "avg"}}
    return layer_profile_table(
        _planted_stages(),
        info,
        tests=list(tests),
        lists={},
        ieat_options={
            "permutations": 2000,
            "alternative": "greater",
            "method": "permutation",
            "seed": 0,
            "bootstrap": 300,
            "ci_level": 0.95,
        },
        bts_options={"pvalue": "asymptotic", "bootstrap": 100, "ci_level": 0.95, "seed": 0},
    ).assign(analysis_set="s", model="m")


def test_the_profile_finds_a_planted_association_at_its_layer_only():
    profile = _profile()
    ieat = profile[profile["measure"] == "ieat"].set_index(["layer", "stage"])
    assert len(ieat) == 2 * 3
    for stage in ("pretrained", "ft-d-seed0", "ft-d-seed1"):
        deep, shallow = ieat.loc[("deep", stage)], ieat.loc[("shallow", stage)]
        assert deep["estimate"] > 1.5 and deep["ci_low"] > 0 and deep["pvalue_holm"] < 0.01, deep.to_dict()
        assert shallow["ci_low"] < 0 < shallow["ci_high"] and shallow["pvalue_holm"] > 0.01, shallow.to_dict()
    bts = profile[profile["measure"] == "bts"]
    # two layers x (two seeds + pooled) x (intra, inter); nearly unchanged embeddings keep their ranking
    assert len(bts) == 2 * 3 * 2 and set(bts.loc[bts["seed"] == "pooled", "stage"]) == {"ft-d"}
    assert (bts.loc[bts["item"] == "inter", "estimate"] > 0.8).all(), bts
    assert (bts["ci_low"] <= bts["estimate"]).all() and (bts["estimate"] <= bts["ci_high"]).all()
    cka = profile[profile["measure"] == "cka"]
    # two layers x (two seeds + their mean); the finetuned stages barely move the pretrained embedding
    assert len(cka) == 2 * 3 and set(cka.loc[cka["seed"] == "pooled", "stage"]) == {"ft-d"}
    assert (cka["item"] == "linear").all() and cka["pvalue"].isna().all() and cka["pvalue_holm"].isna().all()
    assert (cka["estimate"] > 0.99).all() and (cka["ci_low"] <= cka["estimate"]).all()
    assert (cka["n"] == 120).all()


def test_the_findings_name_the_depth_at_which_it_appears():
    reverse = {**PLANTED, "name": "reversed", "X": "y", "Y": "x", "role": "control"}
    text = "\n".join(describe_layers(_profile((PLANTED, reverse)), 0.01))
    assert "iEAT planted (planted), pretrained: appears at deep (depth 2 of 2)" in text
    assert "at shallower layers d runs from" in text
    # the reversed pair's strong d < 0 is not significant in the tested direction, which is not "absent"
    reversed_line = next(line for line in text.splitlines() if "iEAT reversed (control), pretrained" in line)
    assert "at no profiled layer" in reversed_line and "interval excluding 0 but not significant" in reversed_line
    assert "absent" not in text and "significant at no profiled layer, before or after finetuning" in text
    assert "- Linear CKA against the pretrained layer, finetuned on d (seeds averaged), by layer: shallow 1.00" in text
    assert describe_layers(pd.DataFrame(), 0.01) == [] and describe_layers(None, 0.01) == []


def test_stages_with_different_layers_are_refused():
    stages = _planted_stages()
    del stages["ft-d-seed1"]["deep"]
    info = {"shallow": {"depth": 1, "dim": 16, "pool": "avg"}, "deep": {"depth": 2, "dim": 16, "pool": "avg"}}
    with pytest.raises(ValueError, match="stage 'ft-d-seed1' has layers"):
        layer_profile_table(stages, info, tests=[], lists={}, ieat_options={}, bts_options={})


def test_the_profile_figure_prints_and_the_table_compiles(tmp_path):
    from test_tables import PDFLATEX, compile_latex

    from biastransfer.report.layer_report import layer_latex, profile_figure
    from biastransfer.report.style import print_size_problems

    profile = _profile()
    fig = profile_figure(profile, analysis_set="s", model="m")
    assert print_size_problems(fig) == []
    ieat_panel, bts_panel = fig.axes[0], fig.axes[1]
    # one line of two layers per stage (pretrained, two seeds); BTS: pooled intra and inter
    assert [len(c.lines[0].get_xdata()) for c in ieat_panel.containers] == [2, 2, 2]
    assert [len(c.lines[0].get_xdata()) for c in bts_panel.containers] == [2, 2, 2]  # and the CKA, dotted
    assert bts_panel.containers[2].get_label() == "finetuned on d, seeds pooled, linear CKA"
    # each seed its own marker, named in the legend; the pretrained network's differs from every seed's
    marker = {c.get_label(): c.lines[0].get_marker() for ax in (ieat_panel, bts_panel) for c in ax.containers}
    assert sorted(marker) == sorted(t.get_text() for t in fig.legends[0].get_texts())
    seeds = [marker[k] for k in marker if ", seed " in k]
    assert len(seeds) == len(set(seeds)) == 2 and marker["pretrained"] not in seeds
    assert len(set(marker.values())) == 4  # pretrained, two seeds and the seeds pooled (BTS)
    document = layer_latex(profile, "s")
    lines = document.splitlines()
    assert sum(line.startswith("m & ") for line in lines) == 2 * (1 + 2 + 1)  # per layer: 1 test, 2 BTS kinds, CKA
    assert "m & deep & linear CKA & -- & $1.00$ $[1.00, 1.00]$ \\\\" in lines
    with pytest.raises(ValueError, match="no rows for analysis set 'other'"):
        layer_latex(profile, "other")
    if PDFLATEX:
        compile_latex(document, tmp_path, "layers")
