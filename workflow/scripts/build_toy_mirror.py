"""Build a toy mirror of everything a config's real-data run downloads, and the overlay config that runs it.

The mirror (``wget -x`` layout: ``<mirror>/<host>/<path>``, see biastransfer.data.download) holds COCO 2017
and Open Images V4 files in their real formats (biastransfer.data.toy_mirror), the authors' analysis-set
lists as stand-ins at the config's pinned-commit path, and random weights for every configured model in its
source's file format at its registry URL path (biastransfer.models.toy_weights). The overlay, given after
the config (``snakemake --configfile config/paper.yaml <overlay>``), changes only scale and location: the
mirror, image size (an open_clip ViT's the multiple of its patch at or above it: models.toy_weights.toy_crop),
numbers of images, epochs, at most two seeds per dataset, batch size, CPU instead of GPU, and the checksums of the stand-in files; it also turns the trajectories and layer profiles off (they
would double the embedding jobs), every intervention on (config/paper.yaml ships its COCO intervention
off; the mirror's COCO and Open Images training images give an intervention people beside their objects),
and one mitigation arm on: the first that refits a plain network's last layer (dfr or leace: seconds at
this size), the others left as the config has them.
``mirror_url`` (for a mirror served over HTTP) replaces the folder in the overlay.
Standalone: python workflow/scripts/build_toy_mirror.py --mirror toy/mirror --overlay toy/overlay.yaml
"""

import hashlib
import logging
from pathlib import Path

import yaml

from biastransfer.data import toy_mirror
from biastransfer.data.download import apply_mirror
from biastransfer.models.resolve import model_spec
from biastransfer.models.toy_weights import toy_crop, write_weights
from biastransfer.scripting import run
from biastransfer.vocabulary import HEAD_ONLY_METHODS
from biastransfer.workflow.config import fill_defaults, read_config_file

log = logging.getLogger(__name__)


def toy_mitigation(config: dict) -> str | None:
    """The mitigation arm the toy run switches on: the first that refits a plain network's last layer."""
    return next(
        (n for n, s in config["datasets"].items() if s["kind"] == "mitigation" and s["method"] in HEAD_ONLY_METHODS),
        None,
    )


def overlay_for(
    config: dict, mirror: str, lists: dict, checksums: dict, weights: dict, size: int, batch_size: int
) -> dict:
    """The overlay config: location and scale only, every intervention and one mitigation arm on (see the
    module docstring)."""
    toy_arm = toy_mitigation(config)
    datasets = {
        name: {"enabled": True}
        if spec["kind"] == "intervention" or name == toy_arm
        else {"mirror": mirror, "workers": 2, "checksums": checksums[name]}
        for name, spec in config["datasets"].items()
        if spec["kind"] != "mitigation" or name == toy_arm
    }
    models = {}
    for name, (_path, sha256, md5, local) in weights.items():
        entry = {"sha256": sha256}
        if md5:
            entry["md5"] = md5
        if local:
            entry["weights"] = local
        crop = toy_crop(model_spec(name, config["models"][name]), size)
        if crop is not None:
            entry["preprocess"] = {"resize": crop, "crop": crop}
        models[name] = entry
    overrides = {m: {d: {"epochs": 1} for d in per} for m, per in config["finetune"]["overrides"].items()}
    seeds = config["finetune"]["seeds"]  # at most two per dataset: still a spread over seeds, in less time
    seeds = {d: list(s)[:2] for d, s in seeds.items()} if isinstance(seeds, dict) else list(seeds)[:2]
    return {
        "datasets": datasets,
        "analysis_sets": {a: {"paper": {"files": files}} for a, files in lists.items()},
        "models": models,
        "weights": {"mirror": mirror},
        # trajectories and layer profiles off: they would add 24 trajectory and 12 layer-embedding jobs (each
        # for every network of a model on an analysis set) to the toy run; the demo runs both end to end,
        # tests/test_trajectory.py a tiny trajectory run, and tests/test_layers.py resolves every paper model's
        # layers
        "finetune": {
            "device": "cpu",
            "num_workers": 0,
            "defaults": {"epochs": 1, "batch_size": batch_size},
            "overrides": overrides,
            "seeds": seeds,
            "trajectory": "off",
        },
        "analysis": {"embed": {"batch_size": 16, "num_workers": 0, "device": "cpu"}, "layers": {"enabled": False}},
    }


def main(
    mirror: str,
    overlay: str,
    config: str = "config/paper.yaml",
    mirror_url: str | None = None,
    size: int = 48,
    per_class: int = 3,
    train_images: int = 16,
    val_images: int = 8,
    test_images: int = 12,
    batch_size: int = 4,
    seed: int = 0,
) -> None:
    # the config with every intervention and its toy mitigation arm on, so that the overlay scales their
    # finetuning too
    raw = read_config_file(config)
    arm = toy_mitigation(raw)
    for name, spec in raw["datasets"].items():
        if spec.get("kind") == "intervention" or name == arm:
            spec["enabled"] = True
    cfg = fill_defaults(raw)
    root = Path(mirror).resolve()
    sizes = toy_mirror.ToySizes(
        per_class=per_class, n_train=train_images, n_val=val_images, n_test=test_images, size=size
    )
    lists, checksums = {}, {}
    for name, aset in cfg["analysis_sets"].items():
        kind = cfg["datasets"][aset["dataset"]]["kind"]
        cur = aset.get("curation", {})
        base = aset["paper"]["base_url"]
        if kind == "coco":
            objects = cur.get("objects", toy_mirror.coco.DEFAULT_CURATION["objects"])
            lists[name], checksums[aset["dataset"]] = toy_mirror.build_coco(
                root, base, aset["classes"], objects=objects, sizes=sizes
            )
        elif kind == "openimages":
            d = toy_mirror.oi.DEFAULT_CURATION
            lists[name], checksums[aset["dataset"]] = toy_mirror.build_openimages(
                root,
                base,
                aset["classes"],
                objects=cur.get("objects", d["objects"]),
                genders=cur.get("genders", d["genders"]),
                sizes=sizes,
            )
        log.info("%s: %d stand-in lists under %s", name, len(lists[name]), root)
    weights = {}
    for k, (name, entry) in enumerate(cfg["models"].items()):
        spec = model_spec(name, entry)
        remote = bool(spec.weights) and spec.weights.startswith(("http://", "https://"))
        path = Path(apply_mirror(spec.weights, root)) if remote else root / "local" / name / Path(spec.weights).name
        write_weights(spec, path, seed=seed + k)
        md5 = hashlib.md5(path.read_bytes()).hexdigest() if spec.md5 else None
        weights[name] = (path, toy_mirror.sha256_of(path), md5, None if remote else str(path))
        log.info("%s: %s (%.0f MB)", name, path, path.stat().st_size / 1e6)
    out = overlay_for(cfg, mirror_url or str(root), lists, checksums, weights, size, batch_size)
    Path(overlay).parent.mkdir(parents=True, exist_ok=True)
    header = (
        f"# Toy overlay for {config}: scale and location, every intervention and one mitigation arm on "
        "(written by workflow/scripts/build_toy_mirror.py)\n"
    )
    Path(overlay).write_text(header + yaml.safe_dump(out, sort_keys=False))
    log.info("wrote %s", overlay)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
