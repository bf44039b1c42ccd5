"""The static HTML report (results/report/): an overview that answers first (what was run, the headline
table, links to every section), then the findings, the tables (sortable, caption beside each, CSV and
LaTeX downloads), the figures (PDF downloads), the provenance of every embeddings file and the glossary
(every term with its source, the methods, BibTeX and the commands that reproduce each table).

Everything the pages show, and every summary table they cite, is copied under ``files/`` of the report
folder, and each cited ``results/...`` path links its copy, so the folder opens from disk (``file://``) and
can be moved or zipped as a whole (:func:`zip_site`). Captions are the report's reStructuredText captions
(workflow/report/*.rst, Jinja templates as Snakemake renders them). The glossary page
(report.glossary) explains every term, and the findings and the tables' captions link their terms to it.
"""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace

import pandas as pd

from biastransfer.atomic import atomic_path, write_text
from biastransfer.paths import path as run_path
from biastransfer.report.artefacts import FILE_ROLES, FOREST_ROWS, KINDS, REQUIRED_ROLES
from biastransfer.report.glossary import REPRODUCE, glossary_body, link_terms, map_text, methods_block, reproduce_block
from biastransfer.report.html import PAGES, downloads, esc, html_table, page, rst_to_html
from biastransfer.report.tables import page_parts

#: Keys of one report item (a figure, table or page) as the html_report rule passes them
#: (report.artefacts.Artefact.items).
ITEM_KEYS = ("kind", "group", "title", "caption", "files")


class _Words(SimpleNamespace):
    """Wildcards for a caption template: a name it lacks renders as ``?``, not an error."""

    def __getattr__(self, name):
        return "?"


def render_caption(path: str | Path, config: Mapping, wildcards: Mapping) -> str:
    """A report caption (a Jinja template of reStructuredText) rendered as Snakemake's report does; a caption
    reads the config and its item's wildcards (not its rule's params, which the static report does not have)."""
    import jinja2

    snakemake = SimpleNamespace(config=config, wildcards=_Words(**wildcards))
    return rst_to_html(jinja2.Environment().from_string(Path(path).read_text()).render(snakemake=snakemake))


def _check_items(items: Sequence[Mapping]) -> None:
    for i, item in enumerate(items):
        missing = [k for k in ITEM_KEYS if k not in item]
        if missing:
            raise ValueError(f"report item {i} ({item.get('title', '?')!r}): missing key(s) {', '.join(missing)}")
        if item["kind"] not in KINDS:
            raise ValueError(
                f"report item {item['title']!r}: kind must be one of {', '.join(KINDS)}, not {item['kind']!r}"
            )
        bad = sorted(set(item["files"]) - set(FILE_ROLES))
        if bad:
            raise ValueError(f"report item {item['title']!r}: unknown file role(s) {bad} (known: {sorted(FILE_ROLES)})")
        lacking = [r for r in REQUIRED_ROLES[item["kind"]] if r not in item["files"]]
        if lacking:
            raise ValueError(f"report item {item['title']!r}: a {item['kind']} needs a {lacking[0]!r} file")
        absent = [f for f in item["files"].values() if not Path(f).is_file()]
        if absent:
            raise FileNotFoundError(f"report item {item['title']!r}: no file {absent[0]}")


#: The landing page's link to the bundle, which zip_site turns into :data:`BUNDLE_NOTE` inside the bundle
#: (a zip cannot hold itself): results/report.zip sits beside results/report/.
BUNDLE_LINK = '<a class="bundle" href="../report.zip">report.zip</a>'
#: What the bundle's own pages say in place of :data:`BUNDLE_LINK`.
BUNDLE_NOTE = "<strong>report.zip</strong> (this folder is that file, unpacked)"


def take_away() -> str:
    """A paragraph that links the bundle and the methods, BibTeX and reproducing commands."""
    return (
        f'<p class="take-away">Take away: {BUNDLE_LINK}, this whole report in one file (every page, figure and '
        "table, and the summary tables the captions cite, under <code>files/</code>); a methods paragraph, BibTeX "
        'and the command that reproduces each table are on the <a href="glossary.html#methods">glossary page</a>.</p>'
    )


_CITED = re.compile(r"results/[\w./*-]*\w")


def link_files(html: str, folder: str | Path) -> str:
    """``html`` with each ``results/...`` path in its text (code included, links not) that has a copy under
    ``folder/files/`` linked to that copy; a pattern (``seed*``) is followed by a link to each copy it matches."""
    files = Path(folder) / "files"

    def replace(text: str) -> str:
        def link(match: re.Match) -> str:
            target = _relative(match.group(0))
            if "*" in match.group(0):
                copies = sorted(p.relative_to(files).as_posix() for p in files.glob(target.as_posix()) if p.is_file())
                links = ", ".join(f'<a href="files/{c}">{esc(Path(c).parent.name)}</a>' for c in copies)
                return f"{match.group(0)} ({links})" if copies else match.group(0)
            if not (files / target).is_file():
                return match.group(0)
            return f'<a href="files/{target.as_posix()}">{match.group(0)}</a>'

        return _CITED.sub(link, text)

    return map_text(html, replace, skip=frozenset({"a", "title", "nav"}))


def _relative(source: str | Path) -> Path:
    """Where a shown file goes under ``files/``: its path below the run's ``results/`` folder (the last one on
    its path; a path outside one, without its root), as captions cite it (``results/summary/ieat.csv``)."""
    path = Path(source)
    path = path.relative_to(path.anchor) if path.is_absolute() else path
    if "results" in path.parts[:-1]:
        return Path(*path.parts[len(path.parts) - path.parts[::-1].index("results") :])
    return path


def _anchor(title: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in title.lower()).strip("-")


def _item_html(item: Mapping, files: Mapping[str, str], caption: str) -> str:
    anchor = _anchor(f"{item['kind']}-{item['group']}-{item['title']}")
    links = downloads([(files[r], FILE_ROLES[r]) for r in FILE_ROLES if r in files and r != "png"])
    if item["kind"] == "figure":  # the image opens its full-size PNG; the downloads give its vector files
        return (
            f'<figure id="{anchor}"><h3>{esc(item["title"])}</h3>'
            f'<a href="{esc(files["png"])}" title="full size">'
            f'<img src="{esc(files["png"])}" alt="{esc(item["title"])}" loading="lazy"></a>'
            f"<figcaption>{caption}{links}</figcaption></figure>"
        )
    frame = pd.read_csv(item["files"]["csv"], keep_default_na=False, na_values=[""])
    parts, note = page_parts(frame)
    summary = f'<p class="caption">Shown: {esc(note)} Every row: <a href="{esc(files["csv"])}">the CSV</a>.</p>'
    tables = "".join(
        (f"<h4>{esc(title)}</h4>" if title else "") + html_table(rows, table_id=f"{anchor}-{i}", breaks="_")
        for i, (title, rows) in enumerate(parts, start=1)
    )
    return (
        f'<section id="{anchor}"><h3>{esc(item["title"])}</h3><div class="caption">{caption}</div>{links}'
        f"{summary if note else ''}{tables}</section>"
    )


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
    "<h1>Provenance: this run and every embeddings file</h1><p class=caption>For each embeddings file: its own sha256, the "
    "model and stage, where the pretrained weights came from, "
    "the sha256 of the weights it was computed with (and, for a finetuned stage, of the weights it started "
    "from and of its training and validation splits), the layer and pooling, the preprocessing, the hashes of "
    "the model's config entry and of the analysis-set manifest, the device, the library versions, and the "
    "workflow version and git commit that wrote it.</p>"
)


def run_card(run: Mapping[str, str], config_href: str | None = None) -> str:
    """The whole run's record (biastransfer.provenance.run_record) as a card, with a link to its filled config."""
    rows = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in run.items())
    if config_href:
        rows += f'<dt>configuration</dt><dd><a href="{esc(config_href)}">the filled config of this run</a></dd>'
    return f'<div class="card" id="this-run"><h2>This run</h2><dl class="record">{rows}</dl></div>'


def provenance_page(
    frame: pd.DataFrame,
    *,
    pages: Sequence[tuple[str, str]] = (),
    run: Mapping[str, str] | None = None,
    config_href: str | None = None,
) -> str:
    """The provenance page on its own (the Snakemake report's) or with the report's navigation and the run's
    own record first."""
    first = run_card(run, config_href) + "<h2>Every embeddings file</h2>" if run else ""
    return page("Provenance", PROVENANCE_INTRO + first + provenance_body(frame), current="provenance.html", pages=pages)


def _known_answers(headline: pd.DataFrame) -> str:
    """The known answers apart from every other verdict: what each checks, the numbers, and whether it held."""
    known = headline[headline["known_answer"] != ""]
    if known.empty:
        return ""
    ok = int(known["held"].eq("yes").sum())
    rows = known.rename(columns={"known_answer": "checks", "estimate": "d"})[
        ["held", "checks", "model", "test", "d", "ci_low", "ci_high", "p_adjusted", "p", "p_floor"]
    ]
    return (
        f"<h2 id=known-answers>Known answers: {ok} of {len(known)} held</h2>"
        "<p class=caption>What the data were built to show, read in the pretrained networks (the configured "
        "<code>role</code> of each iEAT test). Finetuned networks have no known answer: their verdicts are below.</p>"
        + html_table(rows, table_id="known")
    )


def cite_block(citation: Mapping) -> str:
    """How to cite this run, from the repository's CITATION.cff: the software (with its version) and the paper
    whose measures it implements (by its identifier, as text: the report links nothing outside itself)."""
    paper = citation["preferred-citation"]
    names = ", ".join(f"{a['given-names']} {a['family-names']}" for a in paper["authors"])
    return (
        "<h2 id=cite>Cite this</h2>"
        f"<p>{esc(names)} ({paper['year']}). <em>{esc(paper['title'])}</em>. "
        f"{esc(', '.join(i['value'] for i in paper['identifiers'] if i['type'] == 'other'))}.</p>"
        f"<p>{esc(', '.join(a['name'] for a in citation['authors']))}. <em>{esc(citation['title'])}</em>, "
        f"version {esc(citation['version'])} ({esc(citation['license'])}); the commit that wrote each file is on "
        'the <a href="provenance.html">provenance</a> page.</p>'
    )


#: The file name (without suffix) of the forest plot that opens the landing page when the run draws it; a run
#: with more than :data:`FOREST_ROWS` rows has one per analysis set, ``ieat_forest_{analysis_set}``.
FOREST_FIGURE = "ieat_forest"


def _forest(items: Sequence[Mapping], rows: Mapping[str, int]) -> str:
    """The forest plot (every iEAT's d with its interval, per network; ``rows``: {analysis set: its rows}),
    linked to its full-size file; beyond :data:`FOREST_ROWS` rows (the paper's run has hundreds) only a link, so
    that the sentences come first, and where the run drew one plot per analysis set, a link to each."""
    figures = [i for i in items if i["kind"] == "figure" and i["files"].get("png")]
    whole = [i for i in figures if Path(i["files"]["png"]).stem == FOREST_FIGURE]
    per_set = [i for i in figures if Path(i["files"]["png"]).stem.startswith(f"{FOREST_FIGURE}_")]
    total = sum(rows.values())
    if per_set:
        links = ", ".join(
            f'<a href="{esc(i["files"]["png"])}">{esc(i["wildcards"]["analysis_set"])}</a> '
            f"({rows.get(i['wildcards']['analysis_set'], 0)} rows)"
            for i in per_set
        )
        return (
            f'<p id="forest">Every iEAT\'s d with its interval, per network ({total} rows), one forest plot per '
            f'analysis set: {links} (their captions on the <a href="figures.html">figures</a> page).</p>'
        )
    if not whole:
        return ""
    item, png = whole[0], whole[0]["files"]["png"]
    if total > FOREST_ROWS:
        return (
            f'<p id="forest">Every iEAT\'s d with its interval, per network ({total} rows): the '
            f'<a href="{esc(png)}">forest plot</a> (its caption on the <a href="figures.html">figures</a> '
            "page).</p>"
        )
    return (
        f'<figure id="forest"><a href="{esc(png)}"><img src="{esc(png)}" alt="{esc(item["title"])}"></a>'
        f"<figcaption>{esc(item['title'])}: every iEAT's d with its 95% bootstrap interval, per network "
        "(pretrained, each finetuned seed, the network trained from scratch); the caption is on the <a "
        'href="figures.html">figures</a> page.</figcaption></figure>'
    )


def _rows_per_set(ieats: Sequence[Mapping]) -> dict[str, int]:
    """{analysis set: its iEAT records (the forest plot's rows)}."""
    counts: dict[str, int] = {}
    for r in ieats:
        counts[r["analysis_set"]] = counts.get(r["analysis_set"], 0) + 1
    return counts


def _in_short(model: Mapping, items: Sequence[Mapping]) -> str:
    """The results section's opening: the forest plot, at most five sentences, what the run cannot tell and the
    decision rule of each level, all from the results model."""
    sentences = "".join(f"<p>{esc(s)}</p>" for s in [*model["summary"], model["claims_summary"]] if s)
    arms = "".join(f"<li>{esc(line)}</li>" for line in model["arms_summary"])
    if arms:
        sentences += f'<h3>Each compared finetuning arm</h3><ul id="arms">{arms}</ul>'
    limits = "".join(f"<li>{esc(s)}</li>" for s in model["cannot_tell"])
    rules = "".join(f"<dt>{esc(level)}</dt><dd>{esc(text)}</dd>" for level, text in model["rules"].items())
    return (
        f'<section class="summary" id="in-short"><h2>In short</h2>{_forest(items, _rows_per_set(model["ieat"]))}'
        + link_terms(
            sentences
            + (f"<h3>What this run cannot tell</h3><ul>{limits}</ul>" if limits else "")
            + f'<h3>How each verdict is decided</h3><dl class="record" id="rules">{rules}</dl>'
        )
        + "<p>The words behind each verdict, with both directions of every effect, are in the "
        '<a href="findings.html">findings</a>; every number of this page, and every other result of the run, is '
        "in results/summary/results.json (its JSON Schema: biastransfer/report/results.schema.json in the "
        "workflow's source).</p></section>"
    )


def overview_body(
    run: Mapping,
    model: Mapping,
    items: Sequence[Mapping],
    *,
    snakemake_report: str,
    citation: Mapping | None = None,
) -> str:
    """The landing page as a results section: the forest plot and what was found in a few sentences, what the
    run cannot tell, the decision rules, the known answers, every verdict (verdict first), what was run, and
    links to every section."""
    headline = pd.DataFrame(model["verdicts"])
    what = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in run.items())
    verdicts = headline.drop(columns=["known_answer", "held"])
    table = html_table(verdicts[["verdict", *(c for c in verdicts if c != "verdict")]], table_id="headline")
    sections = "".join(
        f'<li><a href="{href}">{esc(text)}</a>: {esc(SECTION_WORDS[href])}</li>' for href, text in PAGES[1:]
    )
    single = ", ".join(
        f'<a href="{esc(item["files"]["html"])}">{esc(item["title"].lower())}</a>'
        for item in items
        if item["kind"] == "page"
    )
    sections += f"<li>As single pages (from Snakemake's report): {single}</li>" if single else ""
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
        f"{_in_short(model, items)}"
        f"{_known_answers(headline)}"
        f"<h2 id=headline-results>Every verdict</h2>"
        "<p class=caption>Every iEAT (effect size d: pretrained, and finetuned as the mean over seeds with the "
        "seeds' range) and every Bias Transfer Score (Spearman rho, finetuned similarities pooled over seeds), "
        "with its 95% bootstrap interval (finetuned iEAT: from the lowest to the highest bound of the seeds' "
        "intervals, a range, not an interval), its p-value (below 0.001 written &lt; 0.001; the exact value is "
        "in results.json) and its adjusted p (over seeds: the largest). A BTS's retention compares it with the "
        "network trained from scratch. Click a column to sort.</p>"
        f"{table}"
        f'<h2>What was run</h2><dl class="record">{what}</dl>'
        f"<h2>Sections</h2><ul>{sections}</ul><ul>{contents}</ul>{take_away()}"
        f"<p>The rule graph, run times and the configuration are in Snakemake's own report, "
        f'<a href="{esc(snakemake_report)}">{esc(snakemake_report)}</a> (built by '
        "<code>snakemake --report results/report.html --configfile &lt;the run's config files&gt;</code>: "
        "without them Snakemake reads the demo's config/config.yaml; <code>make demo</code> runs it).</p>"
        + (cite_block(citation) if citation else "")
    )


SECTION_WORDS = {
    "findings.html": "what was found, in words, with intervals and both directions of every effect",
    "tables.html": "the paper's tables, sortable, with captions; CSV and LaTeX downloads",
    "figures.html": "the paper's figures with captions; PDF downloads",
    "provenance.html": "where every embedding came from (weights, splits, preprocessing, versions)",
    "glossary.html": "every term in two sentences with its source; the methods, BibTeX and how to reproduce each table",
}


def write_site(
    folder: str | Path,
    *,
    run: Mapping,
    model: Mapping,
    findings_rst: str,
    provenance: pd.DataFrame,
    items: Sequence[Mapping],
    config: Mapping,
    snakemake_report: str = "../report.html",
    citation: Mapping | None = None,
    run_provenance: Mapping[str, str] | None = None,
    cited: Sequence[str] = (),
) -> list[Path]:
    """Write the report's pages and copy every item's files and the ``cited`` summary tables under ``folder``;
    return the pages. A table without rows in this run (the paper comparison of a run that shares no model
    with the paper) is named on the tables page instead of shown (its files are still copied, into the
    report's bundle). The findings and the tables' captions link their terms to the glossary."""
    _check_items(items)
    absent = [c for c in cited if not Path(c).is_file()]
    if absent:
        raise FileNotFoundError(f"the report cites {absent[0]}, which does not exist")
    methods = methods_block(model, citation)  # a KeyError naming a setting the paragraph lacks
    folder = Path(folder)
    for source in cited:
        target = folder / "files" / _relative(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    blocks: dict[str, list[tuple[str, str]]] = {kind: [] for kind in KINDS}
    shown, empty = [], []
    for item in items:
        files = {}
        for role, source in item["files"].items():
            target = Path("files") / _relative(source)
            (folder / target).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, folder / target)
            files[role] = target.as_posix()
        if item["kind"] == "table" and pd.read_csv(item["files"]["csv"]).empty:
            empty.append(item["title"])
            continue
        shown.append({**item, "files": files})
        if item["kind"] != "page":
            caption = render_caption(item["caption"], config, item.get("wildcards", {}))
            blocks[item["kind"]].append((item["group"], _item_html(item, files, caption)))
    pages = {
        "index.html": page(
            "Overview",
            overview_body(run, model, shown, snakemake_report=snakemake_report, citation=citation),
            current="index.html",
        ),
        "findings.html": page(
            "Findings", link_terms(rst_to_html(findings_rst, part="html_body")), current="findings.html"
        ),
        "tables.html": page(
            "Tables",
            "<h1>Tables</h1>"
            + (f"<p class=caption>Not shown, without rows in this run: {esc(', '.join(empty))}.</p>" if empty else "")
            + link_terms(_grouped(blocks["table"])),
            current="tables.html",
        ),
        "figures.html": page("Figures", "<h1>Figures</h1>" + _grouped(blocks["figure"]), current="figures.html"),
        "provenance.html": provenance_page(
            provenance,
            pages=PAGES,
            run=run_provenance,
            config_href=next(
                (i["files"]["html"] for i in shown if i["files"].get("html", "").endswith("config.html")), None
            ),
        ),
        "glossary.html": page(
            "Glossary",
            glossary_body()
            + methods
            + reproduce_block(
                [
                    m
                    for m, (_, summary) in REPRODUCE.items()
                    if (folder / "files" / _relative(run_path("summary", summary=summary))).is_file()
                ]
            )
            + take_away(),
            current="glossary.html",
        ),
    }
    written = []
    for name, text in pages.items():
        write_text(folder / name, link_files(text, folder))
        written.append(folder / name)
    return written


_OUTSIDE = re.compile(r'<a\b[^>]*\bhref="\.\./[^"]*"[^>]*>(.*?)</a>', re.S)


def bundled_page(html: str) -> str:
    """A page as the bundle holds it: :data:`BUNDLE_NOTE` for the link to the bundle, and each other link
    outside the report folder (Snakemake's own report beside it) as its text, said to be outside the bundle."""
    return _OUTSIDE.sub(r"\1 (beside the report folder, not in this bundle)", html.replace(BUNDLE_LINK, BUNDLE_NOTE))


def zip_site(folder: str | Path, path: str | Path) -> None:
    """The whole report folder as one zip (entries under ``report/``, in order, with a fixed date, so that
    the same report gives the same bytes), written atomically. Its pages are :func:`bundled_page`, so that
    every link resolves in the bundle unpacked alone too."""
    folder = Path(folder)
    with atomic_path(path) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as bundle:
        for file in sorted(p for p in folder.rglob("*") if p.is_file()):
            entry = zipfile.ZipInfo(f"report/{file.relative_to(folder).as_posix()}", date_time=(1980, 1, 1, 0, 0, 0))
            entry.compress_type = zipfile.ZIP_DEFLATED
            data = file.read_bytes()
            if file.parent == folder and file.suffix == ".html":
                data = bundled_page(data.decode()).encode()
            bundle.writestr(entry, data)
