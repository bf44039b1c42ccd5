"""The static HTML report (results/report/): an overview that answers first (what was run, the headline
table, links to every section), then the findings, the tables (sortable, caption beside each, CSV and
LaTeX downloads), the figures (PDF downloads) and the provenance of every embeddings file.

Everything the pages show is copied under ``files/`` of the report folder, so the folder opens from
disk (``file://``) and can be moved or zipped as a whole. Captions are the report's reStructuredText
captions (workflow/report/*.rst, Jinja templates as Snakemake renders them).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace

import pandas as pd

from biastransfer.atomic import write_text
from biastransfer.report.html import PAGES, downloads, esc, html_table, page

#: Keys of one report item (a figure or a table) as the html_report rule passes them.
ITEM_KEYS = ("kind", "group", "title", "caption", "files")

#: The file roles of an item, in the order their download links appear, with the links' words.
FILE_ROLES = {
    "png": "image",
    "pdf": "PDF",
    "csv": "CSV",
    "fragment": "LaTeX tabular (\\input)",
    "document": "LaTeX document",
}


class _Words(SimpleNamespace):
    """Wildcards or params for a caption template: a name it lacks renders as ``?``, not an error."""

    def __getattr__(self, name):
        return "?"


def rst_to_html(text: str, *, part: str = "body") -> str:
    """reStructuredText as an HTML fragment (docutils, which Snakemake itself depends on): its ``body``,
    or its ``html_body`` (title included)."""
    from docutils.core import publish_parts

    parts = publish_parts(text, writer="html5", settings_overrides={"report_level": 3, "halt_level": 5})
    return parts[part]


def render_caption(path: str | Path, config: Mapping, wildcards: Mapping, params: Mapping) -> str:
    """A report caption (a Jinja template of reStructuredText) rendered as Snakemake's report does."""
    import jinja2

    snakemake = SimpleNamespace(config=config, wildcards=_Words(**wildcards), params=_Words(**params))
    return rst_to_html(jinja2.Environment().from_string(Path(path).read_text()).render(snakemake=snakemake))


def _check_items(items: Sequence[Mapping]) -> None:
    for i, item in enumerate(items):
        missing = [k for k in ITEM_KEYS if k not in item]
        if missing:
            raise ValueError(f"report item {i} ({item.get('title', '?')!r}): missing key(s) {', '.join(missing)}")
        if item["kind"] not in ("figure", "table"):
            raise ValueError(f"report item {item['title']!r}: kind must be figure or table, not {item['kind']!r}")
        bad = sorted(set(item["files"]) - set(FILE_ROLES))
        if bad:
            raise ValueError(f"report item {item['title']!r}: unknown file role(s) {bad} (known: {sorted(FILE_ROLES)})")
        absent = [f for f in item["files"].values() if not Path(f).is_file()]
        if absent:
            raise FileNotFoundError(f"report item {item['title']!r}: no file {absent[0]}")


def _relative(source: str) -> Path:
    """Where a shown file goes under ``files/``: its path without a leading ``results/`` (or root)."""
    path = Path(source)
    path = path.relative_to(path.anchor) if path.is_absolute() else path
    return path.relative_to("results") if path.parts[0] == "results" else path


def _anchor(title: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in title.lower()).strip("-")


def _item_html(item: Mapping, files: Mapping[str, str], caption: str) -> str:
    anchor = _anchor(f"{item['kind']}-{item['group']}-{item['title']}")
    links = downloads([(files[r], FILE_ROLES[r]) for r in FILE_ROLES if r in files and r != "png"])
    if item["kind"] == "figure":
        return (f'<figure id="{anchor}"><h3>{esc(item["title"])}</h3>'
                f'<img src="{esc(files["png"])}" alt="{esc(item["title"])}" loading="lazy">'
                f"<figcaption>{caption}{links}</figcaption></figure>")  # fmt: skip
    frame = pd.read_csv(item["files"]["csv"], keep_default_na=False, na_values=[""])
    return (f'<section id="{anchor}"><h3>{esc(item["title"])}</h3><div class="caption">{caption}</div>{links}'
            f"{html_table(frame, table_id=anchor)}</section>")  # fmt: skip


def _grouped(blocks: Sequence[tuple[str, str]]) -> str:
    """``(group, html)`` blocks under one heading per group, with a contents list on top."""
    groups: dict[str, list[str]] = {}
    for group, block in blocks:
        groups.setdefault(group, []).append(block)
    toc = "".join(f'<li><a href="#{_anchor(g)}">{esc(g)}</a></li>' for g in groups)
    body = "".join(f'<h2 id="{_anchor(g)}">{esc(g)}</h2>{"".join(b)}' for g, b in groups.items())
    return f'<ul class="toc">{toc}</ul>{body}'


def provenance_body(frame: pd.DataFrame) -> str:
    """One card per embeddings file: its model, stage and every digest, wrapped, never cut off."""
    cards = []
    for record in frame.fillna("").to_dict("records"):
        title = " / ".join(str(record.get(k, "")) for k in ("analysis_set", "model", "stage"))
        rows = []
        for key, value in record.items():
            if value == "" or key in ("analysis_set", "model", "stage"):
                continue
            if key == "preprocessing":
                value = (
                    ", ".join(f"{k} {v}" for k, v in json.loads(value).items()) if str(value).startswith("{") else value
                )
            css = ' class="hash"' if key.endswith(("sha256", "hash")) or key == "file" else ""
            rows.append(f"<dt>{esc(key.replace('_', ' '))}</dt><dd{css}>{esc(value)}</dd>")
        cards.append(f'<div class="card"><h3>{esc(title)}</h3><dl class="record">{"".join(rows)}</dl></div>')
    return "".join(cards)


PROVENANCE_INTRO = (
    "<h1>Provenance of every embeddings file</h1><p class=caption>For each embeddings file: the model and stage, "
    "the sha256 of the weights it was computed with (and, for a finetuned stage, of the weights it started "
    "from and of its training and validation splits), the layer and pooling, the preprocessing, the hashes of "
    "the model's config entry and of the analysis-set manifest, the device and the library versions.</p>"
)


def provenance_page(frame: pd.DataFrame, *, pages: Sequence[tuple[str, str]] = ()) -> str:
    """The provenance page on its own (the Snakemake report's) or with the report's navigation."""
    return page("Provenance", PROVENANCE_INTRO + provenance_body(frame), current="provenance.html", pages=pages)


def overview_body(run: Mapping, headline: pd.DataFrame, items: Sequence[Mapping], *, snakemake_report: str) -> str:
    """The landing page: what was run, the headline table, and links to every section."""
    what = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in run.items())
    known = headline[headline["known_answer"] != ""]
    held = ""
    if len(known):
        ok = int(known["held"].str.startswith("yes").sum())
        held = f"<p><strong>Known answers: {ok} of {len(known)} held.</strong></p>"
    table = html_table(
        headline.drop(columns=["known_answer", "held"]) if known.empty else headline, table_id="headline"
    )
    sections = "".join(
        f'<li><a href="{href}">{esc(text)}</a>: {esc(SECTION_WORDS[href])}</li>' for href, text in PAGES[1:]
    )
    contents = ""
    for page_name, kind, words in (("tables.html", "table", "Tables"), ("figures.html", "figure", "Figures")):
        groups: dict[str, int] = {}
        for item in items:
            if item["kind"] == kind:
                groups[item["group"]] = groups.get(item["group"], 0) + 1
        links = ", ".join(f'<a href="{page_name}#{_anchor(g)}">{esc(g)}</a> ({n})' for g, n in groups.items())
        contents += f"<li>{words}: {links}</li>" if links else ""
    return (
        f"<h1>{esc(run.get('Title', 'Bias transfer report'))}</h1>"
        f'<h2>What was run</h2><dl class="record">{what}</dl>'
        f"<h2 id=headline-results>Headline results</h2>{held}"
        "<p class=caption>Every iEAT (effect size d: pretrained, and finetuned as the mean over seeds with its range) "
        "and every Bias Transfer Score (Spearman rho, finetuned similarities pooled over seeds) with its 95% "
        "bootstrap interval (finetuned iEAT: the lowest to the highest bound of the seeds' intervals), its p-value "
        "(a p written ≤ is at its method's floor) and its adjusted p (the largest over seeds). Click a column to sort. "
        'The words behind each verdict are in the <a href="findings.html">findings</a>.</p>'
        f"{table}"
        f"<h2>Sections</h2><ul>{sections}</ul><ul>{contents}</ul>"
        f"<p>The rule graph, run times and the configuration are in Snakemake's own report, "
        f'<a href="{esc(snakemake_report)}">{esc(snakemake_report)}</a> (built by '
        "<code>snakemake --report results/report.html --configfile &lt;the run's config files&gt;</code>: "
        "without them Snakemake reads the demo's config/config.yaml; <code>make demo</code> runs it).</p>"
    )


SECTION_WORDS = {
    "findings.html": "what was found, in words, with intervals and both directions of every effect",
    "tables.html": "the paper's tables, sortable, with captions; CSV and LaTeX downloads",
    "figures.html": "the paper's figures with captions; PDF downloads",
    "provenance.html": "where every embedding came from (weights, splits, preprocessing, versions)",
}


def write_site(folder: str | Path, *, run: Mapping, headline: pd.DataFrame, findings_rst: str,
               provenance: pd.DataFrame, items: Sequence[Mapping], config: Mapping, params: Mapping,
               snakemake_report: str = "../report.html") -> list[Path]:  # fmt: skip
    """Write the report's pages and copy every item's files under ``folder``; return the pages."""
    _check_items(items)
    folder = Path(folder)
    blocks: dict[str, list[tuple[str, str]]] = {"figure": [], "table": []}
    for item in items:
        files = {}
        for role, source in item["files"].items():
            target = Path("files") / _relative(source)
            (folder / target).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, folder / target)
            files[role] = target.as_posix()
        caption = render_caption(item["caption"], config, item.get("wildcards", {}), params)
        blocks[item["kind"]].append((item["group"], _item_html(item, files, caption)))
    pages = {
        "index.html": page(
            "Overview", overview_body(run, headline, items, snakemake_report=snakemake_report), current="index.html"
        ),  # fmt: skip
        "findings.html": page("Findings", rst_to_html(findings_rst, part="html_body"), current="findings.html"),
        "tables.html": page("Tables", "<h1>Tables</h1>" + _grouped(blocks["table"]), current="tables.html"),
        "figures.html": page("Figures", "<h1>Figures</h1>" + _grouped(blocks["figure"]), current="figures.html"),
        "provenance.html": provenance_page(provenance, pages=PAGES),
    }
    written = []
    for name, text in pages.items():
        write_text(folder / name, text)
        written.append(folder / name)
    return written
