"""The small model zoo of the tests and benchmarks/bench_zoo.py: its config, with random weights written in
each source's real file format, at their real URLs in a folder mirror or as a user's local files."""

import copy
from pathlib import Path

# The small zoo: seven models from four sources (torchvision .pth, timm hub safetensors, open_clip hub
# safetensors, a user's torch.save checkpoint), served from a folder mirror at their real URLs, plus an
# unknown pretrained tag and a checkpoint that does not fit its architecture.
SMALL = {"resize": 64, "crop": 64}
SMALL_ZOO = {
    "resnet18": {"preprocess": SMALL, "about": {"family": "CNN", "data": "ImageNet-1k"}},
    "tv_mobilenet_v3_small": {
        "source": "torchvision",
        "arch": "mobilenet_v3_small",
        "preprocess": SMALL,
        "weights": "https://download.pytorch.org/models/mobilenet_v3_small-047dcff4.pth",
        "about": {"family": "CNN", "data": "ImageNet-1k"},
    },
    "resnet10t_c3_in1k": {
        "source": "timm",
        "arch": "resnet10t",
        "pretrained_tag": "c3_in1k",
        "preprocess": SMALL,
        "about": {"family": "CNN", "data": "ImageNet-1k", "params_m": 4.9},
    },
    "regnetx_002_pycls_in1k": {
        "source": "timm",
        "arch": "regnetx_002",
        "pretrained_tag": "pycls_in1k",
        "preprocess": SMALL,
        "about": {"family": "CNN", "data": "ImageNet-1k", "params_m": 2.3},
    },
    "deit_tiny_patch16_224_fb_in1k": {
        "source": "timm",
        "arch": "deit_tiny_patch16_224",
        "pretrained_tag": "fb_in1k",
        "about": {"family": "ViT", "data": "ImageNet-1k", "params_m": 5.5},
    },
    "clip_RN50_openai": {
        "source": "open_clip",
        "arch": "RN50",
        "pretrained_tag": "openai",
        "about": {"family": "CLIP", "data": "OpenAI WIT-400M", "params_m": 38.3},
    },
    "user_resnet18": {
        "source": "checkpoint",
        "arch": "resnet18",
        "preprocess": SMALL,
        "about": {"family": "CNN", "data": "my own"},
    },
    "broken_tag": {
        "source": "timm",
        "arch": "resnet18",
        "pretrained_tag": "no_such_tag",
        "about": {"family": "CNN", "data": "?"},
    },
    "broken_weights": {
        "source": "checkpoint",
        "arch": "resnet34",
        "preprocess": SMALL,
        "about": {"family": "CNN", "data": "?"},
    },
}
BROKEN = {"broken_tag": "no_such_tag", "broken_weights": "resnet34"}


def small_zoo_config(root: Path, models=None) -> dict:
    """The small zoo's config, with random weights written in each source's format (mirror and local files)."""
    from biastransfer.data.download import apply_mirror
    from biastransfer.models.resolve import model_spec
    from biastransfer.models.toy_weights import write_weights

    models = copy.deepcopy({m: SMALL_ZOO[m] for m in models or SMALL_ZOO})
    user = {"user_resnet18": "my_resnet18.pth", "broken_weights": "resnet18_weights_for_resnet34.pth"}
    for name, file in user.items():
        if name in models:
            models[name]["weights"] = str(root / "user" / file)
    if "broken_weights" in models:  # the file a user mixed up: a ResNet-18 checkpoint configured as a ResNet-34
        write_weights(
            model_spec("x", {"source": "checkpoint", "arch": "resnet18"}), models["broken_weights"]["weights"]
        )
    for k, (name, entry) in enumerate(models.items()):
        if name.startswith("broken"):
            continue
        spec = model_spec(name, entry)
        local = not spec.weights.startswith("https://")
        write_weights(spec, spec.weights if local else apply_mirror(spec.weights, root / "mirror"), seed=k)
        if spec.sha256:  # the registry's published digest: the toy file replaces it
            from biastransfer.hashing import file_digest

            entry["sha256"] = file_digest(apply_mirror(spec.weights, root / "mirror"))
    return {
        "datasets": {"target": {"kind": "synthetic", "size": 32, "n_train": 8, "n_val": 8, "seed": 13}},
        "analysis_sets": {
            "synthetic": {
                "dataset": "target",
                "source": "synthetic",
                "size": 32,
                "n_per_class": 6,
                "seed": 14,
                "classes": ["person_a", "person_b", "car", "surfboard", "refrigerator", "stop_sign"],
                "ieat": [
                    {"name": "surfboard_vs_car", "X": "person_a", "Y": "person_b", "A": "surfboard", "B": "car"},
                    {
                        "name": "refrigerator_vs_stop_sign",
                        "X": "person_a",
                        "Y": "person_b",
                        "A": "refrigerator",
                        "B": "stop_sign",
                    },
                ],
            }
        },
        "models": models,
        "weights": {"cache_dir": str(root / "cache"), "mirror": str(root / "mirror")},
        "finetune": {"datasets": []},
        "zoo": {"rank_by": {"analysis_set": "synthetic", "test": "surfboard_vs_car"}},
        "analysis": {
            "ieat": {"permutations": 1000, "bootstrap": 200},
            "embed": {
                "batch_size": 8,
                "num_workers": 0,
                "device": "cpu",
                "sizes": [{"up_to_m": 10, "batch_size": 64, "mem_mb": 2000}],
            },
        },
    }
