"""HTML building blocks of the static report (results/report/): one page layout with inline CSS, and
tables that sort on a click (a few lines of inline JavaScript; no CDN, works offline).

:func:`html_table` renders a result table by its column names (docs/formats.md conventions):
``X_low``/``X_high`` merge into one interval column ``[low, high]`` (headed ``X CI`` beside a column ``X``),
``X_min``/``X_max`` into a range ``low to high``, p-value columns (``p``, ``p_*``, ``pvalue*``) print a p at
its method's floor (``p_floor`` or ``pvalue_floor``, which is not shown) as a bound, ``≤ floor``, and an
adjusted p of a row whose raw p is at its floor as a bound too (formatting.adjusted_floor). An interval or
range, and the estimate it belongs to (``X`` of ``X_low``/``X_high`` or ``X_min``/``X_max``; ``estimate`` or
``d`` of ``ci``), print the decimals that the interval supports (:func:`interval_decimals`): an estimate with
a CI follows the CI, one without follows its range. Every cell sorts by its number where it has one. On a
narrow screen and in print an interval or range may wrap at its space (class ``span``), a single number never.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence

import pandas as pd

from biastransfer.report.formatting import adjusted_floor, p_cell

CSS = """
:root { --ink: #1d1d1f; --muted: #5f6368; --line: #d9dce1; --accent: #0b57d0; --good: #1e7d32; --bad: #b3261e; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); }
nav { background: #f4f6f8; border-bottom: 1px solid var(--line); padding: .5rem 1rem; position: sticky; top: 0; z-index: 1; }
nav a { margin-right: 1.1rem; color: var(--accent); text-decoration: none; font-weight: 500; }
nav a[aria-current] { color: var(--ink); border-bottom: 2px solid var(--accent); }
main { max-width: 90rem; margin: 0 auto; padding: 1rem 1.25rem 3rem; }
h1 { font-size: 1.6rem; margin: .6rem 0; } h2 { font-size: 1.25rem; margin-top: 2rem; } h3 { font-size: 1.05rem; }
a { color: var(--accent); }
.caption, figcaption { color: var(--muted); max-width: 60rem; }
.downloads a { margin-right: .8rem; font-size: .9rem; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-size: .85rem; }
th, td { border-bottom: 1px solid var(--line); padding: .3rem .45rem; text-align: left; vertical-align: top; max-width: 26rem; }
td:not(.num) { min-width: 5rem; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
th { background: #f4f6f8; position: relative; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th::after { content: " \\2195"; color: #9aa0a6; font-size: .8em; }
th[aria-sort="ascending"]::after { content: " \\2191"; color: var(--ink); }
th[aria-sort="descending"]::after { content: " \\2193"; color: var(--ink); }
.yes { color: var(--good); font-weight: 600; } .no { color: var(--bad); font-weight: 600; }
figure { margin: 1.5rem 0; } figure img { max-width: min(100%, 64rem); height: auto; border: 1px solid var(--line); }
dl.record { display: grid; grid-template-columns: minmax(9rem, max-content) 1fr; gap: .2rem 1rem; margin: .4rem 0 1.2rem; }
dl.record dt { color: var(--muted); } dl.record dd { margin: 0; }
code, .hash { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: .85rem; overflow-wrap: anywhere; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: .2rem 1rem; margin: 1rem 0; }
ul.toc { columns: 2 18rem; }
p, li, .caption, figcaption { max-width: 75ch; }
.summary { border-left: 4px solid var(--accent); padding: .1rem 1rem; background: #f8fafd; }
dl.glossary dt { font-weight: 600; margin-top: .8rem; } dl.glossary dd { margin: .1rem 0 0 1.2rem; max-width: 75ch; }
.source { color: var(--muted); font-size: .9rem; } a.term { color: inherit; text-decoration: underline dotted; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; max-width: 75ch; }
@media (max-width: 900px) {
  main { padding: .5rem .6rem 2rem; } nav a { margin-right: .6rem; }
  table { font-size: .78rem; } th, td { max-width: 14rem; padding: .25rem .15rem; }
  td:not(.num) { min-width: 0; overflow-wrap: anywhere; } .breaks td:not(.num) { overflow-wrap: normal; }
  td.span { white-space: normal; }
  ul.toc { columns: 1; } dl.record { grid-template-columns: 1fr; } dl.record dd { margin-bottom: .3rem; }
}
@media print {
  nav { display: none; } body { font-size: 10pt; } main { max-width: none; padding: 0; }
  .scroll { overflow: visible; } table { font-size: 7.5pt; line-height: 1.2; } th, td { max-width: none; padding: .05rem .3rem; }
  td:not(.num) { min-width: 0; overflow-wrap: anywhere; } .breaks td:not(.num) { overflow-wrap: normal; }
  td.span { white-space: normal; }
  h2 { margin-top: 1.2rem; } .caption, figcaption { font-size: 9pt; } h3, h4 { margin: .8rem 0 .3rem; break-after: avoid; } .caption p { margin: .3rem 0; }
  table.sortable th::after { content: ""; } figure, tr, .card { break-inside: avoid; } a { color: inherit; }
}
"""

#: Click a header to sort by it (numbers by ``data-sort``, else text); click again to reverse.
SORT_JS = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, col) {
    th.addEventListener("click", function () {
      var up = th.getAttribute("aria-sort") !== "ascending";
      table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", up ? "ascending" : "descending");
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      function key(row) {
        var cell = row.cells[col], n = cell.getAttribute("data-sort");
        return n === null ? cell.textContent.trim().toLowerCase() : parseFloat(n);
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (typeof x === "number" && isNaN(x)) return 1;
        if (typeof y === "number" && isNaN(y)) return -1;
        return (x < y ? -1 : x > y ? 1 : 0) * (up ? 1 : -1);
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""

#: The report's pages, in navigation order: file name and link text.
PAGES = (
    ("index.html", "Overview"),
    ("findings.html", "Findings"),
    ("tables.html", "Tables"),
    ("figures.html", "Figures"),
    ("provenance.html", "Provenance"),
    ("glossary.html", "Glossary"),
)


def rst_to_html(text: str, *, part: str = "body") -> str:
    """reStructuredText as HTML (docutils, which Snakemake itself depends on): a fragment (``body``, or
    ``html_body`` with its title) or a standalone page (``whole``). A warning in the text is an error."""
    from docutils.core import publish_parts

    parts = publish_parts(text, writer="html5", settings_overrides={"report_level": 2, "halt_level": 2})
    return parts[part]


def esc(text: object) -> str:
    """``text`` escaped for HTML."""
    return html.escape(str(text), quote=True)


def page(title: str, body: str, *, current: str | None = None, pages: Sequence[tuple[str, str]] = PAGES) -> str:
    """A complete HTML page: navigation (``current`` marked), ``body`` and the sorting script."""
    links = "".join(
        f'<a href="{esc(href)}"{" aria-current=page" if href == current else ""}>{esc(text)}</a>'
        for href, text in pages
    )
    nav = f"<nav>{links}</nav>" if pages else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head>\n"
        f"<body>{nav}<main>\n{body}\n</main><script>{SORT_JS}</script></body></html>\n"
    )


_RAW_P = ("p", "p_two_sided", "pvalue", "pvalue_two_sided")


def _is_p(column: str) -> bool:
    return column == "p" or column.startswith(("p_", "pvalue")) and not column.endswith("floor")


def _number(value) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number


def _text(value, digits: int = 3) -> str:
    """A number with ``digits`` significant digits (an integral value as an integer), or the text."""
    number = _number(value)
    if number is None:
        return "" if value is None else str(value)
    if math.isnan(number):
        return "–"
    if number.is_integer() and abs(number) < 1e6:
        return str(int(number))
    return f"{number:.{digits}g}"


#: Headers of column pairs that are not their stem's words: an interval of one network, or a range over seeds
#: of the seeds' intervals (never called a CI).
_PAIR_HEADERS = {"ci": "CI", "ci_seeds": "range over seeds of the CIs"}


def _words(name: str) -> str:
    """A column name as a header's words (``retention_ci`` reads ``retention CI``)."""
    return " ".join("CI" if word == "ci" else word for word in name.split("_"))


def _columns(frame: pd.DataFrame) -> list[tuple[str, tuple[str, ...]]]:
    """(header, source columns) in order: pairs merged, floors hidden."""
    names = list(frame.columns)
    out, used = [], set()
    floors = {"p_floor", "pvalue_floor"}
    for name in names:
        if name in used or name in floors:
            continue
        for low, high, label in (("_low", "_high", ""), ("_min", "_max", " range")):
            if name.endswith(low) and name.removesuffix(low) + high in names:
                stem = name.removesuffix(low)
                words = _words(stem)
                if stem in _PAIR_HEADERS:
                    header = _PAIR_HEADERS[stem]
                elif stem in names and low == "_low":  # the interval of a column of its own: not its name again
                    header = f"{words} CI"
                else:
                    header = words + label
                out.append((header, (name, stem + high)))
                used |= {name, stem + high}
                break
        else:
            out.append((_words(name), (name,)))
            used.add(name)
    return out


def interval_decimals(low: float, high: float) -> int:
    """Decimals that show an interval's width to two significant digits: at least 2 (the findings' and the
    LaTeX tables'), more for a narrow one (a range over seeds of SD 0.0003 is not "0.98 to 0.99"), at most 6."""
    width = abs(high - low)
    if not width or not math.isfinite(width):
        return 2
    return min(6, max(2, 1 - math.floor(math.log10(width))))


def _pair(row: Mapping, low: str, high: str) -> tuple[float, float] | None:
    ends = _number(row.get(low)), _number(row.get(high))
    return None if any(e is None or math.isnan(e) for e in ends) else ends


def _estimate_decimals(row: Mapping, name: str) -> int | None:
    """The decimals of the interval (else the range) that column ``name`` of ``row`` is the estimate of."""
    own = ("ci_low", "ci_high") if name in ("estimate", "d") else (f"{name}_low", f"{name}_high")
    for low, high in (own, (f"{name}_min", f"{name}_max")):
        ends = _pair(row, low, high)
        if ends:
            return interval_decimals(*ends)
    return None


def _cell(row: Mapping, sources: tuple[str, ...], floor: float | None, breaks: str) -> str:
    if len(sources) == 2:
        ends = _pair(row, *sources)
        if ends is None:
            return '<td class="num" data-sort="NaN">–</td>'
        low, high = ends
        k = interval_decimals(low, high)
        text = f"[{low:.{k}f}, {high:.{k}f}]" if sources[0].endswith("_low") else f"{low:.{k}f} to {high:.{k}f}"
        return f'<td class="num span" data-sort="{low!r}">{esc(text)}</td>'
    (name,) = sources
    value = row[name]
    number = _number(value)
    if number is None:
        text = "" if value is None else str(value)
        word = text.split(" ", 1)[0].rstrip(":,").lower()
        mark = f' class="{word}"' if name == "held" and word in ("yes", "no") else ""
        text = esc(text)
        for character in breaks:
            text = text.replace(character, f"{character}<wbr>")
        return f"<td{mark}>{text}</td>"
    if _is_p(name):
        raw = row.get("p", row.get("pvalue"))
        if name in _RAW_P:
            bound = floor
        else:  # an adjusted p: a bound where the raw p is at its floor
            bound = adjusted_floor(float(raw), floor, number) if _number(raw) is not None else None
        text = p_cell(number, bound)
    else:
        decimals = _estimate_decimals(row, name)
        text = _text(value) if decimals is None or math.isnan(number) else f"{number:.{decimals}f}"
    return f'<td class="num" data-sort="{number!r}">{esc(text)}</td>'


def html_table(frame: pd.DataFrame, *, table_id: str, breaks: str = "") -> str:
    """A sortable ``<table>`` of ``frame`` (column conventions in the module docstring); a ``held`` column's
    cells that start with yes or no are coloured. On a narrow screen and in print a text cell breaks after each
    character of ``breaks`` (``_``: ``refrigerator_vs_stop_sign`` wraps at its words), or, without ``breaks``,
    anywhere, rather than widen the table. ValueError when two columns would print one header."""
    columns = _columns(frame)
    headers = [h for h, _ in columns]
    twice = next((h for h in headers if headers.count(h) > 1), None)
    if twice is not None:
        sources = [", ".join(s) for h, s in columns if h == twice]
        raise ValueError(
            f"table {table_id!r}: column header {twice!r} names more than one column: {'; '.join(sources)}"
        )
    head = "".join(f'<th scope="col">{esc(h)}</th>' for h, _ in columns)
    rows = []
    for record in frame.to_dict("records"):
        floor = _number(record.get("p_floor", record.get("pvalue_floor")))
        rows.append("<tr>" + "".join(_cell(record, sources, floor, breaks) for _, sources in columns) + "</tr>")
    return (
        f'<div class="{"scroll breaks" if breaks else "scroll"}"><table class="sortable" id="{esc(table_id)}">'
        f"<thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def downloads(links: Sequence[tuple[str, str]]) -> str:
    """A line of download links: ``(href, text)`` pairs."""
    return (
        '<p class="downloads">Download: '
        + " ".join(f'<a href="{esc(href)}" download>{esc(text)}</a>' for href, text in links)
        + "</p>"
    )
