"""No page of the report contradicts another: every verdict of results.json, with its estimate and interval,
reads the same on the landing page's table, in the findings and in the summary sentences (the static report
of tests/report_data.py's small tables, as tests/report_site.py builds it)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
import report_site


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return report_site.build(tmp_path_factory.mktemp("consistency")).parent


def headline_rows(index: Path) -> list[dict[str, str]]:
    table = index.read_text().split('id="headline"', 1)[1].split("</table>", 1)[0]
    headers = [html.unescape(h) for h in re.findall(r'<th scope="col">(.*?)</th>', table)]
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S) for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)]
    return [dict(zip(headers, map(html.unescape, row))) for row in rows if row]


def interval(cell: str) -> tuple[str, str]:
    """The ends of an interval cell, ``[a, b]``."""
    return re.fullmatch(rf"\[({report_site.NUMBER}), ({report_site.NUMBER})\]", cell).groups()


def seeds_range(cell: str) -> tuple[str, str]:
    """The ends of a range cell, ``a to b`` (a range is never written as an interval)."""
    return re.fullmatch(rf"({report_site.NUMBER}) to ({report_site.NUMBER})", cell).groups()


def test_the_landing_table_shows_each_verdict_of_results_json_with_its_numbers(site):
    verdicts = json.loads((site.parent / "results.json").read_text())["verdicts"]
    rows = {(r["measure"], r["test"], r["model"], r["stage"]): r for r in headline_rows(site / "index.html")}
    assert len(rows) == len(verdicts) > 0
    for v in verdicts:
        row = rows[(v["measure"], v["test"], v["model"], v["stage"])]
        assert row["verdict"] == v["verdict"], v
        assert report_site.agrees(row["estimate"], v["estimate"]), (row["estimate"], v)
        if v["ci_low"] is not None:
            assert all(map(report_site.agrees, interval(row["CI"]), (v["ci_low"], v["ci_high"]))), (row["CI"], v)
        if v["ci_seeds_min"] is not None:  # a range over seeds, in its own column, never under "CI"
            assert row["CI"] == "–" and all(
                map(
                    report_site.agrees,
                    seeds_range(row["range over seeds of the CIs"]),
                    (v["ci_seeds_min"], v["ci_seeds_max"]),
                )
            ), v


def test_the_findings_give_each_iEAT_the_verdict_and_interval_of_results_json(site):
    verdicts = json.loads((site.parent / "results.json").read_text())["verdicts"]
    findings = report_site.page_text(site / "findings.html")
    checked = 0
    for v in verdicts:
        if v["measure"] != "iEAT d":
            continue
        name = v["test"].split(" (", 1)[0]  # "coco: car-random"
        section = findings.split(f"{name} —", 1)[1].split(" — ", 1)[0]
        if v["stage"] == "pretrained":
            found = re.search(
                rf"{re.escape(v['model'])} pretrained: ([a-z ]+) \(d = ({report_site.NUMBER}), 95% CI \[({report_site.NUMBER}), "
                rf"({report_site.NUMBER})\]",
                section,
            )
            assert found, (name, v["model"])
            verdict, d, low, high = found.groups()
            assert verdict.strip() == v["verdict"] and report_site.agrees(d, v["estimate"]), (found.group(0), v)
            assert report_site.agrees(low, v["ci_low"]) and report_site.agrees(high, v["ci_high"]), (found.group(0), v)
        else:
            stage = v["stage"].rsplit(", ", 1)[0]  # "finetuned on coco"
            assert f"{v['model']} {stage}: {v['verdict']}." in section, (name, v["model"], v["verdict"])
        checked += 1
    assert checked == sum(v["measure"] == "iEAT d" for v in verdicts) > 0


def test_the_summary_sentences_are_the_ones_results_json_records(site):
    summary = json.loads((site.parent / "results.json").read_text())["summary"]
    index = report_site.page_text(site / "index.html")
    assert summary and all(" ".join(sentence.split()) in index for sentence in summary)


def test_every_decimal_of_the_landing_sentences_is_a_number_of_results_json(site):
    model = json.loads((site.parent / "results.json").read_text())
    text = report_site.landing_sentences(site / "index.html")
    assert text.count(".") > 10 and report_site.unbacked_decimals(text, model) == []
    # a number the model does not hold is caught
    assert report_site.unbacked_decimals("d = 9.87 [0.10, 0.20]", model) == ["9.87"]


def test_no_page_gives_one_network_two_intervals(site):
    model = json.loads((site.parent / "results.json").read_text())
    texts = {p.name: report_site.page_text(p) for p in site.glob("*.html")}
    assert sum(len(report_site.D_WITH_INTERVAL.findall(t)) for t in texts.values()) > 5
    assert report_site.second_intervals(texts, model) == []
    r = next(r for r in model["ieat"] if r["d"] is not None and r["ci_low"] is not None)
    other = f"d = {r['d']:.2f} [{r['ci_low'] - 0.05:.2f}, {r['ci_high']:.2f}]"
    assert report_site.second_intervals({"other.html": other}, model) == [("other.html", other)]
