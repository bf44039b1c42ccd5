"""Pre-flight check: every file a configured run will read from the network, a mirror or a data root.

For each real dataset (COCO, Open Images): its annotation files (with their checksums), the authors'
analysis-set lists (sha256 pinned in the config), and, once the annotation files and lists can be read
(in the data root or a folder mirror), every image of the finetuning and evaluation splits and analysis sets; for each
model: its weights file (checksum from the registry or the config). A file is looked for where the run
keeps it (the dataset root, ``results/data/paper_lists``, the weights ``cache_dir``), then in a folder
mirror (``<mirror>/<host>/<path>``, see :mod:`biastransfer.data.download`). Nothing is downloaded: a
file found nowhere is ``missing`` when a folder mirror is configured, else ``remote`` (the run will fetch
it); images are ``not listed yet`` while the annotation files or lists they are read from are remote. Checksums are verified wherever one is known; images have none (presence only).
"""

from __future__ import annotations

import tempfile
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from biastransfer.data import coco, openimages
from biastransfer.data.download import apply_mirror, is_remote
from biastransfer.data.kinds import kind_of, pinned
from biastransfer.hashing import file_digest
from biastransfer.workflow.config import evaluated

OK, MISSING, MISMATCH, REMOTE, UNLISTED = "ok", "missing", "checksum mismatch", "remote", "not listed yet"
COLUMNS = ("group", "file", "url", "found_at", "status", "detail")


@dataclass(frozen=True)
class Need:
    """One file the run needs: where the run keeps it, where it comes from, its checksum if known."""

    group: str
    dest: Path
    url: str | None
    sha256: str | None = None
    md5: str | None = None


def _digest_ok(path: Path, need: Need) -> tuple[bool, str]:
    for name, want in (("sha256", need.sha256), ("md5", need.md5)):
        if want:
            got = file_digest(path, name)
            if not got.startswith(want.lower()):
                return False, f"{name} {got} != expected {want}"
    return True, "verified" if (need.sha256 or need.md5) else "present (no checksum known)"


def check(need: Need, mirror: str | None) -> dict:
    """Where ``need`` is found (the run's own place, else a folder mirror) and whether it verifies."""
    places = [need.dest]
    folder_mirror = mirror is not None and not is_remote(str(mirror))
    if need.url and folder_mirror and is_remote(need.url):
        places.append(Path(apply_mirror(need.url, mirror)))
    elif need.url and not is_remote(need.url):
        places.append(Path(need.url.removeprefix("file://")))
    for place in places:
        if place.is_file():
            good, detail = _digest_ok(place, need)
            return _row(need, place, OK if good else MISMATCH, detail)
    if need.url and is_remote(need.url) and not folder_mirror:
        source = apply_mirror(need.url, mirror) if mirror else need.url
        return _row(need, None, REMOTE, f"will be downloaded from {source}")
    return _row(need, None, MISSING, "not at " + " nor ".join(dict.fromkeys(map(str, places))))


def _row(need: Need, place: Path | None, status: str, detail: str) -> dict:
    return {
        "group": need.group,
        "file": str(need.dest),
        "url": need.url or "",
        "found_at": str(place or ""),
        "status": status,
        "detail": detail,
    }


def _readable(need: Need, mirror: str | None) -> Path | None:
    """A verified local copy of ``need`` (run location or folder mirror), or None."""
    row = check(need, mirror)
    return Path(row["found_at"]) if row["status"] == OK else None


def dataset_needs(name: str, dataset: Mapping) -> list[Need]:
    """The annotation files of a real dataset (the image zips too, for COCO ``images: all``)."""
    root = Path(dataset["root"])
    if dataset["kind"] == "coco":
        files = {"annotations_trainval2017.zip": coco.FILES["annotations_trainval2017.zip"]}
        if dataset["images"] == "all":
            files.update({n: coco.FILES[n] for n in ("val2017.zip", "train2017.zip")})
        dests = {n: root / n for n in files}
        digests = pinned(dataset, coco.FILES)
    else:
        files, dests = openimages.FILES, {n: root / "annotations" / n for n in openimages.FILES}
        digests = pinned(dataset, openimages.FILES)
    return [Need(f"{name}: annotations", dests[n], url, **digests[n]) for n, (url, _) in files.items()]


def list_needs(set_name: str, analysis_set: Mapping) -> list[Need]:
    paper = analysis_set["paper"]
    base = paper["base_url"].rstrip("/")
    out = Path("results/data/paper_lists") / set_name
    return [
        Need(f"{set_name}: paper lists", out / f"{c}.txt", f"{base}/{c}.txt", sha) for c, sha in paper["files"].items()
    ]


def _annotations_view(name: str, dataset: Mapping, found: Mapping[Path, Path], scratch: Path) -> dict | None:
    """A dataset entry whose root holds readable annotation files (linked, or unpacked from a mirror's zip,
    under ``scratch`` if needed), or None when they are not available locally."""
    root = Path(dataset["root"])
    if dataset["kind"] == "openimages":
        if not all(d in found for d in (root / "annotations" / n for n in openimages.FILES)):
            return None
        tmp = scratch / name
        (tmp / "annotations").mkdir(parents=True)
        for n in openimages.FILES:
            (tmp / "annotations" / n).symlink_to(Path(found[root / "annotations" / n]).resolve())
        return {**dataset, "root": str(tmp)}
    wanted = [root / "annotations" / f"{k}_{s}.json" for k in ("instances",) for s in coco.SPLITS]
    if all(p.is_file() for p in wanted):
        return dict(dataset)
    archive = found.get(root / "annotations_trainval2017.zip")
    if archive is None:
        return None
    tmp = scratch / name
    with zipfile.ZipFile(archive) as zf:
        for member in (f"annotations/instances_{s}.json" for s in coco.SPLITS):
            zf.extract(member, tmp)
    return {**dataset, "root": str(tmp)}


def image_needs(
    name: str, dataset: Mapping, view: Mapping, selections: Iterable[pd.DataFrame], *, evaluation: bool = False
) -> list[Need]:
    """Every image of the dataset's finetuning splits (and its evaluation split, with ``evaluation``) and of
    the given analysis selections."""
    kind = kind_of(dataset)
    root, vroot = Path(dataset["root"]), Path(view["root"])
    selections = list(selections)
    exclude = set().union(*(set(s["image_id"].astype(str)) for s in selections)) if selections else set()
    needs = {}
    splits = list(kind.make_splits(view, name, exclude))
    if evaluation:
        splits.append(kind.test_split(view, name, exclude))
    for split in splits:
        for path in split.frame["path"]:
            rel = Path(path).relative_to(vroot).as_posix()
            needs[rel] = Need(f"{name}: images", root / rel, f"{kind.image_base_url}/{rel}")
    for sel in selections:
        for path, url in zip(sel["path"], sel["source"]):
            rel = Path(path).relative_to(vroot).as_posix()
            needs[rel] = Need(f"{name}: images", root / rel, url)
    return list(needs.values())


def weights_needs(config: Mapping) -> list[Need]:
    from biastransfer.models.resolve import model_spec
    from biastransfer.models.weights import weights_cache_path

    cache = config["weights"]["cache_dir"]
    out = []
    for name, entry in config["models"].items():
        if entry.get("source") == "workflow":
            continue  # trained by the workflow itself
        spec = model_spec(name, entry)
        if not spec.weights:
            out.append(Need(f"{name}: weights", Path(f"<no weights configured for {name}>"), None))
        elif is_remote(spec.weights):
            out.append(Need(f"{name}: weights", weights_cache_path(spec, cache), spec.weights, spec.sha256, spec.md5))
        else:
            local = Path(spec.weights.removeprefix("file://")).expanduser()
            out.append(Need(f"{name}: weights", local, None, spec.sha256, spec.md5))
    return out


def preflight(config: Mapping) -> pd.DataFrame:
    """One row per needed file (``COLUMNS``); see the module docstring."""
    with tempfile.TemporaryDirectory(prefix="preflight-") as scratch:
        return _preflight(config, Path(scratch))


def _preflight(config: Mapping, scratch: Path) -> pd.DataFrame:
    rows = []
    for name, dataset in config["datasets"].items():
        if dataset["kind"] not in ("coco", "openimages"):
            continue
        mirror = dataset["mirror"]
        needs = dataset_needs(name, dataset)
        checked = [check(n, mirror) for n in needs]
        rows += checked
        found = {n.dest: Path(r["found_at"]) for n, r in zip(needs, checked) if r["status"] == OK}
        selections, unlisted = [], []
        for set_name, aset in config["analysis_sets"].items():
            # no default: a folder or table set may name no dataset
            if aset.get("dataset") != name or aset["source"] != "paper":
                continue
            lneeds = list_needs(set_name, aset)
            rows += [check(n, mirror) for n in lneeds]
            lists = {n.dest.stem: _readable(n, mirror) for n in lneeds}
            if all(lists.values()):
                selections.append(lists)
            else:
                unlisted.append(set_name)
        if dataset["images"] == "all":
            continue  # the image zips above hold every image
        view = _annotations_view(name, dataset, found, scratch)
        if view is None or unlisted:
            why = "annotation files" if view is None else f"lists of {', '.join(unlisted)}"
            rows.append(
                {
                    "group": f"{name}: images",
                    "file": str(dataset["root"]),
                    "url": "",
                    "found_at": "",
                    "status": UNLISTED,
                    "detail": f"the images can be listed once the {why} are available",
                }
            )
            continue
        sels = [kind_of(view).paper_selection(view, lists) for lists in selections]
        evaluation = name in config["finetune"]["datasets"] and evaluated(dataset)
        rows += [check(n, mirror) for n in image_needs(name, dataset, view, sels, evaluation=evaluation)]
    mirror = config["weights"]["mirror"]
    rows += [check(n, mirror) for n in weights_needs(config)]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def summary(table: pd.DataFrame, show: int = 5) -> str:
    """Counts per group and status, then the first ``show`` problems of each group."""
    lines = []
    for group, rows in table.groupby("group", sort=False):
        counts = ", ".join(f"{n} {s}" for s, n in rows["status"].value_counts().items())
        lines.append(f"{group}: {len(rows)} file(s): {counts}")
        for _, r in rows[rows["status"].isin([MISSING, MISMATCH])].head(show).iterrows():
            lines.append(f"    {r['status']}: {r['file']} ({r['detail']})")
    bad = table["status"].isin([MISSING, MISMATCH]).sum()
    lines.append(f"{len(table)} file(s) needed; {bad} missing or failing their checksum")
    return "\n".join(lines)
