"""The paper's own config (config/paper.yaml) end to end, offline, from a toy mirror served over loopback HTTP.

workflow/scripts/build_toy_mirror.py writes COCO 2017 and Open Images V4 files in their real formats, the
authors' list files as stand-ins and random weights for the six models in their published formats; its
overlay changes only scale and location. Every rule of the paper DAG runs once (`make paper-toy` runs the
same with a folder mirror). Here the overlay also finetunes on one seed per dataset (``TEST_SEEDS``): the
toy's second COCO seed only repeated the finetune, embed, similarity and iEAT jobs of every model (42 of its
308 jobs, the costliest kinds), which the tiny runs with two seeds (tests/test_reruns.py, the demo) run
through the same rules; the seeds differ by dataset, so each dataset's stages still follow its own list.
"""

import json
import re
import subprocess
import sys

import pandas as pd
import pytest
import report_site
import yaml
from conftest import ROOT, scratch
from conftest import run_snakemake as snakemake
from loopback import FileServer

pytestmark = pytest.mark.slow

PAPER = ROOT / "config" / "paper.yaml"
MODELS = ("resnet18", "resnet50", "bit_m_r50x1", "clip_vit_b32", "moco_r50_v1", "simclr_r50_v1")


def build_mirror(root):
    """(mirror folder, folder overlay) written by the repository's mirror builder."""
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "workflow" / "scripts" / "build_toy_mirror.py"),
            "--config",
            str(PAPER),
            "--mirror",
            str(root / "mirror"),
            "--overlay",
            str(root / "overlay.yaml"),
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return root / "mirror", root / "overlay.yaml"


# One finetuning seed per dataset, a different one on each (see the module docstring); `make paper-toy` keeps two on COCO.
# The overlay switches paper.yaml's intervention and its DFR arm on: they share COCO's seed, so that each is
# compared with it (DFR refits the last layer of COCO's network of the same seed).
TEST_SEEDS = {"coco": [1], "openimages": [0], "coco_independent": [1], "coco_dfr": [1]}


def served(overlay, url, out):
    """The overlay with every mirror pointing at ``url`` and the finetuning seeds cut to ``TEST_SEEDS``."""
    data = yaml.safe_load(overlay.read_text())
    for entry in data["datasets"].values():
        if "mirror" in entry:  # not an intervention's switch
            entry["mirror"] = url
    data["weights"]["mirror"] = url
    assert set(data["finetune"]["seeds"]) == set(TEST_SEEDS), data["finetune"]["seeds"]
    data["finetune"]["seeds"] = TEST_SEEDS
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return out


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """(workdir, overlay, server) after a complete run of the paper's DAG over loopback HTTP."""
    with scratch(tmp_path_factory, "paper_toy") as root:
        mirror, overlay = build_mirror(root)
        with FileServer(root=mirror) as server:
            http = served(overlay, server.url, root / "http.yaml")
            workdir = root / "run"
            workdir.mkdir()
            snakemake("--cores", "2", "--configfile", PAPER, http, cwd=workdir, timeout=3600)
            yield workdir, http, server


def test_every_target_of_rule_all_exists_and_a_second_call_has_nothing_to_do(toy):
    workdir, overlay, _ = toy
    summary = snakemake("--summary", "--configfile", PAPER, overlay, cwd=workdir).stdout
    rows = [line.split("\t") for line in summary.splitlines()[1:] if line.strip()]
    assert len(rows) > 200
    missing = [r[0] for r in rows if not (workdir / r[0]).exists()]
    assert not missing, missing[:10]
    again = snakemake("-n", "--configfile", PAPER, overlay, cwd=workdir).stdout
    assert "Nothing to be done" in again, again[-2000:]
    assert not list(workdir.rglob("*.partial")), "a temporary download was left behind"


def test_each_dataset_is_finetuned_on_its_own_seeds(toy):
    """Every model embeds both analysis sets at each dataset's own seeds (TEST_SEEDS), none other."""
    wanted = sorted(["pretrained", *(f"ft-{d}-seed{s}" for d, seeds in TEST_SEEDS.items() for s in seeds)])
    for model in MODELS:
        for analysis_set in ("coco", "openimages"):
            folder = toy[0] / "results" / "embeddings" / analysis_set / model
            assert sorted(p.stem for p in folder.glob("*.parquet")) == wanted, (analysis_set, model)


def test_the_comparison_holds_every_model_and_dataset(toy):
    table = pd.read_csv(toy[0] / "results" / "comparison" / "paper_comparison.csv")
    for model in MODELS:
        for dataset in ("coco", "openimages"):
            rows = table[(table["model"] == model) & (table["finetune_dataset"] == dataset)]
            assert len(rows) and (rows["analysis_set"] == dataset).any(), (model, dataset)
    assert table["flagged"].any(), "random weights do not reproduce the paper; the comparison must say so"


def test_provenance_names_every_weights_file_by_its_sha256(toy):
    workdir, overlay, _ = toy
    pinned = yaml.safe_load(overlay.read_text())["models"]
    provenance = (workdir / "results" / "summary" / "provenance.csv").read_text()
    for model in MODELS:
        assert pinned[model]["sha256"] in provenance, model
    sources = pd.read_csv(workdir / "results" / "summary" / "provenance.csv").groupby("model")["weights_source"]
    for model, source in sources:  # the URL (or local file) it was fetched from, with the sha256 checked
        assert source.nunique() == 1 and source.iloc[0].endswith(f"(sha256 {pinned[model]['sha256']})"), model


def test_every_rule_of_the_paper_dag_ran(toy):
    workdir, overlay, server = toy
    plan = snakemake("-n", "--forceall", "--configfile", PAPER, overlay, cwd=workdir).stdout
    planned = set(re.findall(r"^(?:local)?rule (\w+):", plan, re.M)) - {"all"}
    ran = {json.loads(p.read_text())["rule"] for p in (workdir / ".snakemake" / "metadata").iterdir()}
    assert planned <= ran, sorted(planned - ran)
    requested = {path for path, _ in server.requests}
    assert any(p.endswith("annotations_trainval2017.zip") for p in requested)
    assert any(p.endswith("BiT-M-R50x1.npz") for p in requested), "the weights came over HTTP"


def test_every_network_is_scored_on_its_datasets_evaluation_split_with_attributes_from_the_real_sources(toy):
    """COCO: val2017 less the analysis images, captions (two toy images without an agreeing caption pair,
    and the finetuning images' neutral captions, excluded); Open Images: its test split, MIAP boxes before
    the gender labels; the leakage check records both; amplification measures every finetuned network."""
    from biastransfer.data.attributes import read_attributes
    from biastransfer.hashing import file_digest
    from biastransfer.predictions import read_predictions

    workdir = toy[0]
    sources = {"coco": {"COCO captions"}, "openimages": {"MIAP boxes", "labels Man/Boy/Woman/Girl"}}
    sources["coco_independent"] = sources["coco"]  # COCO's evaluation split under the intervention's name
    sources["coco_dfr"] = sources["coco"]  # ... and under the mitigation arm's
    summary = pd.read_csv(workdir / "results" / "summary" / "amplification.csv")
    for dataset, seeds in TEST_SEEDS.items():
        split = workdir / "results" / "splits" / dataset / "test.parquet"
        attrs = read_attributes(workdir / "results" / "splits" / dataset / "test_attributes.parquet")
        assert attrs.split_sha256 == file_digest(split) and attrs.attributes == ("man", "woman")
        counts = attrs.counts()
        assert counts["man"] == counts["woman"] == 5 and counts[None] >= 2, (dataset, counts)
        given = attrs.frame.dropna(subset=["attribute"])["source"]
        assert {x.split(":")[0] for x in given} == sources[dataset], dataset
        for model in MODELS:
            for seed in seeds:
                meta = read_predictions(
                    workdir / "results" / "predictions" / model / f"ft-{dataset}-seed{seed}.parquet"
                )
                assert meta.metadata["split_sha256"] == file_digest(split) and meta.metadata["split"] == "test"
            rows = summary[(summary["dataset"] == dataset) & (summary["model"] == model)]
            assert {"directional", "zhao", "leakage_embedding"} <= set(rows["measure"]), (dataset, model)
        assert (summary.loc[summary["dataset"] == dataset, "n_excluded"] == counts[None]).all()
    for aset in ("coco", "openimages"):
        ok = (workdir / "results" / "checks" / "leakage" / f"{aset}.ok").read_text()
        assert "evaluation split results/splits/coco/test.parquet" in ok
        assert "evaluation split results/splits/openimages/test.parquet" in ok


def test_the_intervention_rebalances_cocos_training_split_and_is_compared(toy):
    """coco_independent: COCO's training split gets its caption attributes (the toy's 4 : 1 skews beside each
    object, 16 images without an agreeing caption), the subsample keeps one man and one woman beside each of
    refrigerator, surfboard and car (9 of 36 images dropped), and each model's intervened network is
    compared with its untouched COCO network on both analysis sets and on the evaluation split, in the
    intervention's summary and in the comparison between finetuning arms (its table, figure and landing line)."""
    from biastransfer.data.attributes import read_attributes
    from biastransfer.data.splits import read_split
    from biastransfer.hashing import file_digest

    workdir = toy[0]
    splits = workdir / "results" / "splits"
    attrs = read_attributes(splits / "coco" / "train_attributes.parquet")
    assert attrs.split == "train" and attrs.split_sha256 == file_digest(splits / "coco" / "train.parquet")
    assert attrs.counts() == {"man": 10, "woman": 10, None: 16}
    assert len(read_split(splits / "coco_independent" / "train.parquet").frame) == 36 - 9
    table = pd.read_csv(workdir / "results" / "interventions" / "coco_independent" / "cooccurrence.csv")
    images = table.set_index(["when", "object", "attribute"])["images"]
    assert images["before"].to_dict() == {
        ("refrigerator", "man"): 1,
        ("refrigerator", "woman"): 4,
        ("surfboard", "man"): 1,
        ("surfboard", "woman"): 4,
        ("car", "man"): 4,
        ("car", "woman"): 1,
    }
    assert (images["after"] == 1).all() and (table["target"] == 0.5).all()
    summary = pd.read_csv(workdir / "results" / "summary" / "intervention.csv")
    embedding = summary[summary["level"] == "embedding"]
    assert set(summary["intervention"]) == {"coco_independent"} and set(summary["from"]) == {"coco"}
    assert set(embedding["model"]) == set(MODELS) and set(embedding["analysis_set"]) == {"coco", "openimages"}
    assert set(summary.loc[summary["level"] == "prediction", "model"]) == set(MODELS)
    assert summary.loc[summary["level"] == "data", "verdict"].tolist() == ["27 of 36 training images kept (subsample)"]
    assert summary["verdict"].notna().all()
    # the same pair in the comparison between finetuning arms (beside the DFR arm switched on by the toy):
    # its summary, table, figure and landing line
    arms = pd.read_csv(workdir / "results" / "summary" / "comparison.csv")
    assert set(zip(arms["arm"], arms["against"])) == {("coco_independent", "coco"), ("coco_dfr", "coco")}
    assert {"embedding", "bts", "leakage", "accuracy"} <= set(arms["level"]) and set(arms["model"]) == set(MODELS)
    table = pd.read_csv(workdir / "results" / "tables" / "arm_comparison.csv")
    assert set(table["model"]) == set(MODELS) and table["verdict"].notna().all()
    assert (workdir / "results" / "tables" / "arm_comparison.tex").stat().st_size > 0
    assert (workdir / "results" / "figures" / "arm_comparison.pdf").stat().st_size > 0
    index = report_site.page_text(workdir / "results" / "report" / "index.html")
    assert "Each compared finetuning arm" in index
    assert all(f"{arm} against coco ({len(MODELS)} models, " in index for arm in ("coco_independent", "coco_dfr"))


def test_the_html_report_builds_without_caption_errors(toy):
    workdir, overlay, _ = toy
    snakemake("--cores", "1", "--configfile", PAPER, overlay, "--report", workdir / "report.html", cwd=workdir)
    html = (workdir / "report.html").read_text(errors="replace")
    assert "System Message" not in html and "clip_vit_b32" in html


def test_the_papers_claims_are_not_testable_with_its_six_models(toy):
    """Every claim of config/paper.yaml runs end to end and reads "not testable": one to two models per
    group, or six paired models at Holm's level, cannot reach alpha = 0.05 whatever the data."""
    workdir = toy[0]
    claims = pd.read_csv(workdir / "results" / "summary" / "claims.csv")
    config = yaml.safe_load(PAPER.read_text())["claims"]
    assert list(claims["claim"]) == [t["name"] for t in config["tests"]]
    assert claims["verdict"].str.startswith("not testable with").all(), claims[["claim", "verdict"]]
    values = pd.read_csv(workdir / "results" / "summary" / "claim_values.csv")
    assert set(values["model"]) == set(MODELS) and values["value"].notna().all()
    assert (workdir / "results" / "figures" / "claims.pdf").stat().st_size > 0
    index = report_site.page_text(workdir / "results" / "report" / "index.html")  # glossary links dropped
    assert f"Claims about groups of models, with models as units: of {len(claims)}, " in index
    assert "Claims about groups of models" in (workdir / "results" / "summary" / "findings.rst").read_text()


def test_the_dfr_arm_keeps_the_plain_networks_embeddings_and_records_its_method(toy):
    """coco_dfr refits the last layer of COCO's plain network of the same model and seed: every analysis
    image's embedding is the plain network's, bit for bit, and its metrics record the method."""
    from biastransfer.embeddings import read_embeddings

    workdir = toy[0]
    for model in MODELS:
        for aset in ("coco", "openimages"):
            folder = workdir / "results" / "embeddings" / aset / model
            plain, dfr = (read_embeddings(folder / f"ft-{d}-seed1.parquet") for d in ("coco", "coco_dfr"))
            assert (plain.image_ids == dfr.image_ids).all() and (plain.embeddings == dfr.embeddings).all()
        metrics = json.loads(
            (workdir / "results" / "finetune" / "coco_dfr" / model / "seed1" / "metrics.json").read_text()
        )
        assert (metrics["method"], metrics["selection"]) == ("dfr", "map")
