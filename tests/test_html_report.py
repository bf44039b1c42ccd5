"""The static HTML report: the headline table's verdicts and known answers (hand-made cases), the table
renderer's conventions (intervals, seed ranges, p-values at their floor as bounds), and a report built
from tests/report_data.py's small tables (every link resolves, captions beside tables, provenance wraps)."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import report_data as rd
import report_site
from conftest import ROOT, run_snakemake

from biastransfer.report.formatting import p_cell
from biastransfer.report.glossary import GLOSSARY
from biastransfer.report.headline import finetuning_phrase, headline_table
from biastransfer.report.html import html_table
from biastransfer.report.results import results_model, validate
from biastransfer.report.site import BUNDLE_LINK, BUNDLE_NOTE
from biastransfer.stats.link import family_adjusted
from biastransfer.workflow import config as cfg
from biastransfer.workflow.config import seeds_per_dataset
from biastransfer.workflow.plan import SUMMARIES, Plan

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
    assert after["verdict"] == (
        "significant in 0 of 2 seeds; opposite direction (|d| >= 0.5), two-sided p < 0.001 (the largest over seeds)"
    )
    small = [dict(stage=f"ft-ft-seed{s}", seed=s, d=-0.2, p=0.8, p2=0.5) for s in (0, 1)]
    quiet = headline_table(ieat_rows(pre, *small), NO_BTS, {"s": [{**TEST, "role": "control"}]}, alpha=0.01)
    assert quiet.iloc[1]["verdict"] == "significant in 0 of 2 seeds" and quiet.iloc[1]["held"] == ""


FACTS = {**report_site.FACTS, "models": ["m"], "analysis_sets": ["s"], "seeds": {"ft": [0, 1]}, "scratch_seeds": {}}


def link_rows(low: float, high: float, p: float) -> pd.DataFrame:
    """The link summary's rows of the finetuned network for test ``t``, two seeds and their pooled row (contrast
    interval low..high, bootstrap p ``p`` with the floor of 1000 replicates), its family adjusted."""
    base = dict(analysis_set="s", test="t", role="planted", dataset="ft", network="finetuned", model="m")
    pair = dict(attribute="x", first="a", second="b", threshold="0.5", level=0.95, contrast_pvalue_floor=2 / 1001)
    contrast = {"contrast": (low + high) / 2, "contrast_low": low, "contrast_high": high, "contrast_pvalue": p}
    return family_adjusted(pd.DataFrame([{**base, **pair, **contrast, "seed": seed} for seed in ("0", "1", "pooled")]))


def test_the_summary_says_what_was_planted_what_was_found_changed_and_acted_on_in_five_sentences():
    pre = dict(stage="pretrained", d=1.2, p=1e-5, p2=1e-5)
    seeds = [dict(stage=f"ft-ft-seed{s}", seed=s, d=d, p=p, p2=p) for s, (d, p) in enumerate([(0.9, 1e-5), (0.2, 0.4)])]
    scratch = ieat_rows(dict(stage="scratch-ft-seed0", seed=0, d=-0.8, p=0.99, p2=1e-4)).assign(finetune_dataset="ft")
    tables = {
        "ieat": ieat_rows(pre, *seeds),
        "bts": NO_BTS,
        "ieat_scratch": scratch,
        "link": link_rows(0.01, 0.2, 2 / 1001),
    }
    planted = {**FACTS, "planted": {"biased": {"a": 0.9}, "ft": {}}}
    model = results_model(tables, facts=planted, tests={"s": [{**TEST, "role": "planted"}]}, alpha=0.01)
    validate(model)
    one, pretrained, after, scratch_words, predictions = model["summary"]
    assert one == (
        "Planted: the pretraining data biased put a beside person_a in 90% of its scenes with a person; the "
        "finetuning data: ft has no such co-occurrence. 1 model (m), finetuned on ft with 2 seeds; 1 iEAT test: t "
        "(a vs b with x vs y, planted)."
    )
    assert pretrained == (
        "Pretrained, 1 of 1 iEATs significant: t significant, d = 1.20 [0.90, 1.50], adjusted p < 0.001."
    )
    assert after == (
        "After finetuning, 0 of 1 iEATs are significant in every seed and 0 in none: t on ft: significant in 1 of 2 "
        "seeds, d 0.20 to 0.90 over 2 seeds."
    )
    assert scratch_words == (
        "Trained from scratch on the finetuning data alone (no pretraining): t d = -0.80 [-1.10, -0.50], not "
        "significant; it has none of the finetuned networks' large effects (|d| >= 0.5)."
    )
    assert predictions == (
        "In the predictions (the primary measure of each pair, its p Holm-adjusted over the network's pairs): m "
        "finetuned on ft amplifies t (contrast +0.105 [0.010, 0.200], adjusted p <= 0.002, 2 seeds pooled)."
    )
    (record,) = model["predictions"]
    assert (record["p_adjusted"], record["family"], record["family_size"]) == (2 / 1001, "finetuned m on ft", 1)
    assert (record["p_method"], record["adjust"]) == ("percentile bootstrap, two-sided (inverts the interval)", "holm")
    assert model["known_answers"] == [
        {
            "analysis_set": "s",
            "test": "t",
            "model": "m",
            "checks": "planted pair found (significant, d > 0)",
            "held": True,
        }
    ]
    assert [r["network"] for r in model["ieat"]] == ["pretrained", "finetuned", "finetuned", "scratch"]
    assert [r["opposite"] for r in model["ieat"]] == [False, False, False, True]
    neither = results_model({**tables, "link": link_rows(-0.1, 0.2, 0.4)}, facts=FACTS, tests={"s": [TEST]}, alpha=0.01)
    assert (
        "m finetuned on ft neither amplifies nor reduces t (contrast +0.050 [-0.100, 0.200], adjusted p = 0.4"
        in (neither["summary"][-1])
    )
    # an interval that excludes 0 with an adjusted p above alpha: the adjusted p decides, as everywhere else
    short = results_model({**tables, "link": link_rows(0.01, 0.2, 0.03)}, facts=FACTS, tests={"s": [TEST]}, alpha=0.01)
    assert short["predictions"][0]["verdict"] == "neither"
    assert not neither["known_answers"]
    # a scratch network with the finetuned seeds' large effect, same sign: the finetuning data alone can make it
    large = ieat_rows(dict(stage="scratch-ft-seed0", seed=0, d=0.7, p=1e-3, p2=1e-3)).assign(finetune_dataset="ft")
    shared = results_model({**tables, "ieat_scratch": large}, facts=FACTS, tests={"s": [TEST]}, alpha=0.01)
    assert shared["summary"][3].endswith(
        "it has the finetuned networks' large effect (|d| >= 0.5, same sign) for t, which the finetuning data alone "
        "can therefore produce."
    )


def test_a_prediction_family_whose_bootstrap_floor_cannot_reach_alpha_is_said():
    tables = {"ieat": ieat_rows(dict(stage="pretrained", d=1.2, p=1e-5, p2=1e-5)), "bts": NO_BTS}
    coarse = link_rows(0.01, 0.2, 2 / 101).assign(contrast_pvalue_floor=2 / 101)  # 100 replicates
    model = results_model({**tables, "link": coarse}, facts=FACTS, tests={"s": [TEST]}, alpha=0.01)
    assert model["predictions"][0]["verdict"] == "neither"
    assert (
        "Whether the predictions of finetuned m on ft act on a pair: its contrasts' bootstrap p cannot go below "
        "0.02, adjusted over its 1 pair not below 0.02, so none can reach alpha = 0.01 "
        "(analysis.predictions.bootstrap of at least 200 replicates could)."
    ) in model["cannot_tell"]
    fine = results_model({**tables, "link": link_rows(0.01, 0.2, 0.3)}, facts=FACTS, tests={"s": [TEST]}, alpha=0.01)
    assert not any("bootstrap p cannot" in line for line in fine["cannot_tell"])


def test_a_sentence_names_three_results_and_counts_the_rest():
    rows = [dict(stage="pretrained", d=1.2, p=1e-5, p2=1e-5)]
    tables = {"ieat": pd.concat([ieat_rows(*rows).assign(test=f"t{i}") for i in range(5)]), "bts": NO_BTS}
    tests = {"s": [{**TEST, "name": f"t{i}"} for i in range(5)]}
    model = results_model(tables, facts={**FACTS, "seeds": {}}, tests=tests, alpha=0.01)
    assert model["summary"][0] == (
        "1 model (m), pretrained only; 5 iEAT tests: t0 (a vs b with x vs y); t1 (a vs b with x vs y); t2 (a vs b "
        "with x vs y); and 2 more tests (the table below)."
    )
    assert model["summary"][1].count("significant, d = 1.20") == 3
    assert model["summary"][1].endswith("; and 2 more iEATs (the table below).")


def test_the_results_schema_refuses_a_verdict_outside_its_words():
    tables = {"ieat": ieat_rows(dict(stage="pretrained", d=1.2, p=1e-5, p2=1e-5)), "bts": NO_BTS}
    model = results_model(tables, facts=FACTS, tests={"s": [TEST]}, alpha=0.01)
    validate(model)
    model["ieat"][0]["verdict"] = "borderline"
    with pytest.raises(ValueError, match="ieat/0/verdict"):
        validate(model)
    with pytest.raises(ValueError, match="summary"):
        validate({**model, "summary": ["s"] * 6, "ieat": []})


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
            "p": [0.002, 0.3],
            "p_floor": [0.002, 0.002],
            "p_holm": [0.008, 0.6],
            "held": ["yes", "no"],
        }
    )
    html = html_table(frame, table_id="t")
    headers = re.findall(r'<th scope="col">(.*?)</th>', html)
    assert headers == ["model", "d", "d range", "CI", "p", "p holm", "held"]  # the floor is not a column
    assert "0.25 to 0.75" in html and "[0.10, 0.90]" in html and "[-0.60, 0.10]" in html
    assert "≤ 0.002" in html and "≤ 0.008" in html and ">0.6<" in html  # a floor p and its adjusted p as bounds
    # below 0.001 a p is written as a bound, never with digits its method cannot support
    assert [p_cell(p, floor) for p, floor in ((1e-5, 1e-5), (1.3e-8, 0.0), (4e-4, None), (0.0, None))] == [
        "< 0.001"
    ] * 4
    assert 'data-sort="0.002"' in html and 'class="yes">yes' in html and 'class="no">no' in html
    assert 'class="sortable"' in html


def test_an_interval_beside_its_own_column_is_headed_by_it_and_a_repeated_header_is_an_error():
    frame = pd.DataFrame(
        {
            "d_pretrained": [1.2],
            "d_pretrained_low": [0.6],
            "d_pretrained_high": [1.6],
            "d": [1.1],
            "d_low": [0.5],
            "d_high": [1.5],
            "retention_ci_low": [-0.1],
            "retention_ci_high": [0.4],
        }
    )
    headers = re.findall(r'<th scope="col">(.*?)</th>', html_table(frame, table_id="t"))
    assert headers == ["d pretrained", "d pretrained CI", "d", "d CI", "retention CI"]
    with pytest.raises(
        ValueError, match=r"table 'link': column header 'd CI' names more than one column: d_low, d_high; d_CI"
    ):
        html_table(frame.assign(d_CI=0.0), table_id="link")


def test_a_long_name_may_break_at_its_underscores_where_the_table_asks_for_it():
    frame = pd.DataFrame({"test": ["refrigerator_vs_stop_sign"], "d": [0.5]})
    assert "<td>refrigerator_vs_stop_sign</td>" in html_table(frame, table_id="t")  # the text as it is
    broken = html_table(frame, table_id="t", breaks="_")
    assert "<td>refrigerator_<wbr>vs_<wbr>stop_<wbr>sign</td>" in broken and 'class="scroll breaks"' in broken


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
    assert pages == ["figures.html", "findings.html", "glossary.html", "index.html", "provenance.html", "tables.html"]
    for page in site.glob("*.html"):
        text = page.read_text()
        assert "<script>" in text and "http://" not in text and "https://" not in text, page.name  # works offline
        for link in re.findall(r'(?:href|src)="([^"#]+)', text):
            if link != "../report.html":  # Snakemake's own report (the rule graph), built beside it by --report
                assert (site / link).is_file(), f"{page.name} links to {link}, which is not in the report"


def _text(html: str) -> str:
    return re.sub(r"<[^>]+>", "", re.sub(r"<(script|style)\b.*?</\1>", "", html, flags=re.S))


def test_the_bundle_unpacked_alone_resolves_every_link_and_holds_every_cited_table(site, tmp_path):
    with zipfile.ZipFile(site.parent / "report.zip") as bundle:
        bundle.extractall(tmp_path)
    unpacked = tmp_path / "report"
    assert sorted(p.name for p in unpacked.glob("*.html")) == sorted(p.name for p in site.glob("*.html"))
    ids = {p.name: set(re.findall(r'\bid="?([\w-]+)', p.read_text())) for p in unpacked.glob("*.html")}
    for page in unpacked.glob("*.html"):
        text = page.read_text()
        for link in re.findall(r'(?:href|src)="([^"]+)"', text):
            target, _, anchor = link.partition("#")
            assert not target or (unpacked / target).is_file(), f"{page.name} links to {link}, not in the bundle"
            if anchor:
                assert anchor in ids[target or page.name], f"{page.name} links to {link}: no such anchor"
        for cited in set(re.findall(r"results/[\w./-]*\.csv", _text(text))):  # each table a caption cites
            copy = f"files/{cited.removeprefix('results/')}"
            assert (unpacked / copy).is_file() and f'<a href="{copy}">{cited}</a>' in text, (page.name, cited)
    assert "similarity_change.csv" in (unpacked / "figures.html").read_text()  # intra.rst's citation, linked
    # the folder's landing page links the bundle beside it; the bundle's own says it is the bundle
    assert BUNDLE_LINK in (site / "index.html").read_text() and (site.parent / "report.zip").is_file()
    assert BUNDLE_NOTE in (unpacked / "index.html").read_text()


def test_every_summary_a_caption_cites_is_copied_into_the_report():
    """The html_report rule copies every summary the run writes (its input ``cited``), so a caption may cite
    any summary, and only a summary, of results/summary/."""
    for caption in (ROOT / "workflow" / "report").glob("*.rst"):
        for name in re.findall(r"results/summary/(\w+)\.csv", caption.read_text()):
            assert name in SUMMARIES, f"{caption.name} cites results/summary/{name}.csv, which is no summary"


@pytest.mark.slow
def test_the_report_rule_copies_every_summary_curve_and_layer_profile_of_the_demo(tmp_path):
    done = run_snakemake("-n", "--cores", "1", "results/report/index.html", cwd=tmp_path, timeout=300)
    job = done.stdout.split("rule html_report:", 1)[1].split("output:", 1)[0]
    plan = Plan(cfg.read_configs([ROOT / "config" / "config.yaml"]), ROOT)
    for wanted in (
        *plan.summaries(*plan.written_summaries),
        "results/summary/config.yaml",
        *plan.finetune_runs("curve.csv"),
        "results/layers/synthetic/democnn/profile.csv",
    ):
        assert wanted in job, wanted


def test_the_findings_and_table_captions_link_their_terms_to_the_glossary(site):
    glossary = (site / "glossary.html").read_text()
    assert all(f'<dt id="{anchor}">' in glossary for anchor in GLOSSARY)
    assert 'href="glossary.html"' in (site / "index.html").read_text()  # in the navigation of every page
    for name in ("findings.html", "tables.html"):
        text = (site / name).read_text()
        anchors = re.findall(r'<a class="term" href="glossary\.html#([\w-]+)">', text)
        assert "ieat" in anchors and len(anchors) == len(set(anchors)), name  # the first occurrence only
        assert not re.search(r"<t[hd][^>]*>[^<]*<a class=\"term\"", text)  # never in a table's cells
    methods = glossary[glossary.index('id="methods"') :]
    assert "alpha = 0.05" in methods and "@article{ranjit2023," in methods
    assert (
        'snakemake --cores 1 <a href="files/summary/ieat.csv">results/summary/ieat.csv</a> --forcerun ieat' in glossary
    )


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
    sections = dict(re.findall(r'<section id="(table-[^"]*)">(.*?)</section>', text, flags=re.S))
    assert len(sections) == 6 and all('<table class="sortable"' in body for body in sections.values())
    ids = re.findall(r'<table class="sortable" id="([^"]*)"', text)
    assert len(ids) == len(set(ids)) and not set(ids) & set(sections)  # a table's id is its own
    # the 1,759-row trajectory table: a summary on the page, every row in the CSV it links
    trajectory = next(body for anchor, body in sections.items() if anchor.startswith("table-trajectories"))
    assert trajectory.count("<tr>") <= 60 and 'Every row: <a href="files/' in trajectory
    assert (
        "Bias transfer scores on analysis set <strong>coco</strong>" in text
    )  # the caption, rendered, beside the table
    for suffix in (".csv", "_tabular.tex", ".tex"):
        assert f'ieat_openimages{suffix}" download>' in text
    assert "≤" in (site / "index.html").read_text() or "≤" in text


def test_each_figure_opens_its_full_size_png_and_offers_its_vector_files(site):
    figure = re.search(r"<figure .*?</figure>", (site / "figures.html").read_text(), re.S).group(0)
    png = re.search(r'<img src="([^"]+)"', figure).group(1)
    assert png.endswith("intra.png") and re.search(rf'<a href="{re.escape(png)}"[^>]*><img ', figure)
    downloads = re.findall(r'<a href="([^"]+)" download>([^<]+)</a>', figure)
    assert [(Path(href).name, text) for href, text in downloads] == [("intra.pdf", "PDF"), ("intra.svg", "SVG")]
    assert all((site / href).is_file() for href, _ in downloads)


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

    def write(items, cited=(), model=None):
        write_site(
            tmp_path / "out",
            run={},
            model=model or {},
            findings_rst="",
            provenance=pd.DataFrame(),
            items=items,
            config={},
            cited=cited,
        )

    with pytest.raises(FileNotFoundError, match="no.png"):
        write([item])
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match="unknown file role"):
        write([{**item, "files": {"gif": "x"}}])
    with pytest.raises(FileNotFoundError, match="cites .*summary/gone.csv"):
        write([], cited=[str(tmp_path / "summary" / "gone.csv")])
    with pytest.raises(KeyError, match="'settings'"):  # the methods paragraph's settings
        write([], model={"run": {}})
    assert not (tmp_path / "out").exists()


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
    findings = (tmp_path / "results" / "summary" / "findings.rst").read_text()
    assert f"not significant ({why}, p = " in findings and "d = nan" not in findings.lower()
    for page in index.parent.glob("*.html"):
        text = re.sub(r"<[^>]+>", " ", page.read_text())
        assert not re.search(r"\bnan\b", text, flags=re.IGNORECASE), page.name


def test_the_landing_page_shows_the_forest_plot_of_a_small_run_and_links_that_of_a_large_one():
    from biastransfer.report.site import FOREST_ROWS, _forest

    forest = {"kind": "figure", "title": "Effect sizes", "files": {"png": "files/figures/ieat_forest.png"}}
    other = {"kind": "figure", "title": "Heat map", "files": {"png": "files/figures/ieat_heatmap.png"}}
    small = _forest([other, forest], {"s": FOREST_ROWS - 10, "t": 10})
    assert small.startswith('<figure id="forest">') and '<img src="files/figures/ieat_forest.png"' in small
    large = _forest([other, forest], {"s": FOREST_ROWS - 10, "t": 11})
    assert "<img" not in large and '<a href="files/figures/ieat_forest.png">forest plot</a>' in large
    assert _forest([other], {"s": 3}) == ""
    # a run beyond FOREST_ROWS draws one forest plot per analysis set: each linked, with its rows
    per_set = [
        {"kind": "figure", "title": f"Effect sizes, {a}", "files": {"png": f"files/figures/ieat_forest_{a}.png"}}
        | {"wildcards": {"analysis_set": a}}
        for a in ("coco", "openimages")
    ]
    both = _forest([other, *per_set], {"coco": 90, "openimages": 180})
    assert (
        "<img" not in both
        and (
            '(270 rows), one forest plot per analysis set: <a href="files/figures/ieat_forest_coco.png">coco</a> '
            '(90 rows), <a href="files/figures/ieat_forest_openimages.png">openimages</a> (180 rows)'
        )
        in both
    )


def test_the_results_model_carries_the_linear_cka_of_each_network():
    cka = pd.DataFrame(
        [
            dict(stage="ft-ft", network="finetuned", seed="pooled", cka=0.8, ci_low=0.76, representation="kept"),
            dict(stage="scratch-ft", network="scratch", seed="pooled", cka=0.6, ci_low=float("nan"), representation=""),
        ]
    ).assign(analysis_set="s", model="m", finetune_dataset="ft")
    tables = {"ieat": ieat_rows(dict(stage="pretrained", d=1.2, p=1e-5, p2=1e-5)), "bts": NO_BTS, "cka": cka}
    model = results_model(tables, facts=FACTS, tests={"s": [TEST]}, alpha=0.01)
    validate(model)
    assert [(r["stage"], r["cka"], r["representation"]) for r in model["representation"]] == [
        ("ft-ft", 0.8, "kept"),
        ("scratch-ft", 0.6, ""),
    ]
    assert model["representation"][1]["ci_low"] is None
    no_cka = results_model(
        {k: v for k, v in tables.items() if k != "cka"}, facts=FACTS, tests={"s": [TEST]}, alpha=0.01
    )
    assert no_cka["representation"] == []
