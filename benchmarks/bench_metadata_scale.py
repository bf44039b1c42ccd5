"""The paper's metadata at its real size: every rule that reads the annotation files, splits, selections or
attributes, run with config/paper.yaml's settings on a scale mirror of COCO 2017 and Open Images V4
(biastransfer.data.scale_mirror: the real row counts, tiny pixels), each job's peak memory and wall time
against its declared ``mem_mb`` and this machine's memory.

Steps, in WORKDIR (default: a temporary folder, deleted after): write the mirror and an overlay that
changes only location (the mirror, the stand-in files' checksums) and switches the COCO intervention on
(``coco_independent``, off in config/paper.yaml), as ``make paper-toy``'s does; put hard links to tiny
JPEGs where the splits' images are expected under the run's data roots (a user with the images on disk;
the analysis images are fetched from the mirror); run the pre-flight check and the estimate
(workflow/scripts/preflight.py); run Snakemake on the targets of the rules in ``RULES`` (offline, one
job at a time, ``--cores 8`` so that a rule gets the threads it asks for); curate both analysis sets
again with ``source: curated``; open the largest finetuning split and its cache as ``finetune`` does
before its first step; write stand-in predictions and embeddings of every network at the evaluation
splits' sizes and run ``amplification`` on them. Every Python process of these runs records its peak
memory (its ``VmHWM``; with a process pool, the sampled sum of the pool's proportional memory if larger)
and its wall time from interpreter start (benchmarks/metadata_probe/sitecustomize.py, first on
``PYTHONPATH``).

Run (about 1.5 h and 13 GB of disk at full scale on 2 shared cores; --scale 0.05 is the smallest that
holds the paper's analysis sets, about 3 min; ``--scale 0.02 --most 3``, three images per analysis class, is
tests/test_scale_mirror.py's check that every rule runs, about 1.5 min):
    nice -n 10 python benchmarks/bench_metadata_scale.py --out benchmarks/results/metadata_scale.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import yaml

REPO = Path(__file__).resolve().parents[1]
PROBE = REPO / "benchmarks" / "metadata_probe"
PAPER = REPO / "config" / "paper.yaml"

#: The rules run here, each with what its job reads at the paper's scale.
RULES = {
    "download_dataset": "copies the annotation files from the mirror, verifies them, unpacks COCO's zip",
    "download_paper_lists": "copies and verifies the authors' lists",
    "curate_analysis_set": "source paper: the lists (COCO: both instances files for the flickr URL); "
    "source curated: every instances, captions or validation label file of the set",
    "fetch_analysis_images": "copies and hashes the analysis images",
    "make_splits": "the train and validation annotation files; writes the train and val splits",
    "fetch_split_images": "every image path of a split (present: no copy)",
    "real_test_split": "the evaluation annotations, checked against the train (and val) split",
    "real_test_attributes": "COCO val2017 captions / Open Images test labels and MIAP boxes",
    "real_train_attributes": "COCO train2017 captions (the intervention's input)",
    "intervention": "the COCO train split and its attributes; writes the subsampled split",
    "intervention_test_split": "the COCO evaluation split and its attributes",
    "check_leakage": "every training and evaluation split of every dataset against one analysis set",
    "analysis_set_summary": "both manifests",
    "image_cache": "every image of a split (tiny files here: the index and shards, not the decoding)",
    "amplification": "both evaluation splits and attribute files, and stand-ins of every network's predictions "
    "and embeddings of them (real formats and sizes, random values)",
}
#: Rules that read a split, selection, manifest, attribute file or cache but are not run here, and why.
NOT_RUN = {
    "finetune": "trains a network on real pixels; its set-up (the split, its labels and its cache index read) "
    "is measured here as 'finetune set-up'",
    "predict": "needs finetuned networks; reads the evaluation split (at most 125,436 rows)",
    "embed": "needs networks; reads an analysis set's manifest (at most 1,925 images)",
    "embed_layers": "needs networks; reads an analysis set's manifest",
    "link": "needs the networks' predictions and embeddings of the evaluation split",
    "plot_contact_sheet": "a figure of an analysis set's manifest",
}
#: What a run on this mirror cannot tell, and why.
CANNOT_SHOW = {
    "pixels": "the images are 8 x 8 JPEGs: decoding and resizing (image_cache's and finetune's CPU time, the "
    "cache's size), real downloads and file sizes are not measured here (benchmarks/bench_input.py, "
    "bench_download.py and resources/costs/ give them)",
    "weights": "no network runs: finetune, predict and embed are not run, and amplification reads random "
    "stand-in scores and embeddings of the real shapes (its memory and time, not its results, mean anything)",
    "label statistics": "rows are drawn with plausible but made-up frequencies (category and label shares, "
    "labels per image, attribute shares, MIAP boxes per image): the memory of label lists and the sizes of "
    "the attribute groups follow them",
    "the annotation zip": "it holds instances and captions only (the real one also has the person keypoints, "
    "which the workflow never unpacks), so it is smaller and its checksum faster",
    "timings": "measured one job at a time on 2 cores shared with other work (load average in the machine "
    "line): wall times are upper bounds for a dedicated machine",
}
#: Outside Snakemake: the pre-flight check and the estimate (commands), and the finetuning job's set-up.
COMMANDS = ("preflight", "preflight --estimate", "finetune set-up")


def paper_config(overlays=()) -> dict:
    from biastransfer.workflow.config import read_configs

    return read_configs([PAPER, *overlays])


def build(mirror: Path, config: dict, scale: float, seed: int, most: int | None = None) -> tuple[dict, dict]:
    """The mirror of the config's datasets at ``scale``, with at most ``most`` images per analysis class
    (None: the paper's sizes): (overlay, {dataset: Written})."""
    from biastransfer.data import coco, scale_mirror
    from biastransfer.data import openimages as oi
    from biastransfer.workflow.config import read_config_file

    counts = scale_mirror.ScaleCounts().scaled(scale)
    overlay, written = {"datasets": {}, "analysis_sets": {}}, {}
    for name, aset in config["analysis_sets"].items():
        dataset, cur = aset["dataset"], aset["curation"]
        sizes = {c: min(n, most or n) for c, n in cur["sizes"].items()}
        kind, base = config["datasets"][dataset]["kind"], aset["paper"]["base_url"]
        if kind == "coco":
            objects = cur.get("objects", coco.DEFAULT_CURATION["objects"])
            out = scale_mirror.build_coco(mirror, base, sizes, objects=objects, counts=counts, seed=seed)
        else:
            objects = cur.get("objects", oi.DEFAULT_CURATION["objects"])
            genders = cur.get("genders", oi.DEFAULT_CURATION["genders"])
            out = scale_mirror.build_openimages(
                mirror, base, sizes, objects=objects, genders=genders, counts=counts, seed=seed
            )
        written[dataset] = out
        overlay["datasets"][dataset] = {"mirror": str(mirror), "workers": 2, "checksums": out.checksums}
        overlay["analysis_sets"][name] = {"paper": {"files": out.lists}}
        if sizes != cur["sizes"]:
            overlay["analysis_sets"][name]["curation"] = {"sizes": sizes}
    for name, spec in read_config_file(PAPER)["datasets"].items():  # switched off ones too
        if spec["kind"] == "intervention":
            overlay["datasets"][name] = {"enabled": True}
    return overlay, written


def cache_settings(config: dict) -> list[str]:
    """The training caches' settings of the configured models (one cache each)."""
    from biastransfer.data.cache import CacheSetting
    from biastransfer.models.resolve import model_spec

    quality = config["finetune"]["cache_quality"]
    pres = [model_spec(m, e).preprocess for m, e in config["models"].items()]
    return sorted({CacheSetting(p.resize, p.interpolation, quality).name for p in pres})


def targets(config: dict, setting: str) -> list[str]:
    """The files whose jobs are the rules in RULES (one cache setting: every setting's job is alike)."""
    from biastransfer.paths import path

    real = [d for d, s in config["datasets"].items() if s["kind"] in ("coco", "openimages")]
    interventions = [d for d in config["finetune"]["datasets"] if config["datasets"][d]["kind"] == "intervention"]
    out = ["results/summary/analysis_sets.csv"]
    out += [path("leakage_check", analysis_set=a) for a in config["analysis_sets"]]
    out += [path("attributes", dataset=d, split="test") for d in real + interventions]
    out += [path("image_cache", dataset=d, setting=setting, split=s) for d in real for s in ("train", "val")]
    return out


def environment(workdir: Path, probe: Path) -> dict:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(PROBE), str(REPO / "src")]),
        "BIASTRANSFER_PROBE": str(probe),
        "BIASTRANSFER_CACHE_DIR": str(workdir / "check-cache"),
        "HF_HUB_OFFLINE": "1",
    }


def snakemake(run: Path, configs: list, env: dict, probe: Path, goals: list, *extra: str) -> dict:
    """Snakemake on ``goals``, one job at a time (every job needs the one ``serial`` unit); the probe record
    of its own process."""
    cmd = ["-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(run), "--configfile"]
    cmd += [*map(str, configs), "--cores", "8", "--resources", "serial=1", "--default-resources", "serial=1"]
    row = command(run, [*cmd, *extra, "--quiet", "rules", "--", *goals], env, "snakemake", probe)
    if row["returncode"]:
        raise SystemExit(f"snakemake failed ({row['returncode']}):\n{row['output']}")
    return row


def command(run: Path, args: list, env: dict, label: str, probe: Path) -> dict:
    """Run ``python ARGS`` in ``run``: its probe record, labelled, with its exit status and the end of its output."""
    proc = subprocess.Popen([sys.executable, *args], cwd=run, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output = proc.communicate()[0].decode(errors="replace")
    row = next((r for r in records(probe) if r["pid"] == proc.pid), {})
    return {**row, "label": label, "returncode": proc.returncode, "output": output[-1500:]}


def records(probe: Path) -> list[dict]:
    return [json.loads(line) for line in probe.read_text().splitlines()] if probe.is_file() else []


FINETUNE_SETUP = """
import sys
from biastransfer.data.cache import ImageCache
from biastransfer.data.splits import read_split
from biastransfer.hashing import file_digest
from biastransfer.train.data import ImageLabelDataset

split_file, index = sys.argv[1:3]
split = read_split(split_file)
cache = ImageCache(index, split_sha256=file_digest(split_file), image_ids=split.frame["image_id"])
data = ImageLabelDataset(split, transform=None, cache=cache)
print(len(data), "images,", len(data.label_index), "labels")
"""


def write_predictions_for(run: Path, config: dict, seed: int) -> list[str]:
    """Stand-in prediction and embedding files of every network the paper's amplification job reads, in their
    formats (biastransfer.predictions, biastransfer.embeddings) at the evaluation splits' real sizes: scores
    near each image's labels with noise, Gaussian embeddings of the model's dimension. Returns the files."""
    import numpy as np
    import pandas as pd

    from biastransfer.data.splits import read_split
    from biastransfer.embeddings import write_embeddings
    from biastransfer.hashing import file_digest
    from biastransfer.paths import path
    from biastransfer.predictions import write_predictions
    from biastransfer.stages import finetuned_stage, scratch_stage
    from biastransfer.workflow.config import finetune_seeds, reference_seeds

    dims = pd.read_csv(REPO / "resources" / "costs" / "models.csv").groupby("model")["embed_dim"].first()
    rng, written = np.random.default_rng(seed), []
    for d in config["finetune"]["datasets"]:
        test = run / path("split", dataset=d, split="test")
        split, digest = read_split(test), file_digest(test)
        index = {c: k for k, c in enumerate(split.classes)}
        labels = np.zeros((len(split.frame), len(split.classes)), dtype=np.float32)
        for row, names in enumerate(split.frame["labels"]):
            labels[row, [index[c] for c in names]] = 1.0
        stages = [finetuned_stage(d, s) for s in finetune_seeds(config, d)]
        stages += [scratch_stage(d, s) for s in reference_seeds(config, d)]
        for model in config["models"]:
            for stage in stages:
                meta = {"model": model, "stage": stage, "weights_sha256": f"{model}-{stage}"}
                meta |= {"dataset": d, "split": "test", "split_sha256": digest}
                logits = 4 * labels - 2 + rng.normal(0, 1.5, labels.shape).astype(np.float32)
                scores = 1 / (1 + np.exp(-logits))
                out = run / path("predictions", model=model, stage=stage)
                out.parent.mkdir(parents=True, exist_ok=True)
                write_predictions(out, split.frame["image_id"], split.classes, scores, meta)
                features = rng.standard_normal((len(split.frame), int(dims[model])), dtype=np.float32)
                emb = run / path("prediction_embedding", model=model, stage=stage)
                write_embeddings(emb, split.frame["image_id"], ["test"] * len(features), features, meta)
                written += [str(out), str(emb)]
        for model in config["models"]:  # the pretrained network's embedding: its leakage is the baseline
            meta = {"model": model, "stage": "pretrained", "weights_sha256": f"{model}-pretrained"}
            meta |= {"dataset": d, "split": "test", "split_sha256": digest}
            features = rng.standard_normal((len(split.frame), int(dims[model])), dtype=np.float32)
            emb = run / path("pretrained_test_embedding", model=model, dataset=d)
            write_embeddings(emb, split.frame["image_id"], ["test"] * len(features), features, meta)
            written.append(str(emb))
    return written


def summarise(rows: list[dict], machine_mb: float) -> list[list]:
    """The figures: one per job (rule, wildcards), then the commands."""
    figures = []
    for r in rows:
        peak = max(r["peak_mb"], r.get("tree_pss_mb", 0))
        limit = r.get("mem_mb")
        within = f"{peak / limit:.0%} of mem_mb {limit}" if limit else f"{peak / machine_mb:.1%} of the machine"
        threads = f", {r['threads']} threads" if r.get("threads", 1) > 1 else ""
        figures.append([r["label"], f"{peak / 1024:.2f} GB ({within}), {r['wall_s']:.1f} s{threads}"])
    return figures


def label(rec: dict) -> str:
    wildcards = ", ".join(f"{v}" for v in rec.get("wildcards", {}).values())
    return f"{rec['rule']} ({wildcards})" if wildcards else rec["rule"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the real row counts")
    parser.add_argument("--workdir", default=None, help="keep everything here (default: a temporary folder)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--most", type=int, default=None, help="at most this many images per analysis class (default: the paper's)"
    )
    parser.add_argument("--out", default=None, help="write the figures as a benchmarks/results record")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "src"))
    tmp = None if args.workdir else tempfile.mkdtemp(prefix="metadata-scale-")
    work = Path(args.workdir or tmp).resolve()
    try:
        measure(work, args)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def measure(work: Path, args) -> None:
    from biastransfer.data.scale_mirror import place_images
    from biastransfer.paths import path

    machine_mb = psutil.virtual_memory().total / 2**20
    run, mirror, probe, curated_probe = work / "run", work / "mirror", work / "probe.jsonl", work / "curated.jsonl"
    for p in (run, mirror):
        shutil.rmtree(p, ignore_errors=True)
    probe.unlink(missing_ok=True)
    curated_probe.unlink(missing_ok=True)
    run.mkdir(parents=True)
    load_before = os.getloadavg()[0]
    t0 = time.time()
    config = paper_config()
    overlay, written = build(mirror, config, args.scale, args.seed, args.most)
    build_s, build_mb = time.time() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    (work / "overlay.yaml").write_text(yaml.safe_dump(overlay, sort_keys=False))
    curated = {"analysis_sets": {a: {"source": "curated"} for a in config["analysis_sets"]}}
    (work / "curated.yaml").write_text(yaml.safe_dump(curated))
    configs = [PAPER, work / "overlay.yaml"]
    config = paper_config(configs[1:])
    t0 = time.time()
    links = sum(
        place_images(run / config["datasets"][d]["root"] / rel for rel in rels)
        for d, out in written.items()
        for rels in out.images.values()
    )
    place_s = time.time() - t0
    env = environment(work, probe)
    cfg_args = ["--configfile", *map(str, configs)]
    script = str(REPO / "workflow" / "scripts" / "preflight.py")
    estimate = [script, *cfg_args, "--estimate", "--gpus", "4", "--cores", "64"]
    rows = [
        command(run, [script, *cfg_args, "--table", "preflight.csv"], env, "preflight", probe),
        command(run, estimate, env, "preflight --estimate", probe),
    ]
    table = run / "preflight.csv"
    statuses = {}
    if table.is_file():
        import pandas as pd

        frame = pd.read_csv(table)
        statuses = {f"{g}: {s}": int(n) for (g, s), n in frame.groupby(["group", "status"]).size().items()}
    setting = cache_settings(config)[0]
    goals = targets(config, setting)
    t0 = time.time()
    snakes = [snakemake(run, configs, env, probe, goals)]
    workflow_s = time.time() - t0
    selections = [path("selection", analysis_set=a) for a in config["analysis_sets"]]
    again = ("--forcerun", "curate_analysis_set", "--until", "curate_analysis_set")
    snakes.append(snakemake(run, [*configs, work / "curated.yaml"], env, curated_probe, selections, *again))

    largest = max(written, key=lambda d: len(written[d].images.get("train", [])))
    split_file, index = (
        path("split", dataset=largest, split="train"),
        path("image_cache", dataset=largest, setting=setting, split="train"),
    )
    setup = ["-c", FINETUNE_SETUP, split_file, index]
    rows.append(command(run, setup, env, f"finetune set-up ({largest}, train)", probe))
    t0 = time.time()
    stand_ins = write_predictions_for(run, config, args.seed)
    stand_in_s, stand_in_bytes = time.time() - t0, sum(os.path.getsize(f) for f in stand_ins)
    amplification = ["results/summary/amplification.csv"]
    snakes.append(snakemake(run, configs, env, probe, amplification, "--allowed-rules", "amplification"))
    jobs = [dict(r, label=label(r)) for r in records(probe) if r.get("rule")]
    jobs += [dict(r, label=label(r) + " source curated") for r in records(curated_probe) if r.get("rule")]
    ran = {r["rule"] for r in jobs}
    missing = sorted(set(RULES) - ran)
    max_rss = max(r.get("peak_mb", 0) for r in snakes)
    result = {
        "title": f"The paper's metadata at {args.scale:g} x its real size: every metadata rule's peak memory "
        "and wall time (config/paper.yaml, COCO intervention on)",
        "command": f"nice -n 10 python benchmarks/bench_metadata_scale.py --scale {args.scale:g}"
        + (f" --most {args.most}" if args.most else "")
        + (f" --out {args.out}" if args.out else ""),
        "commit": subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),
        "machine": f"{os.cpu_count()} cores, {machine_mb / 1024:.1f} GB, {platform.machine()}, load average "
        f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after",
        "figures": [
            *[[f"what {rule} reads", what] for rule, what in RULES.items()],
            *[[f"not run: {rule}", why] for rule, why in NOT_RUN.items()],
            *[[f"what the mirror cannot show: {what}", why] for what, why in CANNOT_SHOW.items()],
            ["mirror written (rows and bytes of each file below)", f"{build_s:.0f} s, {build_mb / 1024:.1f} GB peak"],
            ["split images placed (hard links to tiny JPEGs)", f"{links:,} in {place_s:.0f} s"],
            [
                "stand-in predictions and embeddings of every network (amplification's input)",
                f"{len(stand_ins)} files, {stand_in_bytes / 1e9:.1f} GB in {stand_in_s:.0f} s",
            ],
            *[
                [f"{d}: {name}", f"{n:,} rows, {b / 1e6:.1f} MB"]
                for d, out in written.items()
                for name, (n, b) in out.files.items()
            ],
            *summarise(sorted(jobs, key=lambda r: r["label"]), machine_mb),
            *summarise([r for r in rows if "peak_mb" in r], machine_mb),
            ["snakemake itself (DAG and scheduling), largest of its calls", f"{max_rss / 1024:.2f} GB"],
            ["the workflow's metadata rules, wall time (one job at a time)", f"{workflow_s:.0f} s"],
            ["pre-flight table, rows by group and status", "; ".join(f"{k} {v}" for k, v in statuses.items())],
            ["pre-flight exit status (1: a file missing or failing its checksum)", str(rows[0]["returncode"])],
        ],
        "not_run": NOT_RUN,
        "missing_rules": missing,
        "jobs": jobs,
        "commands": rows,
    }
    text = json.dumps(result, indent=2) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    print("\n".join(f"{what}: {value}" for what, value in result["figures"]))
    if missing or any(r["returncode"] for r in rows if r["label"] != "preflight"):
        raise SystemExit(f"rules not run: {missing}; commands: {[(r['label'], r['returncode']) for r in rows]}")


if __name__ == "__main__":
    main()
