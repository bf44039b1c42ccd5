"""Build the static HTML report (--index and its sibling --pages: findings, tables, figures, provenance,
glossary; the files they show and the --cited tables copied under --files) from a finished run's
summaries, tables and figures, with every verdict as JSON (--verdicts) and the whole report as one zip
(--bundle). Open the index in a browser; it needs no server.

The landing page and results.json are written from one results model (biastransfer.report.results), built
from every summary table given (ieat, bts, provenance and analysis_sets are needed), the training curves
(--curves, --scratch: whether each run converged) and the settings.

Standalone (the rule html_report passes the same; each --shown value one item as a JSON object, keys
report.site.ITEM_KEYS):
python workflow/scripts/html_report.py --summaries results/summary/*.csv --findings results/summary/findings.rst
--settings "{\"alpha\": 0.05, \"adjust\": \"holm\", \"planted\": {}, \"config\": $(cat results/summary/config.json)}"
--shown '{"kind": "figure", "group": "iEAT", "title": "effect sizes", "caption": "workflow/report/ieat_heatmap.rst",
"files": {"png": "results/figures/ieat_heatmap.png", "pdf": "results/figures/ieat_heatmap.pdf"}}'
--index out/index.html --pages out/findings.html out/tables.html out/figures.html out/provenance.html out/glossary.html
--files out/files --verdicts out/results.json --bundle out/report.zip [--curves results/finetune/*/*/seed*/curve.csv]
[--scratch results/scratch/*/*/seed*/metrics.json] [--cited results/summary/*.csv ...: the tables the captions cite,
copied into the report, where the captions' paths link them]
"""

import json
import logging
from pathlib import Path

import pandas as pd
import yaml

from biastransfer.atomic import write_text
from biastransfer.provenance import run_record
from biastransfer.report.findings.networks import convergence, training_runs
from biastransfer.report.formatting import read_summary
from biastransfer.report.headline import finetuning_phrase
from biastransfer.report.html import PAGES
from biastransfer.report.results import dumps, results_model, validate
from biastransfer.report.site import write_site, zip_site
from biastransfer.scripting import run
from biastransfer.workflow.config import seeds_per_dataset
from biastransfer.workflow.rules.report import HtmlReportSettings

log = logging.getLogger(__name__)


def run_summary(config: dict, analysis_sets: pd.DataFrame, n_embeddings: int) -> dict[str, str]:
    """What was run, in a few lines, from the (filled) config and the analysis sets' class counts."""
    # no defaults: a model entry without source and arch takes the registry's
    models = ", ".join(
        f"{name} ({spec.get('source', '?')} {spec.get('arch', '')})".replace(" )", ")")
        for name, spec in config["models"].items()
    )
    sets = "; ".join(
        f"{name}: {len(part)} classes, {int(part['n'].sum())} images"
        for name, part in analysis_sets.groupby("analysis_set", sort=False)
    )
    defaults = config["finetune"]["defaults"]
    tests = "; ".join(f"{a}: {t['name']} ({t['role']})" for a, s in config["analysis_sets"].items() for t in s["ieat"])
    report, analysis = config["report"], config["analysis"]
    reference = analysis["bts"]["reference"]
    return {
        "Models": models,
        "Analysis sets": sets,
        "Finetuning": (
            f"{finetuning_phrase(seeds_per_dataset(config), name_seeds=True)} ({defaults['epochs']} epochs, lr {defaults['lr']}, "
            f"{defaults['optimizer']})"
        ),
        "BTS reference network": "trained from scratch on the target data"
        if reference == "scratch"
        else str(reference),
        "iEAT tests (role)": tests or "none",
        "Significance": (
            f"alpha = {analysis['ieat']['alpha']}, p-values adjusted by {report['p_adjust']} within each table"
        ),
        "Embeddings": f"{n_embeddings} files (analysis set x model x stage); see Provenance",
    }


def summary_paths(summaries: list | str) -> dict[str, str]:
    """``{summary name: path}`` of results/summary/<name>.csv files; ValueError naming a required one missing."""
    paths = {Path(p).stem: str(p) for p in ([summaries] if isinstance(summaries, str) else summaries)}
    missing = [n for n in ("ieat", "bts", "provenance", "analysis_sets") if n not in paths]
    if missing:
        raise ValueError(f"--summaries: no {', '.join(missing)} summary among {sorted(paths)}")
    return paths


def main(
    summaries: list,
    findings: str,
    settings: HtmlReportSettings,
    shown: list,
    index: str,
    pages: list,
    files: str,
    verdicts: str,
    bundle: str,
    citation: str = "",
    snakemake_report: str = "../report.html",
    curves: list | None = None,
    scratch: list | None = None,
    cited: list | str | None = None,
) -> None:
    config = settings.config
    site = Path(index).parent
    expected = sorted(str(site / name) for name, _ in PAGES[1:]) + [str(site / "files")]
    if sorted(map(str, map(Path, pages))) + [str(Path(files))] != expected:
        raise ValueError(
            f"the report's pages and files folder must be {expected} (beside {index}), not {[*pages, files]}"
        )
    items = [json.loads(item) if isinstance(item, str) else item for item in shown]
    paths = summary_paths(summaries)
    tables = {name: read_summary(path, ()) for name, path in paths.items() if name != "provenance"}
    runs = {label: convergence(curve) for label, curve in training_runs(curves or [], scratch or []).items()}
    model = results_model(
        tables, facts=settings.facts, tests=settings.tests, alpha=settings.alpha, adjust=settings.adjust, runs=runs
    )
    validate(model)
    prov = pd.read_csv(paths["provenance"], dtype=str, keep_default_na=False)
    write_text(verdicts, dumps(model))  # first: the report and its bundle carry it, and the landing page links it
    Path(site).mkdir(parents=True, exist_ok=True)
    pages = write_site(
        site,
        run=run_summary(config, tables["analysis_sets"], len(prov)),
        model=model,
        findings_rst=Path(findings).read_text(),
        provenance=prov,
        items=items,
        config=config,
        snakemake_report=snakemake_report,
        citation=yaml.safe_load(Path(citation).read_text()) if citation else None,
        run_provenance=run_record(config),
        cited=[*([cited] if isinstance(cited, str) else cited or []), verdicts],
    )
    zip_site(site, bundle)
    log.info("HTML report: %s", ", ".join(map(str, pages)))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
