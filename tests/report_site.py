"""The static HTML report built from tests/report_data.py's small tables (no workflow run), through the
html_report and make_tables scripts as the workflow calls them, and the link, prediction-level, layer and
trajectory tables at the demo's sizes (:func:`demo_sized_tables`); shared by test_html_report and test_browser."""

from __future__ import annotations

import html
import importlib.util
import json
import re
import sys
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import report_data as rd  # noqa: E402

from biastransfer.report.findings import describe_findings  # noqa: E402
from biastransfer.scripting import run  # noqa: E402
from biastransfer.workflow.plan import Plan  # noqa: E402
from biastransfer.workflow.rules.report import run_facts  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "workflow" / "scripts"
CAPTIONS = ROOT / "workflow" / "report"

#: The report data's iEAT tests, two of them with a known answer.
ROLES = {("coco", "car-random"): "planted", ("openimages", "car-fashion"): "control"}
CONFIG = {
    "models": {m: {"source": "timm", "arch": m} for m in rd.MODELS},
    "analysis_sets": {
        a: {
            "source": "paper",
            "ieat": [
                {
                    "name": f"{x}-{y}",
                    "X": "man",
                    "Y": "woman",
                    "A": x,
                    "B": y,
                    "role": ROLES.get((a, f"{x}-{y}"), "exploratory"),  # the schema's default
                }
                for x, y in tests
            ],
        }
        for a, tests in rd.IEAT_TESTS.items()
    },
    "finetune": {
        "datasets": list(rd.FINETUNE),
        "seeds": [0, 1, 2],
        "defaults": {"epochs": 25, "lr": 0.001, "optimizer": "sgd"},
    },
    "report": {"p_adjust": "holm", "control_class": "random"},
    "datasets": {},  # real data: nothing planted
    "analysis": {
        "ieat": {
            "alpha": 0.05,
            "alternative": "greater",
            "permutations": 100_000,
            "bootstrap": 2000,
            "ci_level": 0.95,
            "seed": 0,
        },
        "bts": {"reference": "none", "pvalue": "permutation", "bootstrap": 2000, "ci_level": 0.95, "seed": 0},
    },
}
TESTS = {a: s["ieat"] for a, s in CONFIG["analysis_sets"].items()}
#: What the results model records of the run, as the html_report rule's settings give it.
FACTS = run_facts(Plan(CONFIG, ROOT))
#: The significance rule the tables and the report mark with (analysis.ieat.alpha, report.p_adjust).
SIGNIFICANCE = {"alpha": 0.05, "adjust": "holm"}
#: A digest longer than any screen, to check that the provenance page wraps it.
LONG_HASH = "0123456789abcdef" * 16


def script(name: str):
    spec = importlib.util.spec_from_file_location(f"script_{name}", SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _figure(folder: Path) -> dict[str, str]:
    fig, ax = plt.subplots(figsize=(3.5, 2.5))
    ax.bar(["man", "woman"], [0.4, 0.5])
    ax.set_ylabel("similarity")
    files = {ext: str(folder / f"intra.{ext}") for ext in ("png", "pdf", "svg")}
    for path in files.values():
        fig.savefig(path)
    plt.close(fig)
    return files


#: The demo's sizes (make demo): 13 classes of the analysis set, two linked iEAT tests, 3 seeds (and their
#: pooled rows), epochs 0-5; tables built at these sizes are as wide and as long as the demo's.
DEMO_CLASSES = tuple(f"class_{c}" for c in "abcdefghijklm")
DEMO_TESTS = ("surfboard_vs_car", "refrigerator_vs_stop_sign")
DEMO_SEEDS = ("0", "1", "2")
DEMO_EPOCHS = range(6)
DEMO_DATASET = "openimages"
PREDICTION_MEASURES = {
    "directional": ("0.5", "base_rate"),
    "zhao": ("0.5", "base_rate"),
    "leakage_model": ("0.5",),
    "leakage_dataset_matched": ("0.5",),
    "leakage_amplification": ("0.5",),
    "leakage_embedding": ("",),
    "leakage_dataset": ("",),
}


def _interval(rng, centre: float, half: float = 0.3) -> tuple[float, float, float]:
    return centre, centre - half * rng.uniform(0.5, 1), centre + half * rng.uniform(0.5, 1)


def demo_sized_summaries(rng) -> dict[str, pd.DataFrame]:
    """The link, prediction-level, layer-profile and trajectory summaries (results/summary/<name>.csv) at the
    demo's sizes, with made-up numbers."""
    from biastransfer.report.amplification_report import AMPLIFICATION_REQUIRED
    from biastransfer.report.layer_report import PROFILE_REQUIRED
    from biastransfer.report.link_report import LINK_REQUIRED
    from biastransfer.report.trajectory import TRAJECTORY_REQUIRED
    from biastransfer.stats.link import family_adjusted

    networks = [("finetuned", s) for s in (*DEMO_SEEDS, "pooled")] + [("scratch", "0")]
    link = []
    for test in DEMO_TESTS:
        first, second = test.split("_vs_")
        for network, seed in networks:
            row = {"analysis_set": "openimages", "test": test, "role": "planted", "dataset": DEMO_DATASET}
            row |= {"network": network, "model": "resnet18", "seed": seed, "attribute": "man"}
            row |= {"first": first, "second": second, "threshold": 0.5, "level": 0.95, "n_images": 250}
            for stem, low, high in (
                ("d_pretrained", "d_pretrained_low", "d_pretrained_high"),
                ("d", "d_low", "d_high"),
                ("delta_d", "delta_low", "delta_high"),
                *((f"{m}_{o}", f"{m}_{o}_low", f"{m}_{o}_high") for m in ("shift",) for o in ("first", "second")),
                ("contrast", "contrast_low", "contrast_high"),
            ):
                row |= dict(zip((stem, low, high), _interval(rng, rng.normal(0.5, 0.5))))
            row |= {"contrast_pvalue": rng.uniform(2 / 1001, 1), "contrast_pvalue_floor": 2 / 1001}
            link.append(row)
    amplification = []
    for network, seed in [("dataset", ""), ("pretrained", ""), *networks]:
        for measure, thresholds in PREDICTION_MEASURES.items():
            if (network == "dataset") != (measure == "leakage_dataset"):
                continue
            if network == "pretrained" and measure != "leakage_embedding":  # no head: its embedding's leakage only
                continue
            for threshold in thresholds:
                estimate, low, high = _interval(rng, rng.normal(0, 0.1), 0.05)
                amplification.append(
                    {"network": network, "model": "" if network == "dataset" else "resnet18", "dataset": DEMO_DATASET}
                    | {"seed": seed, "measure": measure, "threshold": threshold, "estimate": estimate}
                    | {"ci_low": low, "ci_high": high, "level": 0.95, "replicates": 1000, "n_images": 250}
                    | {"n_excluded": 50, "images_per_attribute": "man=121; woman=129"}
                )
    profile = []
    stages = [("pretrained", "", "")] + [(f"ft-{DEMO_DATASET}-seed{s}", DEMO_DATASET, s) for s in DEMO_SEEDS]
    for depth, layer in enumerate(("layer1", "layer2", "layer3", "layer4"), start=1):
        for measure, items in (("ieat", DEMO_TESTS), ("bts", ("intra", "inter"))):
            for stage, dataset, seed in stages + (
                [(f"ft-{DEMO_DATASET}", DEMO_DATASET, "pooled")] if measure == "bts" else []
            ):
                if measure == "bts" and stage == "pretrained":
                    continue
                for item in items:
                    estimate, low, high = _interval(rng, rng.normal(0.4, 0.4))
                    profile.append(
                        {"analysis_set": "openimages", "model": "resnet18", "layer": layer, "depth": depth}
                        | {"measure": measure, "stage": stage, "finetune_dataset": dataset, "seed": seed}
                        | {"item": item, "estimate": estimate, "ci_low": low, "ci_high": high}
                    )
    trajectory = []
    pairs = [f"{p}|{q}" for i, p in enumerate(DEMO_CLASSES) for q in DEMO_CLASSES[i + 1 :]]
    series = [("similarity", "intra", k, DEMO_SEEDS, DEMO_EPOCHS) for k in DEMO_CLASSES]
    series += [("similarity", "inter", k, DEMO_SEEDS, DEMO_EPOCHS) for k in pairs]
    series += [("bts", k, k, (*DEMO_SEEDS, "pooled"), DEMO_EPOCHS[1:]) for k in ("inter", "intra")]
    series += [("ieat", "", t, DEMO_SEEDS, DEMO_EPOCHS) for t in DEMO_TESTS]
    series += [("curve", "", k, DEMO_SEEDS, DEMO_EPOCHS[1:]) for k in ("train_loss", "val_loss", "val_mAP")]
    for measure, kind, key, seeds, epochs in series:
        for seed in seeds:
            for epoch in epochs:
                value, low, high = _interval(rng, rng.uniform(0, 1), 0.1)
                interval = measure in ("bts", "ieat")
                trajectory.append(
                    {"analysis_set": "openimages", "model": "resnet18", "finetune_dataset": DEMO_DATASET}
                    | {"measure": measure, "seed": seed, "epoch": epoch, "kind": kind, "key": key, "value": value}
                    | {"ci_low": low if interval else np.nan, "ci_high": high if interval else np.nan}
                    | {"final": seed != "pooled" and epoch == epochs[-2]}
                )
    correlation = [
        {"analysis_set": "openimages", "test": test, "role": "planted", "dataset": DEMO_DATASET, "embedding": "d"}
        | {"prediction": "contrast", "networks": "every network's own iEAT d", "n": 4, "estimate": 0.4}
        | {"ci_low": -0.9, "ci_high": 1.0, "level": 0.95, "min_n": 6, "method": "Spearman; Fisher z"}
        | {"verdict": "too few networks to tell (4 networks; a 95% interval could exclude 0 from 6 on)"}
        for test in DEMO_TESTS
    ]
    terms = [
        {"network": network, "model": "resnet18", "dataset": DEMO_DATASET, "seed": seed, "measure": "directional"}
        | {"threshold": 0.5, "attribute": attribute, "task": task, "n_attribute": 120, "selected": 1}
        | dict(zip(("term", "ci_low", "ci_high"), _interval(rng, rng.normal(0, 0.05), 0.03)))
        | dict(zip(("shift", "shift_low", "shift_high"), _interval(rng, rng.normal(0, 0.05), 0.03)))
        | {"level": 0.95, "excluded": ""}
        for network, seed in networks
        for attribute in ("man", "woman")
        for task in DEMO_CLASSES
    ]
    return {
        "link": family_adjusted(pd.DataFrame(link, columns=list(LINK_REQUIRED))),
        "amplification_terms": pd.DataFrame(terms),
        "link_correlation": pd.DataFrame(correlation),
        "amplification": pd.DataFrame(amplification, columns=list(AMPLIFICATION_REQUIRED)),
        "layer_profile": pd.DataFrame(profile, columns=list(PROFILE_REQUIRED)),
        "trajectory": pd.DataFrame(trajectory, columns=list(TRAJECTORY_REQUIRED)),
    }


def demo_sized_tables(summaries: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The link, prediction-level, layer and trajectory tables of :func:`demo_sized_summaries` (the rows
    make_tables writes, through the report modules' own frame functions)."""
    from biastransfer.report.amplification_report import amplification_frame
    from biastransfer.report.layer_report import layer_frame
    from biastransfer.report.link_report import link_frame
    from biastransfer.report.trajectory import trajectory_frame

    return {
        "link": link_frame(summaries["link"], DEMO_DATASET, **SIGNIFICANCE),
        "amplification": amplification_frame(summaries["amplification"], DEMO_DATASET),
        "layers": layer_frame(summaries["layer_profile"], "openimages"),
        "trajectory": trajectory_frame(summaries["trajectory"]),
    }


def build(folder: Path) -> Path:
    """Write the summaries, tables, a figure and the report under ``folder/results`` (laid out as a run's, so
    that the paths the captions cite are the copies' paths in the report); the report's index.html."""
    folder = Path(folder) / "results"
    summary = folder / "summary"
    summary.mkdir(parents=True)
    paths = rd.write_all(summary)
    tests = {a: s["ieat"] for a, s in CONFIG["analysis_sets"].items()}
    findings = summary / "findings.rst"
    findings.write_text(
        describe_findings(
            pd.read_csv(paths["ieat"], keep_default_na=False, na_values=[""]),
            pd.read_csv(paths["bts"], keep_default_na=False, na_values=[""]),
            tests,
            0.05,
        )
    )
    provenance = summary / "provenance.csv"
    pd.DataFrame(
        [
            {
                "file": f"results/embeddings/coco/{m}/pretrained.parquet",
                "analysis_set": "coco",
                "model": m,
                "stage": "pretrained",
                "weights_sha256": LONG_HASH,
                "layer": "penultimate",
                "preprocessing": '{"resize": 224}',
                "versions": "torch 2.5, timm 1.0",
                "dim": 512,
            }
            for m in rd.MODELS
        ]
    ).to_csv(provenance, index=False)
    tables, make_tables = folder / "tables", script("make_tables")
    tables.mkdir()
    items = []
    for kind, source, caption, wildcards in (
        ("ieat", "ieat", "table_ieat.rst", {"analysis_set": "openimages"}),
        ("bts", "bts", "table_bts.rst", {"analysis_set": "coco", "dataset": "coco"}),
    ):
        stem = tables / "_".join([kind, *wildcards.values()])
        files = {"csv": f"{stem}.csv", "fragment": f"{stem}_tabular.tex", "document": f"{stem}.tex"}
        run(
            make_tables.main,
            None,
            [
                "--settings",
                json.dumps({"kind": kind, "significance": SIGNIFICANCE}),
                "--summary",
                paths[source],
                "--document",
                files["document"],
                "--fragment",
                files["fragment"],
                "--csv",
                files["csv"],
                *[f"--{'dataset' if k == 'dataset' else k}={v}" for k, v in wildcards.items()],
                *(["--scratch", paths["ieat_scratch"]] if kind == "ieat" else []),
            ],
        )
        items.append(
            {
                "kind": "table",
                "group": "iEAT" if kind == "ieat" else "Bias transfer scores",
                "title": stem.name,
                "caption": str(CAPTIONS / caption),
                "files": files,
                "wildcards": wildcards,
            }
        )
    summaries = demo_sized_summaries(np.random.default_rng(3))
    for name, frame in summaries.items():
        paths[name] = str(summary / f"{name}.csv")
        frame.to_csv(paths[name], index=False)
    demo_sized = demo_sized_tables(summaries)
    for kind, group, title, wildcards in (
        ("link", "Prediction-level bias", "Embedding d beside the predictions' bias", {"dataset": DEMO_DATASET}),
        ("amplification", "Prediction-level bias", "Bias amplification and leakage", {"dataset": DEMO_DATASET}),
        ("layers", "Layer profiles", "iEAT and BTS by layer", {"analysis_set": "openimages"}),
        (
            "trajectory",
            "Trajectories",
            "resnet18 over finetuning",
            {"analysis_set": "openimages", "model": "resnet18", "dataset": DEMO_DATASET},
        ),
    ):
        csv = tables / f"{kind}.csv"
        demo_sized[kind].to_csv(csv, index=False)
        caption = str(CAPTIONS / f"table_{kind}.rst")
        items.append(
            {"kind": "table", "group": group, "title": title, "caption": caption, "files": {"csv": str(csv)}}
            | {"wildcards": wildcards}
        )
    empty = tables / "paper_comparison.csv"  # a table without rows in this run: named, not shown
    empty.write_text("table,model,ours,paper\n")
    items.append(
        {
            "kind": "table",
            "group": "Comparison with the paper",
            "title": "Ours vs published",
            "caption": str(CAPTIONS / "comparison.rst"),
            "files": {"csv": str(empty)},
            "wildcards": {},
        }
    )
    items.append(
        {
            "kind": "figure",
            "group": "Analysis set coco, resnet18",
            "title": "Intra-class similarity",
            "caption": str(CAPTIONS / "intra.rst"),
            "files": _figure(folder),
            "wildcards": {"analysis_set": "coco", "model": "resnet18"},
        }
    )
    config_page = summary / "config.html"  # the effective_config rule's page, as a page item of the report
    config_page.write_text("<html><body><pre>models: {}</pre></body></html>\n")
    items.append(
        {
            "kind": "page",
            "group": "Configuration",
            "title": "Configuration",
            "caption": str(CAPTIONS / "config.rst"),
            "files": {"html": str(config_page)},
            "wildcards": {},
        }
    )
    site = folder / "report"
    run(
        script("html_report").main,
        None,
        [
            "--summaries",
            *paths.values(),
            str(provenance),
            "--findings",
            str(findings),
            "--settings",
            json.dumps({**SIGNIFICANCE, "config": CONFIG, "tests": TESTS, "facts": FACTS}),
            "--shown",
            *map(json.dumps, items),
            "--index",
            str(site / "index.html"),
            "--files",
            str(site / "files"),
            "--pages",
            *[str(site / f"{p}.html") for p in ("findings", "tables", "figures", "provenance", "glossary")],
            "--verdicts",
            str(folder / "results.json"),
            "--bundle",
            str(folder / "report.zip"),
            "--citation",
            str(SCRIPTS.parents[1] / "CITATION.cff"),
            "--cited",
            *paths.values(),
        ],
    )
    return site / "index.html"


NUMBER = r"-?\d+(?:\.\d+)?(?:e-?\d+)?"
#: An estimate of d with its interval as the pages print it: ``d = 1.27 [0.58, 1.65]``, ``d 1.27 [...]``,
#: ``d = 1.27, 95% CI [...]``
#: (not a change, ``delta d = ...``).
D_WITH_INTERVAL = re.compile(rf"(?<!delta )\bd (?:= )?({NUMBER}),? (?:\d+% CI )?\[({NUMBER}), ({NUMBER})\]")


def page_text(page: Path) -> str:
    """A page's text, tags dropped (an inline one, such as a glossary link, without a space), whitespace
    collapsed."""
    return html_text(page.read_text())


def html_text(markup: str) -> str:
    """:func:`page_text` of a piece of HTML."""
    text = re.sub(r"</?(?:a|code|em|span|strong)\b[^>]*>", "", markup)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())


def landing_sentences(index: Path) -> str:
    """The text of the landing page's "In short" section after its forest plot."""
    section = index.read_text().split('id="in-short"', 1)[1].split("</section>", 1)[0]
    return html_text(section.split("</figure>")[-1])


def agrees(printed: str, value: float | None) -> bool:
    """Whether a number printed with its digits is ``value`` rounded to them."""
    if value is None:
        return False
    decimals = len(printed.split(".")[1].split("e")[0]) if "." in printed else 0
    return abs(float(printed) - value) <= 0.5 * 10.0**-decimals + 1e-12


def numbers_of(model) -> list[float]:
    """Every number anywhere in a results model."""
    if isinstance(model, dict):
        return [x for v in model.values() for x in numbers_of(v)]
    if isinstance(model, list):
        return [x for v in model for x in numbers_of(v)]
    return [float(model)] if isinstance(model, (int, float)) and not isinstance(model, bool) else []


def unbacked_decimals(text: str, model: dict) -> list[str]:
    """The decimal numbers of ``text`` that no number of the results model gives at their printed rounding."""
    values = numbers_of(model)
    printed = re.findall(r"(?<![\w.])-?\d+\.\d+(?![\w.])", text)
    return [p for p in printed if not any(agrees(p, v) for v in values)]


def second_intervals(texts: dict[str, str], model: dict) -> list[tuple[str, str]]:
    """(page, printed) for each ``d = x [a, b]`` of the pages whose d is that of an iEAT of the results model but
    whose interval is that of none of the iEATs with that d: one network given two intervals."""
    found = []
    for page, text in texts.items():
        for match in D_WITH_INTERVAL.finditer(text):
            d, low, high = match.groups()
            same_d = [r for r in model["ieat"] if agrees(d, r["d"])]
            if same_d and not any(agrees(low, r["ci_low"]) and agrees(high, r["ci_high"]) for r in same_d):
                found.append((page, match.group(0)))
    return found
