"""The static HTML report: the headline table's verdicts and known answers (hand-made cases), the table
renderer's conventions (intervals, seed ranges, p-values at their floor as bounds), and a report built
from tests/report_data.py's small tables (every link resolves, captions beside tables, provenance wraps)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import report_data as rd
import report_site

from biastransfer.report.headline import finetuning_phrase, headline_summary, headline_table
from biastransfer.report.html import html_table
from biastransfer.workflow.config import seeds_per_dataset

TEST = {"name": "t", "X": "x", "Y": "y", "A": "a", "B": "b"}


def ieat_rows(*rows: dict) -> pd.DataFrame:
    """iEAT summary rows for test ``t``: each dict gives stage, seed, d, p, p2 (and optionally holm)."""
    out = []
    for r in rows:
        pretrained = r["stage"] == "pretrained"
        out.append(
            dict(
                analysis_set="s",
                model="m",
                stage=r["stage"],
                finetune_dataset="" if pretrained else "ft",
                seed="" if pretrained else str(r["seed"]),
                test="t",
                X="x",
                Y="y",
                A="a",
                B="b",
                effect_size=r["d"],
                ci_low=r["d"] - 0.3,
                ci_high=r["d"] + 0.3,
                pvalue=r["p"],
                pvalue_two_sided=r["p2"],
                pvalue_floor=1e-5,
                alternative="greater",
                pvalue_holm=r.get("holm", r["p"]),
                pvalue_bh=r["p"],
            )
        )
    return pd.DataFrame(out)


NO_BTS = rd.bts_table(rd.similarity_table()).iloc[:0]  # a BTS summary without rows


def known(role: str, *rows: dict) -> list[tuple[str, str, str]]:
    table = headline_table(ieat_rows(*rows), NO_BTS, {"s": [{**TEST, "role": role}]}, alpha=0.01)
    return list(zip(table["stage"], table["known_answer"], table["held"]))


def test_a_planted_pair_is_found_only_when_significant_in_its_direction():
    ((_, answer, held),) = known("planted", dict(stage="pretrained", d=1.2, p=1e-5, p2=1e-5))
    assert answer.startswith("planted pair found") and held == "yes"
    assert (
        known("planted", dict(stage="pretrained", d=1.2, p=0.001, p2=0.002, holm=0.02))[0][2] == "no"
    )  # adjusted p >= alpha


def test_a_control_pair_holds_only_when_no_direction_is_significant():
    assert known("control", dict(stage="pretrained", d=-0.1, p=0.67, p2=0.65))[0][2] == "yes"
    assert known("control", dict(stage="pretrained", d=-1.2, p=1.0, p2=1e-5))[0][2] == "no"  # a reverse association


def test_after_finetuning_a_control_pair_has_no_known_answer_and_its_reverse_shift_is_a_verdict():
    pre = dict(stage="pretrained", d=-0.1, p=0.67, p2=0.65)
    seeds = [
        dict(stage=f"ft-ft-seed{s}", seed=s, d=d, p=1.0, p2=p2)
        for s, (d, p2) in enumerate([(-1.1, 1e-5), (-0.9, 2e-5)])
    ]
    table = headline_table(ieat_rows(pre, *seeds), NO_BTS, {"s": [{**TEST, "role": "control"}]}, alpha=0.01)
    after = table.iloc[1]
    assert after["stage"] == "finetuned on ft, 2 seeds" and after["known_answer"] == after["held"] == ""
    assert after["verdict"] == "significant in 0 of 2 seeds; opposite direction (|d| >= 0.5), two-sided p = 2e-05"
    small = [dict(stage=f"ft-ft-seed{s}", seed=s, d=-0.2, p=0.8, p2=0.5) for s in (0, 1)]
    quiet = headline_table(ieat_rows(pre, *small), NO_BTS, {"s": [{**TEST, "role": "control"}]}, alpha=0.01)
    assert quiet.iloc[1]["verdict"] == "significant in 0 of 2 seeds" and quiet.iloc[1]["held"] == ""


def test_the_summary_says_what_was_run_each_known_answer_and_what_could_not_be_told():
    pre = dict(stage="pretrained", d=1.2, p=1e-5, p2=1e-5)
    seeds = [dict(stage=f"ft-ft-seed{s}", seed=s, d=d, p=p, p2=p) for s, (d, p) in enumerate([(0.9, 1e-5), (0.2, 0.4)])]
    table = headline_table(ieat_rows(pre, *seeds), NO_BTS, {"s": [{**TEST, "role": "planted"}]}, alpha=0.01)
    text = " ".join(
        headline_summary(
            table, synthetic=True, models=["m"], finetuned="finetuned on ft with 2 seeds", alpha=0.01, adjust="holm"
        )
    )
    assert text.startswith("This is the synthetic planted-bias demo: person_a and person_b are drawn figures")
    assert "1 model (m), finetuned on ft with 2 seeds; every verdict reads the Holm-adjusted p at alpha = 0.01." in text
    assert (
        "Known answer, planted pair found (significant, d > 0): held for m on s: t (d = 1.20 [0.90, 1.50], adjusted p <= 1e-05)."
        in text
    )
    assert "After finetuning, 0 of 1 iEATs are significant in every seed and 0 in none" in text
    assert "1 of 2 iEAT verdicts are not significant" not in text  # one seed of two is significant
    own = " ".join(headline_summary(table, synthetic=False, models=["m"], finetuned="x", alpha=0.01, adjust="bh"))
    assert "synthetic" not in own and "Benjamini-Hochberg" in own


def test_the_first_sentence_counts_each_datasets_own_seeds():
    def phrase(datasets, seeds):
        return finetuning_phrase(seeds_per_dataset({"finetune": {"datasets": datasets, "seeds": seeds}}))

    assert phrase(["coco", "openimages"], {"coco": [0, 1, 2], "openimages": [0]}) == (
        "finetuned on coco with 3 seeds, openimages with 1 seed"
    )  # the paper's seeds: two datasets, not "2 seeds"
    assert (
        phrase(["a", "b"], {"a": [0, 1], "b": [3, 4]}) == phrase(["a", "b"], [0, 1]) == "finetuned on a, b with 2 seeds"
    )
    assert phrase([], [0, 1]) == "pretrained only"
    named = {"finetune": {"datasets": ["coco", "openimages"], "seeds": {"coco": [0, 1, 2], "openimages": [0]}}}
    assert (
        finetuning_phrase(seeds_per_dataset(named), name_seeds=True)
        == "finetuned on coco with seeds 0, 1, 2, openimages with seed 0"
    )


def test_verdicts_over_seeds_count_the_significant_seeds_and_show_the_range():
    seeds = [
        dict(stage=f"ft-ft-seed{s}", seed=s, d=d, p=p, p2=p)
        for s, (d, p) in enumerate([(0.9, 1e-5), (0.4, 0.2), (0.6, 0.004)])
    ]
    table = headline_table(
        ieat_rows(dict(stage="pretrained", d=1.0, p=1e-5, p2=1e-5), *seeds), NO_BTS, {"s": [TEST]}, alpha=0.01
    )
    row = table.iloc[1]
    assert row["verdict"] == "significant in 2 of 3 seeds" and row["p"] == 0.2
    assert (row["estimate_min"], row["estimate_max"]) == (0.4, 0.9) and row["estimate"] == pytest.approx(1.9 / 3)
    assert table["known_answer"].eq("").all() and np.isnan(table.iloc[0]["estimate_min"])


def test_bad_alpha_or_adjustment_is_an_error():
    with pytest.raises(ValueError, match="alpha"):
        headline_table(ieat_rows(dict(stage="pretrained", d=1, p=0.1, p2=0.1)), NO_BTS, {"s": [TEST]}, alpha=5)
    with pytest.raises(ValueError, match="adjust"):
        headline_table(
            ieat_rows(dict(stage="pretrained", d=1, p=0.1, p2=0.1)), NO_BTS, {"s": [TEST]}, alpha=0.05, adjust="bonf"
        )


def test_table_cells_merge_intervals_and_ranges_and_print_floor_p_values_as_bounds():
    frame = pd.DataFrame(
        {
            "model": ["m", "n"],
            "d": [0.5, -0.25],
            "d_min": [0.25, np.nan],
            "d_max": [0.75, np.nan],
            "ci_low": [0.1, -0.6],
            "ci_high": [0.9, 0.1],
            "p": [1e-4, 0.3],
            "p_floor": [1e-4, 1e-4],
            "p_holm": [4e-4, 0.6],
            "held": ["yes", "no"],
        }
    )
    html = html_table(frame, table_id="t")
    headers = re.findall(r'<th scope="col">(.*?)</th>', html)
    assert headers == ["model", "d", "d range", "CI", "p", "p holm", "held"]  # the floor is not a column
    assert "0.25 to 0.75" in html and "[0.10, 0.90]" in html and "[-0.60, 0.10]" in html
    assert "≤ 0.0001" in html and "≤ 0.0004" in html and ">0.6<" in html  # a floor p and its adjusted p as bounds
    assert 'data-sort="0.0001"' in html and 'class="yes">yes' in html and 'class="no">no' in html
    assert 'class="sortable"' in html


def test_numbers_print_the_decimals_their_interval_supports():
    from biastransfer.report.html import interval_decimals

    assert [interval_decimals(*e) for e in ((0.65, 1.6), (-1.0, 3.0), (0.9831, 0.9834), (0.5, 0.5))] == [2, 2, 5, 2]
    frame = pd.DataFrame(
        {
            "estimate": [0.98312, -0.84567, 0.123456],
            "estimate_min": [0.98301, -0.96, np.nan],
            "estimate_max": [0.98327, -0.78, np.nan],
            "ci_low": [0.86, np.nan, np.nan],
            "ci_high": [1.0, np.nan, np.nan],
        }
    )
    cells = re.findall(r"<td[^>]*>(.*?)</td>", html_table(frame, table_id="t"))
    # an estimate follows its CI, else its range; a narrow range is not rounded to one value
    assert cells[:3] == ["0.98", "0.98301 to 0.98327", "[0.86, 1.00]"]
    assert cells[3:5] == ["-0.85", "-0.96 to -0.78"] and cells[6] == "0.123"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return report_site.build(tmp_path_factory.mktemp("site")).parent


def test_a_table_without_rows_is_named_not_shown(site):
    tables = (site / "tables.html").read_text()
    assert "Not shown, without rows in this run: Ours vs published." in tables
    assert 'id="table-comparison-with-the-paper' not in tables and "Comparison with the paper" not in tables
    assert "Comparison with the paper" not in (site / "index.html").read_text()
    assert list((site / "files").rglob("paper_comparison.csv"))  # in the bundle, as every report file is


def test_every_page_and_every_link_of_the_report_resolves(site):
    pages = sorted(p.name for p in site.glob("*.html"))
    assert pages == ["figures.html", "findings.html", "index.html", "provenance.html", "tables.html"]
    for page in site.glob("*.html"):
        text = page.read_text()
        assert "<script>" in text and "http://" not in text and "https://" not in text, page.name  # works offline
        for link in re.findall(r'(?:href|src)="([^"#]+)', text):
            if link != "../report.html":  # Snakemake's own report (the rule graph), built beside it by --report
                assert (site / link).is_file(), f"{page.name} links to {link}, which is not in the report"


def test_the_overview_answers_first(site):
    text = (site / "index.html").read_text()
    order = ["In short", "Known answers", 'id="headline"', "What was run", "Sections"]
    assert [text.index(word) for word in order] == sorted(text.index(word) for word in order)
    assert re.search(r"Known answers: \d of 4 held", text)  # 2 planted + 2 control pairs, pretrained only
    headline = text[text.index('id="headline"') :]
    assert re.findall(r'<th scope="col">(.*?)</th>', headline)[0] == "verdict"  # the verdict first
    assert "Cite this" in text and "arXiv:2303.07615" in text and "version 0." in text  # from CITATION.cff
    for page in ("findings.html", "tables.html", "figures.html", "provenance.html"):
        assert f'href="{page}"' in text


def test_tables_are_html_with_their_caption_and_downloads(site):
    text = (site / "tables.html").read_text()
    assert text.count('<table class="sortable"') == 2
    assert (
        "Bias transfer scores on analysis set <strong>coco</strong>" in text
    )  # the caption, rendered, beside the table
    for suffix in (".csv", "_tabular.tex", ".tex"):
        assert f'ieat_openimages{suffix}" download>' in text
    assert "≤" in (site / "index.html").read_text() or "≤" in text


def test_the_provenance_page_wraps_long_digests_instead_of_a_wide_table(site):
    text = (site / "provenance.html").read_text()
    assert "<table" not in text and f'<dd class="hash">{report_site.LONG_HASH}</dd>' in text
    assert "overflow-wrap: anywhere" in text


def test_the_provenance_page_opens_with_what_a_reviewer_cites_of_the_run(site):
    from importlib.metadata import version

    from biastransfer.provenance import workflow_provenance

    text = (site / "provenance.html").read_text()
    card = text.split('id="this-run"', 1)[1].split("</div>", 1)[0]
    assert "report built (UTC)" in card and f"snakemake {version('snakemake')}" in card
    assert f"git commit {workflow_provenance()['git_commit']}" in card
    config = report_site.CONFIG
    assert f"alpha {config['analysis']['ieat']['alpha']}" in card
    assert f"seeds {', '.join(map(str, config['finetune']['seeds']))}" in card
    assert "statistics: ieat" in card
    link = re.search(r'href="([^"]*config\.html)">the filled config', card)
    assert link and (site / link.group(1)).is_file()


def test_a_missing_file_is_an_error_naming_it_before_any_page_is_written(tmp_path):
    from biastransfer.report.site import write_site

    item = {
        "kind": "figure",
        "group": "g",
        "title": "t",
        "caption": "c.rst",
        "files": {"png": str(tmp_path / "no.png")},
    }

    def write(items):
        write_site(
            tmp_path / "out",
            run={},
            headline=pd.DataFrame(),
            summary=[],
            findings_rst="",
            provenance=pd.DataFrame(),
            items=items,
            config={},
        )

    with pytest.raises(FileNotFoundError, match="no.png"):
        write([item])
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match="unknown file role"):
        write([{**item, "files": {"gif": "x"}}])


def test_an_iEAT_whose_d_is_not_estimable_is_said_in_words_on_every_page(tmp_path, monkeypatch):
    """A test whose sets hold one image each (d NaN, not_estimable its reason, as ieat_table writes it): the
    findings, tables, overview and results.json are built, and say why instead of printing a number."""
    why = "d not estimable: X has 1, Y has 1 image(s); each of X, Y, A and B needs at least 2"
    full = rd.ieat_table

    def with_a_small_test():
        table = full().assign(not_estimable="")
        small = table["test"] == "fashion-random"
        table.loc[small, ["effect_size", "ci_low", "ci_high", "mean_difference", "pooled_sd"]] = np.nan
        table.loc[small, "not_estimable"] = why
        return table

    monkeypatch.setattr(rd, "ieat_table", with_a_small_test)
    index = report_site.build(tmp_path)
    findings = (tmp_path / "summary" / "findings.rst").read_text()
    assert f"not significant ({why}, p = " in findings and "d = nan" not in findings.lower()
    for page in index.parent.glob("*.html"):
        text = re.sub(r"<[^>]+>", " ", page.read_text())
        assert not re.search(r"\bnan\b", text, flags=re.IGNORECASE), page.name
