"""Build the static HTML report (--index and its sibling --pages: findings, tables, figures, provenance,
glossary; the files they show and the --cited tables copied under --files) from a finished run's
summaries, tables and figures, with every verdict as JSON (--verdicts) and the whole report as one zip
(--bundle). Open the index in a browser; it needs no server.

Standalone (the rule html_report passes the same; each --shown value one item as a JSON object, keys
report.site.ITEM_KEYS):
python workflow/scripts/html_report.py --ieat results/summary/ieat.csv --bts results/summary/bts.csv
--findings results/summary/findings.rst --provenance results/summary/provenance.csv
--analysis_sets results/summary/analysis_sets.csv
--settings "{\"alpha\": 0.05, \"adjust\": \"holm\", \"config\": $(cat results/summary/config.json)}"
--shown '{"kind": "figure", "group": "iEAT", "title": "effect sizes", "caption": "workflow/report/ieat_heatmap.rst",
"files": {"png": "results/figures/ieat_heatmap.png", "pdf": "results/figures/ieat_heatmap.pdf"}}'
--index out/index.html --pages out/findings.html out/tables.html out/figures.html out/provenance.html out/glossary.html
--files out/files --verdicts out/results.json --bundle out/report.zip [--cited results/summary/*.csv ...: the tables the
captions cite, copied into the report, where the captions' paths link them] [--claims results/summary/claims.csv: a line on the claims]
[--link results/summary/link.csv: a line per finetuned model on whether its predictions act on the linked iEATs]
"""

import json
import logging
from pathlib import Path

import pandas as pd
import yaml

from biastransfer.atomic import write_text
from biastransfer.provenance import run_record
from biastransfer.report.findings import claims_sentence, link_sentences
from biastransfer.report.formatting import read_summary
from biastransfer.report.headline import finetuning_phrase, headline_summary, headline_table, verdicts_record
from biastransfer.report.html import PAGES
from biastransfer.report.site import write_site, zip_site
from biastransfer.report.tables import IEAT_COLUMNS
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


def main(
    ieat: str,
    bts: str,
    findings: str,
    provenance: str,
    analysis_sets: str,
    settings: HtmlReportSettings,
    shown: list,
    index: str,
    pages: list,
    files: str,
    verdicts: str,
    bundle: str,
    citation: str = "",
    snakemake_report: str = "../report.html",
    claims: list | str | None = None,
    link: list | str | None = None,
    cited: list | str | None = None,
) -> None:
    config, alpha, adjust = settings.config, settings.alpha, settings.adjust
    site = Path(index).parent
    expected = sorted(str(site / name) for name, _ in PAGES[1:]) + [str(site / "files")]
    if sorted(map(str, map(Path, pages))) + [str(Path(files))] != expected:
        raise ValueError(
            f"the report's pages and files folder must be {expected} (beside {index}), not {[*pages, files]}"
        )
    items = [json.loads(item) if isinstance(item, str) else item for item in shown]
    tests = {a: s["ieat"] for a, s in config["analysis_sets"].items()}
    table = headline_table(
        read_summary(ieat, IEAT_COLUMNS),
        read_summary(bts, ("analysis_set", "model", "kind", "statistic")),
        tests,
        alpha,
        adjust,
    )
    prov = pd.read_csv(provenance, dtype=str, keep_default_na=False)
    sets = read_summary(analysis_sets, ("analysis_set", "class", "n"))
    summary = headline_summary(
        table,
        synthetic=any(s["source"] == "synthetic" for s in config["analysis_sets"].values()),
        models=list(config["models"]),
        finetuned=finetuning_phrase(seeds_per_dataset(config)),
        alpha=alpha,
        adjust=adjust,
    )
    claims = claims if isinstance(claims, str) else next(iter(claims or []), None)
    if claims:
        summary.append(claims_sentence(pd.read_csv(claims, keep_default_na=False, na_values=[""])))
    link = link if isinstance(link, str) else next(iter(link or []), None)
    if link:
        summary += link_sentences(pd.read_csv(link, keep_default_na=False, na_values=[""]))
    Path(site).mkdir(parents=True, exist_ok=True)
    pages = write_site(
        site,
        run=run_summary(config, sets, len(prov)),
        headline=table,
        summary=summary,
        findings_rst=Path(findings).read_text(),
        provenance=prov,
        items=items,
        config=config,
        snakemake_report=snakemake_report,
        citation=yaml.safe_load(Path(citation).read_text()) if citation else None,
        run_provenance=run_record(config),
        cited=[cited] if isinstance(cited, str) else list(cited or []),
    )
    write_text(verdicts, json.dumps(verdicts_record(table, summary, alpha=alpha, adjust=adjust), indent=1) + "\n")
    zip_site(site, bundle)
    log.info("HTML report: %s", ", ".join(map(str, pages)))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
