"""The static HTML report in a real browser: headless Chromium (Debian's chromium and chromium-driver,
.ci/install-chromium.sh) opens the report built from tests/report_data.py's small tables as a file://
URL, goes from the overview to the findings, a figure and a table, sorts the table, saves a screenshot
of each (under the test's tmp dir) and finds no error in the browser console."""

from __future__ import annotations

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
    header = browser.find_all("table.sortable th")[9]  # d
    assert browser.text(header).startswith("d")
    column = "table.sortable tbody tr td:nth-child(10)"
    browser.click(header)
    values = [float(browser.text(c)) for c in browser.find_all(column)]
    assert values == sorted(values) and browser.attribute(header, "aria-sort") == "ascending"
    browser.click(header)
    assert [float(browser.text(c)) for c in browser.find_all(column)] == sorted(values, reverse=True)
    browser.screenshot(tmp_path / "table.png")
    no_console_errors(browser)

    for name in ("overview", "findings", "figure", "table"):
        assert (tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
