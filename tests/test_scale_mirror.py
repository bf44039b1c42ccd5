"""The scale mirror (biastransfer.data.scale_mirror) at a small fraction of the real row counts: real formats
parsed by the real readers, the counts asked for, analysis images that meet their class's rules; and
benchmarks/bench_metadata_scale.py's rule list against every rule of the paper's DAG that reads metadata."""

import importlib.util
import json
import os
import zipfile

import pandas as pd
import pytest
import yaml
from conftest import ROOT, planned_dag
from PIL import Image

from biastransfer.data import coco, scale_mirror
from biastransfer.data import openimages as oi
from biastransfer.data.download import apply_mirror
from biastransfer.hashing import file_digest

PAPER = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())
COUNTS = scale_mirror.ScaleCounts().scaled(0.002)
WORDS = {"male_words": ["man", "men", "boy"], "female_words": ["woman", "women", "girl"], "punctuation": "delete"}


def test_scaled_counts_keep_every_file_non_empty():
    assert scale_mirror.ScaleCounts().scaled(1) == scale_mirror.ScaleCounts()
    assert scale_mirror.ScaleCounts().coco_train_images == 118_287
    assert scale_mirror.ScaleCounts().oi_train_images == 1_743_042
    assert set(vars(scale_mirror.ScaleCounts().scaled(1e-9)).values()) == {1}


def test_coco_scale_mirror_has_its_counts_in_the_real_format(tmp_path):
    aset = PAPER["analysis_sets"]["coco"]
    sizes, base = {c: 1 for c in aset["classes"]}, aset["paper"]["base_url"]
    out = scale_mirror.build_coco(tmp_path, base, sizes, objects=aset["curation"]["objects"], counts=COUNTS)
    archive = tmp_path / "images.cocodataset.org" / "annotations" / "annotations_trainval2017.zip"
    assert out.checksums == {"annotations_trainval2017.zip": file_digest(archive)}
    root = tmp_path / "coco"
    with zipfile.ZipFile(archive) as zf:
        assert sorted(zf.namelist()) == sorted(
            f"annotations/{k}_{s}.json" for k in ("instances", "captions") for s in coco.SPLITS
        )
        zf.extractall(root)
    ann = root / "annotations"
    inst = {s: coco.load_instances(ann / f"instances_{s}.json") for s in coco.SPLITS}
    caps = {s: coco.load_captions(ann / f"captions_{s}.json") for s in coco.SPLITS}
    for split, prefix in (("train2017", "coco_train"), ("val2017", "coco_val")):
        assert len(inst[split].images) == getattr(COUNTS, f"{prefix}_images")
        assert len(inst[split].annotations) == getattr(COUNTS, f"{prefix}_annotations")
        assert len(caps[split]) == getattr(COUNTS, f"{prefix}_captions")
        assert out.files[f"annotations/instances_{split}.json"][0] == len(inst[split].annotations)
        assert set(caps[split]["image_id"]) == set(inst[split].images["id"])  # every image has captions
    assert not set(inst["train2017"].images["id"]) & set(inst["val2017"].images["id"])
    assert inst["val2017"].class_names == tuple(n for _, n in scale_mirror.COCO_CATEGORIES)
    raw = json.loads((ann / "instances_train2017.json").read_text())
    crowd = [a["segmentation"] for a in raw["annotations"] if a["iscrowd"]]
    assert crowd and all(set(s) == {"counts", "size"} for s in crowd), "crowd annotations carry uncompressed RLE"
    assert all(isinstance(a["segmentation"], list) for a in raw["annotations"] if not a["iscrowd"])
    # the paper lists select the planted analysis images; one line is a flickr URL
    files = {c: apply_mirror(f"{base}/{c}.txt", tmp_path) for c in sizes}
    assert {c: file_digest(p) for c, p in files.items()} == out.lists
    tables = [inst[s].images.assign(split=s) for s in coco.SPLITS]
    sel = coco.paper_selection(files, root=root, images=tables)
    assert sel.groupby("class").size().to_dict() == sizes
    assert any("staticflickr" in r for r in sel["reason"])
    assert all((tmp_path / url.removeprefix("http://")).is_file() for url in sel["source"])
    # the curation rules find every class; the split images are all the others
    captions = pd.concat(caps.values(), ignore_index=True)
    curated = coco.curate(list(inst.values()), captions, sizes, root=root, **WORDS, objects=aset["curation"]["objects"])
    assert curated.groupby("class").size().to_dict() == sizes
    listed = {f"{s}/{int(i):012d}.jpg" for i, s in zip(sel["image_id"], sel["source_split"])}
    for split in coco.SPLITS:
        everything = {f"{split}/{i:012d}.jpg" for i in inst[split].images["id"]}
        assert set(out.images[split]) == everything - listed


def test_openimages_scale_mirror_has_its_counts_in_the_real_format(tmp_path):
    aset = PAPER["analysis_sets"]["openimages"]
    cur, base = aset["curation"], aset["paper"]["base_url"]
    sizes = {c: 1 for c in aset["classes"]}
    out = scale_mirror.build_openimages(
        tmp_path, base, sizes, objects=cur["objects"], genders=cur["genders"], counts=COUNTS
    )
    local = {name: apply_mirror(url, tmp_path) for name, (url, _) in oi.FILES.items()}
    assert out.checksums == {name: file_digest(p) for name, p in local.items()}
    classes = oi.load_classes(local["class-descriptions-boxable.csv"])
    assert len(classes) == 601 and dict(zip(classes["name"], classes["mid"])).items() >= oi.MIDS.items()
    splits = {}
    for split, prefix in (("train", "oi_train"), ("validation", "oi_validation"), ("test", "oi_test")):
        path = local[f"{split}-annotations-human-imagelabels-boxable.csv"]
        assert open(path).readline() == "ImageID,Source,LabelName,Confidence\n"
        every = oi.load_labels(path, classes, verified_only=False)
        assert len(every) == getattr(COUNTS, f"{prefix}_rows"), "no (image, class) pair twice"
        positive = oi.load_labels(path, classes)
        assert positive["image_id"].nunique() == getattr(COUNTS, f"{prefix}_images"), "every image has a positive"
        assert 0 < len(positive) < len(every), "verified negatives too"
        splits[split] = positive
    assert not set(splits["train"]["image_id"]) & set(splits["test"]["image_id"])
    miap = oi.load_miap(local[oi.MIAP_FILE])
    assert len(miap) == COUNTS.miap_test_boxes and miap["image_id"].nunique() == COUNTS.miap_test_images
    assert set(miap["image_id"]) <= set(splits["test"]["image_id"])
    files = {c: apply_mirror(f"{base}/{c}.txt", tmp_path) for c in sizes}
    assert {c: file_digest(p) for c, p in files.items()} == out.lists
    sel = oi.paper_selection(files, root=tmp_path / "oi")
    assert sel.groupby("class").size().to_dict() == sizes
    assert all((tmp_path / url.removeprefix("https://")).is_file() for url in sel["source"])
    options = {k: v for k, v in cur.items() if k != "sizes"}
    curated = oi.curate(splits["validation"], classes, sizes, root=tmp_path / "oi", **options)
    assert curated.groupby("class").size().to_dict() == sizes
    assert len(out.images["validation"]) == COUNTS.oi_validation_images - len(sel)
    assert not {f"validation/{i}.jpg" for i in sel["image_id"]} & set(out.images["validation"])
    assert len(out.images["train"]) == COUNTS.oi_train_images


def test_place_images_links_a_few_tiny_jpegs(tmp_path):
    paths = [tmp_path / "train" / f"{k:04d}.jpg" for k in range(7)]
    assert scale_mirror.place_images(paths, per_file=3) == 7
    assert len({os.stat(p).st_ino for p in paths}) == 3
    with Image.open(paths[-1]) as img:
        assert img.format == "JPEG" and img.size == (8, 8)
    assert scale_mirror.place_images(paths, per_file=3) == 0


def _bench():
    spec = importlib.util.spec_from_file_location(
        "bench_metadata_scale", ROOT / "benchmarks" / "bench_metadata_scale.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: Inputs that are metadata: annotation downloads and splits (results/data), published splits, attributes and
#: weights (results/splits), selections and manifests (results/analysis_sets), cache indexes (results/cache).
METADATA = ("results/data/", "results/splits/", "results/analysis_sets/", "results/cache/")


@pytest.fixture(scope="module")
def paper_dag(tmp_path_factory):
    """Every job of the paper's DAG with its COCO intervention on and 8 cores (as the benchmark runs it),
    and every rule of the workflow."""
    workdir = tmp_path_factory.mktemp("paper")
    overlay = workdir / "on.yaml"
    overlay.write_text(yaml.safe_dump({"datasets": {"coco_independent": {"enabled": True}}}))
    jobs, rules = planned_dag([ROOT / "config" / "paper.yaml", overlay], workdir, cores=8)
    return jobs, {r.name for r in rules}


def test_the_benchmark_runs_or_names_every_rule_that_reads_metadata(paper_dag):
    bench = _bench()
    jobs, rules = paper_dag
    readers = {j.rule.name for j in jobs if any(str(f).startswith(METADATA) for f in j.input)}
    assert readers, "the paper's DAG reads metadata"
    assert readers - set(bench.RULES) - set(bench.NOT_RUN) == set(), "add each to RULES (and run it) or NOT_RUN"
    assert set(bench.NOT_RUN) <= readers, "NOT_RUN names only rules of the paper's DAG that read metadata"
    assert not set(bench.RULES) & set(bench.NOT_RUN)
    assert set(bench.RULES) | set(bench.NOT_RUN) <= rules, "no stale rule names"
    assert set(bench.RULES) <= {j.rule.name for j in jobs}, "every rule run is in the paper's DAG"


def test_every_job_measured_at_the_papers_scale_fits_the_memory_its_rule_declares(paper_dag):
    """benchmarks/results/metadata_scale.json: each job's measured peak is within the mem_mb that its rule
    declares today for the same job of the paper's DAG."""
    record = json.loads((ROOT / "benchmarks" / "results" / "metadata_scale.json").read_text())
    declared = {(j.rule.name, tuple(sorted(j.wildcards_dict.items()))): j.resources.get("mem_mb") for j in paper_dag[0]}
    assert {j["rule"] for j in record["jobs"]} == set(_bench().RULES)
    for job in record["jobs"]:
        limit = declared[job["rule"], tuple(sorted(job["wildcards"].items()))]
        assert max(job["peak_mb"], job["tree_pss_mb"]) <= limit, f"{job['label']}: {job['peak_mb']:.0f} MB > {limit}"


@pytest.mark.slow
def test_the_benchmark_runs_every_rule_on_a_fiftieth_of_the_paper(tmp_path):
    """The whole benchmark at 2% of the paper's rows and three images per analysis class (at 1% an attribute
    of COCO's evaluation split has fewer images than the leakage probe's folds): it fails when a rule of
    RULES did not run or a command failed; every job's figure is in its record."""
    import subprocess
    import sys

    out = tmp_path / "record.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_metadata_scale.py"), "--scale", "0.02", "--most", "3"]
    done = subprocess.run(
        [*cmd, "--workdir", str(tmp_path / "work"), "--out", str(out)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    record = json.loads(out.read_text())
    assert {j["rule"] for j in record["jobs"]} == set(_bench().RULES)
    assert all(j["peak_mb"] > 0 and j["mem_mb"] for j in record["jobs"])
