"""The static HTML report built from tests/report_data.py's small tables (no workflow run), through the
html_report and make_tables scripts as the workflow calls them; shared by test_html_report and test_browser."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import report_data as rd  # noqa: E402

from biastransfer.report.findings import describe_findings  # noqa: E402
from biastransfer.scripting import run  # noqa: E402

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
    "analysis": {"ieat": {"alpha": 0.05}, "bts": {"reference": "none"}},
}
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


def build(folder: Path) -> Path:
    """Write the summaries, tables, a figure and the report under ``folder``; the report's index.html."""
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
            "--ieat",
            paths["ieat"],
            "--bts",
            paths["bts"],
            "--findings",
            str(findings),
            "--provenance",
            str(provenance),
            "--analysis_sets",
            paths["analysis_sets"],
            "--settings",
            json.dumps({**SIGNIFICANCE, "config": CONFIG}),
            "--shown",
            *map(json.dumps, items),
            "--index",
            str(site / "index.html"),
            "--files",
            str(site / "files"),
            "--pages",
            *[str(site / f"{p}.html") for p in ("findings", "tables", "figures", "provenance")],
            "--verdicts",
            str(folder / "results.json"),
            "--bundle",
            str(folder / "report.zip"),
            "--citation",
            str(SCRIPTS.parents[1] / "CITATION.cff"),
        ],
    )
    return site / "index.html"
