"""The static HTML report in a real browser: headless Chromium (Debian's chromium and chromium-driver,
.ci/install-chromium.sh) opens the report built from tests/report_data.py's small tables as a file://
URL, goes from the overview to the findings, a figure and a table, sorts the table, saves a screenshot
of each (under the test's tmp dir) and finds no error in the browser console; at 800 px the verdicts come
first, the page does not scroll sideways and no table on the overview or the tables page is wider than its
box or repeats a header; printed (no shrinking to fit), no column is cut off, every column header of every
table is in the PDF's text and the tables page (with tables as wide and long as the demo's) takes at most
8 pages."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import report_site
from webdriver import CHROMEDRIVER, CHROMIUM, Browser

pytestmark = pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER),
    reason="chromium or chromedriver not on PATH (install both, as root, with .ci/install-chromium.sh)",
)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    return report_site.build(tmp_path_factory.mktemp("browser_site"))


@pytest.fixture(scope="module")
def browser():
    with Browser(width=1280, height=900) as b:
        yield b


def visible_text(browser: Browser, css: str) -> str:
    element = browser.find(css)
    assert browser.displayed(element), f"{css} is not visible"
    return browser.text(element)


def no_console_errors(browser: Browser) -> None:
    errors = [e for e in browser.console() if e["level"] == "SEVERE"]
    assert not errors, f"browser console errors: {errors}"


def test_the_report_reads_in_a_browser_from_overview_to_findings_figure_and_table(report, browser, tmp_path):
    browser.get(report.as_uri())
    headline = visible_text(browser, "#headline")
    assert "iEAT d" in headline and "BTS rho" in headline
    assert len(browser.find_all("#headline tbody tr")) >= 8
    assert "Known answers:" in visible_text(browser, "main") and "planted pair found" in visible_text(browser, "#known")
    assert "In short" in visible_text(browser, "#in-short")
    browser.screenshot(tmp_path / "overview.png")
    no_console_errors(browser)

    browser.click(browser.find('nav a[href="findings.html"]'))
    assert browser.url.endswith("/findings.html")
    findings = visible_text(browser, "main")
    assert "Findings" in findings and "a planted association" in findings and "Bias Transfer Scores" in findings
    browser.screenshot(tmp_path / "findings.png")
    no_console_errors(browser)

    browser.click(browser.find('nav a[href="figures.html"]'))
    image = browser.find("figure img")
    assert browser.displayed(image)
    assert browser.property(image, "complete") and browser.property(image, "naturalWidth") > 100  # the PNG loaded
    assert "Intra-class similarity" in visible_text(browser, "figure figcaption")
    browser.screenshot(tmp_path / "figure.png")
    no_console_errors(browser)

    browser.click(browser.find('nav a[href="tables.html"]'))
    table = browser.find("table.sortable")
    assert browser.displayed(table) and "Download: CSV" in visible_text(browser, "main")
    first = "#" + browser.attribute(table, "id")  # the iEAT table's d
    headers = browser.find_all(f"{first} th")
    column = 1 + [browser.text(h) for h in headers].index("d")
    header = headers[column - 1]
    column = f"{first} tbody tr td:nth-child({column})"
    browser.click(header)
    values = [float(browser.text(c)) for c in browser.find_all(column)]
    assert values == sorted(values) and browser.attribute(header, "aria-sort") == "ascending"
    browser.click(header)
    assert [float(browser.text(c)) for c in browser.find_all(column)] == sorted(values, reverse=True)
    browser.screenshot(tmp_path / "table.png")
    no_console_errors(browser)

    for name in ("overview", "findings", "figure", "table"):
        assert (tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def narrow(browser):
    """The browser at 800 px wide (a laptop's half screen), back at its own size afterwards."""
    browser.resize(800, 900)
    yield browser
    browser.resize(1280, 900)


def test_at_800_px_the_verdicts_come_first_and_the_page_does_not_scroll_sideways(report, narrow):
    narrow.get(report.as_uri())
    assert narrow.script("return window.innerWidth") <= 800
    for table, first in (("#headline", "verdict"), ("#known", "held")):
        header = narrow.find(f"{table} thead th")
        box = narrow.rect(header)
        assert narrow.text(header).startswith(first) and box["x"] >= 0 and box["x"] + box["width"] <= 800, table
    # a wide table scrolls inside its own box; the page itself fits the window
    assert narrow.script("return document.documentElement.scrollWidth") <= narrow.script("return window.innerWidth")
    summary = narrow.rect(narrow.find("#in-short"))
    assert summary["x"] + summary["width"] <= 800
    no_console_errors(narrow)


#: Every table's width, the width of the box it sits in, and its column headers.
TABLES_JS = """return Array.from(document.querySelectorAll("table")).map(function (t) {
  var box = t.getBoundingClientRect();
  return {id: t.id, width: t.scrollWidth, box: t.parentElement.clientWidth, right: box.right,
          headers: Array.from(t.querySelectorAll("thead th")).map(function (h) { return h.textContent; })};
});"""


def test_at_800_px_every_table_fits_its_box_and_the_window_with_unique_headers(report, narrow):
    for page in ("index", "tables"):
        narrow.get((report.parent / f"{page}.html").as_uri())
        width = narrow.script("return window.innerWidth")
        tables = narrow.script(TABLES_JS)
        assert len(tables) >= (2 if page == "index" else 10), page
        wide = [(t["id"], t["width"], t["box"]) for t in tables if t["width"] > t["box"] or t["right"] > width]
        assert not wide, f"{page}: tables wider than their box or the {width} px window: {wide}"
        repeated = {t["id"]: h for t in tables for h in t["headers"] if t["headers"].count(h) > 1}
        assert not repeated, f"{page}: a column header repeated in one table: {repeated}"
        assert narrow.script("return document.documentElement.scrollWidth") <= width, page
    # the trajectory table: a summary on the page, every row in its CSV
    section = narrow.find("section[id^=table-trajectories]")
    assert "Every row: the CSV" in narrow.text(section)
    rows = narrow.find_all("section[id^=table-trajectories] tbody tr")
    assert 0 < len(rows) <= 60
    no_console_errors(narrow)


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs pdftotext (poppler-utils)")
def test_printed_every_header_of_every_table_is_in_the_pdf_and_the_tables_fit_on_eight_pages(report, browser, tmp_path):
    for page in ("index", "tables"):
        browser.get((report.parent / f"{page}.html").as_uri())
        tables = browser.script(TABLES_JS)
        pdf = browser.print_pdf(tmp_path / f"{page}.pdf", orientation="portrait", shrinkToFit=False)
        printed = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
        words = set(printed.split())
        missing = {(t["id"], h) for t in tables for h in t["headers"] if not set(h.split()) <= words}
        assert not missing, f"{page}: column headers not printed: {sorted(missing)}"
        if page == "tables":
            info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
            pages = int(next(line.split()[1] for line in info.splitlines() if line.startswith("Pages:")))
            assert pages <= 8, f"tables.html prints on {pages} pages"


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs pdftotext (poppler-utils)")
def test_printed_every_word_stays_on_its_page_and_the_verdicts_are_there(report, browser, tmp_path):
    from test_tables import text_outside_page

    for page in ("index", "findings", "tables", "provenance"):
        browser.get((report.parent / f"{page}.html").as_uri())
        # every column header of every table, as the page shows it (a clipped column prints nothing)
        headers = {browser.text(th) for th in browser.find_all("table thead th")}
        pdf = browser.print_pdf(tmp_path / f"{page}.pdf", orientation="portrait", shrinkToFit=False)
        assert pdf.read_bytes()[:5] == b"%PDF-"
        assert not text_outside_page(pdf)[:5], f"{page}: printed text outside the page"
        printed = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
        words = set(printed.split())  # a header that wraps in print interleaves with its neighbours' words
        assert {h for h in headers if not set(h.split()) <= words} == set(), f"{page}: columns cut off in print"
        if page == "index":
            assert "In short" in printed and "verdict" in printed and "held" in printed


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs pdftotext (poppler-utils)")
def test_a_term_in_the_findings_opens_its_glossary_entry_which_fits_800_px_and_print(report, narrow, tmp_path):
    from test_tables import text_outside_page

    narrow.get((report.parent / "findings.html").as_uri())
    narrow.click(narrow.find('main a.term[href="glossary.html#ieat"]'))
    assert narrow.url.endswith("/glossary.html#ieat")
    assert "association test" in visible_text(narrow, "dt#ieat + dd")
    wide = narrow.script(
        "return [...document.querySelectorAll('main *')].filter(e => e.getBoundingClientRect().right > innerWidth)"
        ".map(e => e.tagName + ' ' + e.textContent.slice(0, 40))"
    )
    assert narrow.script("return document.documentElement.scrollWidth") <= narrow.script("return window.innerWidth"), (
        wide
    )
    narrow.screenshot(tmp_path / "glossary.png")
    no_console_errors(narrow)
    pdf = narrow.print_pdf(tmp_path / "glossary.pdf", orientation="portrait", shrinkToFit=False)
    assert not text_outside_page(pdf)[:5], "glossary: printed text outside the page"
    printed = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    assert "@software{biastransfer," in printed and "--forcerun ieat" in printed
