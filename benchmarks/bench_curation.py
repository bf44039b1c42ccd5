"""Benchmark: parse an instances_train2017-sized COCO file and build analysis-set selections and splits.

Generates a synthetic instances JSON (~450 MB, 860k annotations with polygon segmentations, 118k images)
and a captions JSON (5 per image) in a temporary directory, then times, in a fresh child process per
repeat, ``load_instances`` + ``load_captions`` + ``curate`` + ``make_split``. Reports wall time and
peak RSS (targets: < 60 s and < 6 GB).

    .venv/bin/python benchmarks/bench_curation.py [--repeats 3] [--annotations 860000]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CATEGORIES = [{"id": i, "name": f"cat{i}", "supercategory": "x"} for i in range(2, 91)]
CATEGORIES[0:0] = [{"id": 1, "name": "person", "supercategory": "person"}]
CATEGORIES = CATEGORIES[:80]
for c, name in zip(CATEGORIES[1:4], ("car", "surfboard", "refrigerator")):
    c["name"] = name
WORDS = ["a man riding a wave", "a woman with a car", "a street with cars", "people at the beach", "a kitchen"]


def generate(folder: Path, n_images: int, n_ann: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    cat_ids = np.array([c["id"] for c in CATEGORIES])
    # a pool of realistic polygon texts (COCO averages ~25 points per polygon)
    polys = []
    for _ in range(2000):
        k = int(rng.integers(8, 40)) * 2
        polys.append(json.dumps([np.round(rng.uniform(0, 640, k), 2).tolist()]))
    img_of = np.sort(rng.integers(1, n_images + 1, n_ann))
    cat_of = np.where(rng.random(n_ann) < 0.3, 1, rng.choice(cat_ids, n_ann))
    area = np.round(rng.uniform(50, 80000, n_ann), 4)
    with open(folder / "instances_train2017.json", "w") as fh:
        fh.write('{"info": {"year": 2017}, "licenses": [{"id": 1, "name": "CC"}], "images": [')
        fh.write(
            ",".join(
                json.dumps(
                    {
                        "license": 1,
                        "file_name": f"{i:012d}.jpg",
                        "coco_url": f"http://images.cocodataset.org/train2017/{i:012d}.jpg",
                        "height": 480,
                        "width": 640,
                        "date_captured": "2013-11-14 11:18:45",
                        "flickr_url": f"http://farm4.staticflickr.com/1/{i}_x_z.jpg",
                        "id": i,
                    }
                )
                for i in range(1, n_images + 1)
            )
        )
        fh.write('], "annotations": [')
        pick = rng.integers(0, len(polys), n_ann)
        for start in range(0, n_ann, 50_000):
            stop = min(start + 50_000, n_ann)
            fh.write(
                ("," if start else "")
                + ",".join(
                    f'{{"segmentation": {polys[pick[j]]}, "area": {area[j]}, "iscrowd": 0, "image_id": {img_of[j]}, '
                    f'"bbox": [{area[j] % 600:.2f}, 10.5, 40.25, 80.75], "category_id": {cat_of[j]}, "id": {j + 1}}}'
                    for j in range(start, stop)
                )
            )
        fh.write('], "categories": ' + json.dumps(CATEGORIES) + "}")
    caps = [
        {"image_id": i, "id": 5 * i + k, "caption": WORDS[(i + k) % len(WORDS)]}
        for i in range(1, n_images + 1)
        for k in range(5)
    ]
    (folder / "captions_train2017.json").write_text(json.dumps({"info": {}, "images": [], "annotations": caps}))


def run_once(folder: Path) -> None:
    from biastransfer.data import coco

    t0 = time.perf_counter()
    inst = coco.load_instances(folder / "instances_train2017.json")
    caps = coco.load_captions(folder / "captions_train2017.json")
    t_parse = time.perf_counter() - t0
    sizes = {
        "car": 12,
        "car_man": 9,
        "car_woman": 6,
        "surfboard": 14,
        "surfboard_man": 23,
        "surfboard_woman": 16,
        "refrigerator": 18,
        "refrigerator_man": 8,
        "refrigerator_woman": 9,
        "man": 12,
        "woman": 15,
        "random": 20,
    }
    sel = coco.curate(
        [inst],
        caps,
        sizes,
        root="data/coco",
        male_words=["man", "men"],
        female_words=["woman", "women"],
        splits=["train2017"],
        objects={"car": "car", "surfboard": "surfboard", "refrigerator": "refrigerator"},
        min_area_fraction=0.0,
        on_shortfall="keep",
    )
    split = coco.make_split(inst, dataset="coco", name="train", root="data/coco", exclude=sel["image_id"])
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # kB -> GB
    print(
        json.dumps(
            {
                "wall_s": wall,
                "parse_s": t_parse,
                "peak_rss_gb": peak,
                "annotations": len(inst.annotations),
                "selected": len(sel),
                "train_rows": len(split.frame),
            }
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--images", type=int, default=118_287)
    ap.add_argument("--annotations", type=int, default=860_001)
    ap.add_argument("--run", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run:
        run_once(args.run)
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        generate(folder, args.images, args.annotations)
        size = (folder / "instances_train2017.json").stat().st_size
        print(f"generated {size / 1e6:.0f} MB instances JSON in {time.perf_counter() - t0:.0f} s", flush=True)
        results = []
        for _ in range(args.repeats):
            out = subprocess.run([sys.executable, __file__, "--run", str(folder)], capture_output=True, text=True)
            if out.returncode:
                sys.exit(out.stderr)
            results.append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(results[-1], flush=True)
    wall = statistics.median(r["wall_s"] for r in results)
    rss = statistics.median(r["peak_rss_gb"] for r in results)
    print(f"median over {len(results)}: wall {wall:.1f} s (target < 60), peak RSS {rss:.2f} GB (target < 6)")


if __name__ == "__main__":
    main()
