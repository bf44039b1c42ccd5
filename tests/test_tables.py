"""LaTeX tables from small fixed result tables: values, marks, escaping, and that each one compiles."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import report_data as rd
from pdf_fonts import font_types

from biastransfer.report import formatting, latex, tables
from biastransfer.report.formatting import BTS_COLUMNS
from biastransfer.report.headline import headline_table
from biastransfer.report.html import html_table
from biastransfer.scripting import run

RULE = formatting.Significance(0.05)  # the significance rule these tables are made with

PDFLATEX = shutil.which("pdflatex")
needs_latex = pytest.mark.skipif(PDFLATEX is None, reason="pdflatex not on PATH (install with .ci/install-latex.sh)")
SCRIPTS = Path(__file__).resolve().parents[1] / "workflow" / "scripts"


def compile_latex(document: str, folder: Path, name: str = "table") -> Path:
    """Compile with pdflatex; fail with the first error lines of the log."""
    (folder / f"{name}.tex").write_text(document)
    result = subprocess.run(
        [PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", f"{name}.tex"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
    )
    errors = [line for line in result.stdout.splitlines() if line.startswith("!")]
    assert result.returncode == 0, f"{name}: pdflatex failed: {errors or result.stdout[-2000:]}"
    pdf = folder / f"{name}.pdf"
    assert pdf.read_bytes()[:5] == b"%PDF-"
    outside = text_outside_page(pdf)
    assert not outside, f"{name}: text outside the page: {outside[:5]}"
    return pdf


def text_outside_page(pdf: Path) -> list[str]:
    """The words of a PDF whose box is not inside its page (pdftotext -bbox: one box per word)."""
    xml = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    outside = []
    for width, height, words in re.findall(r'<page width="([\d.]+)" height="([\d.]+)">(.*?)</page>', xml, flags=re.S):
        for x0, y0, x1, y1, word in re.findall(
            r'<word xMin="([-\d.]+)" yMin="([-\d.]+)" xMax="([-\d.]+)" yMax="([-\d.]+)">(.*?)</word>', words
        ):
            if min(float(x0), float(y0)) < 0 or float(x1) > float(width) or float(y1) > float(height):
                outside.append(f"{word!r} at x {float(x0):.0f}-{float(x1):.0f} of {float(width):.0f} pt")
    return outside


@pytest.fixture(scope="module")
def summaries(tmp_path_factory):
    paths = rd.write_all(tmp_path_factory.mktemp("summary"))
    return {
        "paths": paths,
        "bts": formatting.read_summary(paths["bts"], BTS_COLUMNS),
        "ieat": formatting.read_summary(paths["ieat"], tables.IEAT_COLUMNS),
        "finetune": formatting.read_summary(paths["finetune_metrics"], tables.FINETUNE_COLUMNS),
        "stats": formatting.read_summary(paths["analysis_sets"], ("analysis_set", "class", "n")),
    }


def data_rows(document: str) -> list[list[str]]:
    """Cells of the rows between the header's \\midrule and \\bottomrule (rules and spacers dropped)."""
    body = latex.tabular_of(document).split("\\midrule\n", 1)[1].split("\\bottomrule")[0]
    return [
        [c.strip() for c in line.removesuffix("\\\\").split("&")] for line in body.splitlines() if line.endswith("\\\\")
    ]


@pytest.mark.parametrize(
    ("text", "latex"),
    [
        ("car_man", r"car\_man"),
        ("a&b 50%", r"a\&b 50\%"),
        ("$x^2~{y}#", r"\$x\textasciicircum{}2\textasciitilde{}\{y\}\#"),
        ("back\\slash", r"back\textbackslash{}slash"),
    ],
)
def test_latex_escape(text, latex):
    assert formatting.latex_escape(text) == latex


@pytest.mark.parametrize(
    ("p", "text"),
    [
        (0.0071, "$0.007$"),
        (0.5, "$0.500$"),
        (0.001, "$0.001$"),
        (1e-5, "$10^{-5}$"),
        (2.5e-4, r"$2.5\times10^{-4}$"),
        (float("nan"), "--"),
    ],
)
def test_format_p(p, text):
    assert formatting.format_p(p) == text


@pytest.mark.parametrize(
    ("p", "floor", "latex", "words"),
    [
        (1e-5, 1e-5, r"$\leq10^{-5}$", "p < 0.001"),
        (2 / 5040, 2 / 5040, r"$\leq4.0\times10^{-4}$", "p < 0.001"),
        (0.0, 0.0, "$<10^{-16}$", "p < 0.001"),
        (2 / 720, 2 / 720, "$\\leq0.003$", "p <= 0.0028"),
        (0.03, 1e-5, "$0.030$", "p = 0.03"),
    ],
)
def test_a_p_at_its_floor_is_a_bound_and_never_zero(p, floor, latex, words):
    assert formatting.format_p(p, floor) == latex
    assert formatting.p_text(p, floor) == words


def test_ieat_table_flags_a_large_effect_against_the_tested_direction(summaries):
    ieat = summaries["ieat"].copy()
    ieat["effect_size"] = -0.8
    doc = tables.ieat_latex(ieat, "openimages", alpha=0.05)
    assert all("\\dagger" in row[3] for row in data_rows(doc))
    assert "direction opposite to the one tested" in doc
    ieat["effect_size"] = -0.3
    assert "\\dagger" not in "".join("".join(r) for r in data_rows(tables.ieat_latex(ieat, "openimages", alpha=0.05)))


def test_an_adjusted_p_is_a_bound_where_its_raw_p_is_at_the_floor():
    # Holm over 8 tests of p <= 1e-05: the adjusted p is at most 8e-05, not exactly 8e-05
    assert formatting.format_p(8e-5, formatting.adjusted_floor(1e-5, 1e-5, 8e-5)) == r"$\leq8.0\times10^{-5}$"
    assert formatting.p_text(8e-5, formatting.adjusted_floor(1e-5, 1e-5, 8e-5)) == "p < 0.001"
    assert formatting.adjusted_floor(0.03, 1e-5, 0.06) is None and formatting.format_p(0.06, None) == "$0.060$"


@pytest.mark.parametrize(
    ("alpha", "p", "marks"),
    [
        (0.05, 0.2, ""),
        (0.05, 0.05, ""),
        (0.05, 0.04, "*"),
        (0.05, 0.004, "**"),
        (0.05, 0.0004, "***"),
        (0.05, float("nan"), ""),
        (0.01, 0.03, ""),
        (0.01, 0.009, "*"),
        (0.01, 0.0009, "**"),
        (0.01, 0.00009, "***"),
    ],
)
def test_stars_follow_the_runs_alpha_one_star_is_significant(alpha, p, marks):
    rule = formatting.Significance(alpha)
    assert rule.stars(p) == marks
    assert rule.significant(p) == bool(marks)
    assert f"not significant at alpha = {alpha:g}" in rule.legend()


def test_a_significance_rule_needs_an_alpha_in_0_1_and_a_known_adjustment():
    with pytest.raises(ValueError, match="alpha"):
        formatting.Significance(1.5)
    with pytest.raises(ValueError, match="adjust"):
        formatting.Significance(0.05, "bonferroni")
    assert formatting.Significance(0.01, "bh").column == "pvalue_bh"


def test_bts_table_shows_pooled_scores_with_adjusted_p_and_marks(summaries):
    bts = summaries["bts"]
    doc = tables.bts_latex(bts, "coco", "coco", alpha=0.05)
    rows = data_rows(doc)
    assert [r[0] for r in rows] == [formatting.model_label(m) for m in rd.MODELS]
    for model, row in zip(rd.MODELS, rows):
        for offset, kind in ((1, "intra"), (6, "inter")):
            r = bts[
                (bts.model == model)
                & (bts.kind == kind)
                & (bts.seed == "pooled")
                & (bts.finetune_dataset == "coco")
                & (bts.analysis_set == "coco")
            ].iloc[0]
            seeds = bts[
                (bts.analysis_set == "coco")
                & (bts.finetune_dataset == "coco")
                & (bts.model == r.model)
                & (bts.kind == kind)
                & (bts.seed != "pooled")
            ].statistic
            spread = formatting.format_spread(seeds.min(), seeds.max())  # coco has three seeds
            assert row[offset] == formatting.format_number(r.statistic, mark=RULE.stars(r.pvalue_holm)) + spread
            assert row[offset + 1] == formatting.format_interval(r.ci_low, r.ci_high)
            assert row[offset + 2] == formatting.format_p(r.pvalue, r.pvalue_floor)
            assert row[offset + 3] == formatting.format_p(r.pvalue_holm)
            assert row[offset + 4] == str(len(rd.CLASSES["coco"]) if kind == "intra" else len(rd.PAIRS["coco"]))
    assert r"$p_{\mathrm{Holm}}$" in doc
    assert r"$p_{\mathrm{Benj}}$" in tables.bts_latex(bts, "coco", "coco", adjust="bh", alpha=0.05)


def test_ieat_table_mean_effect_and_largest_p_over_seeds(summaries):
    ieat = summaries["ieat"]
    doc = tables.ieat_latex(ieat, "openimages", alpha=0.05)
    rows = data_rows(doc)
    assert len(rows) == len(rd.MODELS) * len(rd.IEAT_TESTS["openimages"])
    first = rows[0]  # resnet18, car vs fashion
    assert first[:3] == ["ResNet18", "car", "fashion"]
    pick = ieat[
        (ieat.analysis_set == "openimages") & (ieat.model == "resnet18") & (ieat.A == "car") & (ieat.B == "fashion")
    ]
    pre = pick[pick.stage == "pretrained"].iloc[0]
    mark = RULE.stars(pre.pvalue_holm) + ("\\dagger" if pre.effect_size <= -0.5 else "")
    assert first[3:11] == [
        formatting.format_number(pre.effect_size, mark=mark),
        formatting.format_interval(pre.ci_low, pre.ci_high),
        f"${pre.mean_difference:.3g}$",  # d's numerator, the raw association, and its denominator, the pooled SD
        f"${pre.pooled_sd:.3g}$",
        formatting.format_p(pre.pvalue, pre.pvalue_floor),
        formatting.format_p(pre.pvalue_two_sided, pre.pvalue_floor),
        formatting.format_p(pre.pvalue_holm, formatting.adjusted_floor(pre.pvalue, pre.pvalue_floor, pre.pvalue_holm)),
        "" if RULE.significant(pre.pvalue_holm) else "$1.1$",  # the detectable |d| beside a non-significant verdict
    ]
    coco = pick[pick.finetune_dataset == "coco"]
    assert len(coco) == 3
    mark = RULE.stars(coco.pvalue_holm.max()) + ("\\dagger" if coco.effect_size.mean() <= -0.5 else "")
    spread = formatting.format_spread(coco.effect_size.min(), coco.effect_size.max())  # over the three seeds
    expected_d = formatting.format_number(coco.effect_size.mean(), mark=mark) + spread
    assert first[11:19] == [
        expected_d,
        formatting.format_interval(coco.ci_low.min(), coco.ci_high.max()),
        f"${coco.mean_difference.mean():.3g}$",
        f"${coco.pooled_sd.mean():.3g}$",
        formatting.format_p(coco.pvalue.max(), 1e-4),
        formatting.format_p(coco.pvalue_two_sided.max(), 1e-4),
        formatting.format_p(
            coco.pvalue_holm.max(), formatting.adjusted_floor(coco.pvalue.max(), 1e-4, coco.pvalue_holm.max())
        ),
        "" if RULE.significant(coco.pvalue_holm.max()) else "$1.1$",
    ]
    assert rows[1][0] == ""  # the model name is printed once per block
    assert "Finetuned on \\texttt{coco}" in doc and "Finetuned on \\texttt{openimages}" in doc


def test_ieat_caption_says_how_the_p_values_were_computed(summaries):
    ieat = summaries["ieat"]
    assert "$p$: one-sided Monte Carlo permutation p-value;" in tables.ieat_latex(ieat, "openimages", alpha=0.05)
    two_sided = ieat.assign(alternative="two-sided", method=np.where(ieat.index % 2 == 0, "exact", "permutation"))
    assert "$p$: two-sided exact permutation/Monte Carlo permutation p-value;" in tables.ieat_latex(
        two_sided, "openimages", alpha=0.05
    )
    with pytest.raises(ValueError, match="iEAT summary.*alternative, method"):
        tables.ieat_latex(ieat.drop(columns=["alternative", "method"]), "openimages", alpha=0.05)


def test_finetune_table_mean_and_sample_sd_over_seeds(summaries):
    metrics = summaries["finetune"]
    rows = data_rows(tables.finetune_latex(metrics, "coco"))
    values = metrics[(metrics.dataset == "coco") & (metrics.model == "resnet18")]["metric_value"]
    assert rows[0][0] == "ResNet18"
    assert rows[0][7] == f"${values.mean():.3f} \\pm {np.std(values, ddof=1):.3f}$"
    assert rows[0][8] == "3"
    single = data_rows(tables.finetune_latex(metrics, "openimages"))
    assert "\\pm" not in single[0][7] and single[0][6] == "Micro F1"


def test_finetune_settings_that_differ_between_seeds_are_an_error(summaries):
    metrics = summaries["finetune"].copy()
    metrics.loc[(metrics.dataset == "coco") & (metrics.model == "resnet18") & (metrics.seed == "1"), "lr"] = 0.5
    with pytest.raises(ValueError, match=r"'coco'/'resnet18' seeds differ in lr"):
        tables.finetune_latex(metrics, "coco")


def test_analysis_set_table_counts_and_total(summaries):
    rows = data_rows(tables.analysis_set_latex(summaries["stats"], "coco"))
    assert rows[:-1] == [[formatting.latex_escape(c), str(10 + i)] for i, c in enumerate(rd.CLASSES["coco"])]
    assert rows[-1] == ["Total", str(sum(10 + i for i in range(len(rd.CLASSES["coco"]))))]


def test_bad_input_names_what_is_wrong(summaries):
    with pytest.raises(
        ValueError, match=r"no rows with analysis_set='nope' \(present: analysis_set=\['coco', 'openimages'\]\)"
    ):
        tables.ieat_latex(summaries["ieat"], "nope", alpha=0.05)
    with pytest.raises(ValueError, match="adjust must be one of"):
        tables.bts_latex(summaries["bts"], "coco", "coco", adjust="bonferroni", alpha=0.05)
    with pytest.raises(ValueError, match="unknown metric_name"):
        tables.finetune_latex(summaries["finetune"].assign(metric_name="top1"), "coco")
    with pytest.raises(ValueError, match="missing column.*pvalue_holm"):
        tables.ieat_latex(summaries["ieat"].drop(columns="pvalue_holm"), "coco", alpha=0.05)


@needs_latex
def test_every_table_compiles_with_pdflatex(summaries, tmp_path):
    docs = {
        "analysis_set": tables.analysis_set_latex(summaries["stats"], "coco"),
        "ieat": tables.ieat_latex(summaries["ieat"], "openimages", alpha=0.05),
        "bts": tables.bts_latex(summaries["bts"], "openimages", "coco", adjust="bh", alpha=0.05),
        "finetune_coco": tables.finetune_latex(summaries["finetune"], "coco"),
        "finetune_oi": tables.finetune_latex(summaries["finetune"], "openimages"),
    }
    for name, doc in docs.items():
        assert re.search(r"\\usepackage\{booktabs\}", doc) and "\\toprule" in doc
        fonts = font_types(compile_latex(doc, tmp_path, name))
        assert fonts and "Type3" not in fonts, f"{name}: bitmap (Type 3) fonts in the PDF: {fonts}"


@needs_latex
def test_a_table_fragment_is_input_into_a_papers_own_table(summaries, tmp_path):
    doc = tables.ieat_latex(summaries["ieat"], "openimages", alpha=0.05)
    fragment = latex.latex_fragment(doc)
    assert fragment.startswith("% Table fragment") and "\\documentclass" not in fragment
    assert all(line.startswith("%") for line in fragment.split("\\begin{tabular}")[0].splitlines())
    (tmp_path / "ieat_tabular.tex").write_text(fragment)
    paper = (
        "\\documentclass{article}\n\\usepackage{booktabs,graphicx}\n\\begin{document}\n\\begin{table}\n"
        "\\resizebox{\\textwidth}{!}{\\input{ieat_tabular.tex}}\n\\caption{Ours.}\n\\end{table}\n\\end{document}\n"
    )
    assert "Type3" not in font_types(compile_latex(paper, tmp_path, "paper"))


def test_make_tables_script_runs_standalone(summaries, tmp_path):
    spec = importlib.util.spec_from_file_location("script_make_tables", SCRIPTS / "make_tables.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    out = tmp_path / "bts.tex"
    where = ["--summary", summaries["paths"]["bts"], "--analysis_set", "coco", "--dataset", "openimages"]
    marked = '{"kind": "bts", "significance": {"alpha": 0.05, "adjust": "holm"}}'
    run(module.main, None, [*where, "--document", str(out), "--settings", marked])
    assert out.read_text() == tables.bts_latex(summaries["bts"], "coco", "openimages", alpha=0.05)
    unmarked = '{"kind": "bts", "significance": null}'
    with pytest.raises(ValueError, match=r"table kind 'bts' needs \['alpha', 'adjust'\]"):
        run(module.main, None, [*where, "--document", str(tmp_path / "x.tex"), "--settings", unmarked])
    assert not (tmp_path / "x.tex").exists()
    with pytest.raises(ValueError, match="kind must be"):
        run(module.main, None, [*where, "--document", str(out), "--settings", '{"kind": "plot", "significance": null}'])


def test_over_several_seeds_the_interval_is_labelled_a_range_over_seeds_never_a_ci(summaries):
    ieat = summaries["ieat"]
    doc = tables.ieat_latex(ieat, "openimages", alpha=0.05)
    header = [line for line in latex.tabular_of(doc).splitlines() if line.startswith("Model")][0].split("&")
    # pretrained and openimages (one seed each) have a CI; coco's three seeds a range of the seeds' CIs
    assert [c.strip() for c in header if "CI" in c] == ["CI", "CI range", "CI"]
    assert "a range over seeds, not a confidence interval" in doc and "95\\% CI" not in doc
    frame = tables.ieat_frame(ieat, "openimages", alpha=0.05)
    coco, single = frame[frame.stage == "ft-coco"], frame[frame.stage != "ft-coco"]
    assert coco[["ci_low", "ci_high"]].isna().all().all() and coco[["ci_seeds_min", "ci_seeds_max"]].notna().all().all()
    assert single[["ci_seeds_min", "ci_seeds_max"]].isna().all().all() and single["ci_low"].notna().all()
    html = html_table(frame, table_id="ieat")
    assert '<th scope="col">range over seeds of the CIs</th>' in html and "95% CI" not in html
    headline = headline_table(ieat, summaries["bts"].iloc[:0], {}, alpha=0.05)
    several = headline["stage"].str.contains("3 seeds")
    assert headline.loc[several, "ci_low"].isna().all() and headline.loc[several, "ci_seeds_min"].notna().all()
    assert headline.loc[~several, "ci_seeds_min"].isna().all()


def test_beside_d_its_numerator_and_sd_and_beside_a_non_significant_verdict_the_detectable_effect(summaries):
    ieat = summaries["ieat"].copy()
    ieat.loc[ieat.index[0], "pvalue_holm"] = 0.001  # resnet18 pretrained car-random on coco: significant
    frame = tables.ieat_frame(ieat, "coco", alpha=0.01)
    first = frame.iloc[0]
    assert first["verdict"] == "significant" and np.isnan(first["detectable_d"])
    assert first["mean_difference"] == pytest.approx(ieat.loc[ieat.index[0], "mean_difference"])
    assert first["pooled_sd"] == pytest.approx(0.05)
    quiet = frame[frame["verdict"].str.startswith("not significant")]
    assert len(quiet) and (quiet["detectable_d"] == 1.1).all()  # what the test could have detected at these sizes
    # over seeds, the headline's words: how many seeds are significant ("in 0 of 3", not "in some seed")
    assert frame.loc[frame.seeds > 1, "verdict"].str.fullmatch(r"significant in \d of \d seeds").all()
    doc = tables.ieat_latex(ieat, "coco", alpha=0.01)
    assert "$|d|_{80}$" in doc and "80\\% power at these set sizes" in doc
    with pytest.raises(ValueError, match="iEAT summary: missing column.*mean_difference"):
        tables.ieat_frame(ieat.drop(columns="mean_difference"), "coco", alpha=0.01)


def test_the_scratch_reference_is_a_row_beside_the_finetuned_ones(summaries):
    ieat = summaries["ieat"]
    scratch = rd.scratch_ieat(ieat)
    doc = tables.ieat_latex(ieat, "coco", alpha=0.05, scratch=scratch)
    titles = re.findall(r"\\multicolumn\{8\}\{c\}\{([^&]*)\}(?: &|\s*\\\\)", doc)
    assert titles == [
        "Pretrained",
        "Finetuned on \\texttt{coco}",
        "Finetuned on \\texttt{openimages}",
        "Trained on \\texttt{coco} alone (scratch)",
        "Trained on \\texttt{openimages} alone (scratch)",
    ]
    assert "the scratch reference network" in doc
    assert len(data_rows(doc)[0]) == 3 + 8 * 5
    frame = tables.ieat_frame(ieat, "coco", alpha=0.05, scratch=scratch)
    rows = frame[frame.stage == "scratch-coco"].set_index("model")
    expected = scratch[(scratch.analysis_set == "coco") & (scratch.finetune_dataset == "coco")].set_index("model")
    assert rows["d"].to_dict() == pytest.approx(expected["effect_size"].to_dict())
    assert "scratch" not in " ".join(tables.ieat_frame(ieat, "coco", alpha=0.05)["stage"])


def test_an_estimate_cell_shows_its_interval_only_when_it_has_one():
    nan = float("nan")
    assert formatting.estimate_cell(0.12345, -0.01, 0.2) == "$0.123$ $[-0.010, 0.200]$"
    assert formatting.estimate_cell(0.5, 0.25, 0.75, 2) == "$0.50$ $[0.25, 0.75]$"
    assert formatting.estimate_cell(0.5) == formatting.estimate_cell(0.5, nan, 0.7) == "$0.500$"
    assert formatting.estimate_cell(nan, 0.1, 0.2) == "--"


def _page_columns(parts) -> set[str]:
    return {column for _, rows in parts for column in rows.columns}


def test_on_the_page_a_wide_table_splits_into_narrow_parts_that_keep_every_column_and_row(summaries):
    import report_site

    demo = report_site.demo_sized_tables(report_site.demo_sized_summaries(np.random.default_rng(0)))
    retention = {"scratch_statistic": 0.4, "retention_difference": 0.2, "retention_ci_low": -0.1}
    retention |= {"retention_ci_high": 0.5, "retention_verdict": "undecided"}  # beside the scratch network's BTS
    frames = {
        "ieat": tables.ieat_frame(summaries["ieat"], "coco", alpha=0.05, scratch=rd.scratch_ieat(summaries["ieat"])),
        "bts": tables.bts_frame(summaries["bts"].assign(**retention), "coco", "coco"),
        "finetune": tables.finetune_frame(summaries["finetune"], "coco"),
        **{k: demo[k] for k in ("link", "amplification", "layers")},
    }
    renamed = {"delta_low": "delta_d_low", "delta_high": "delta_d_high"}
    for name, frame in frames.items():
        parts, note = tables.page_parts(frame)
        assert len(parts) > 1 and note == "", name
        assert not [t for t, _ in parts if t.startswith("More columns")], name  # the layout names every column
        filters = {"measure"} if name == "layers" else set()
        assert _page_columns(parts) | filters == {renamed.get(c, c) for c in frame.columns}, name
        headers = [html_table(rows, table_id="t").count("<th ") for _, rows in parts]
        assert max(headers) <= 10, (name, headers)  # an interval's two columns print as one
    # each row of a part is one of the table's: the layer table's iEAT and BTS rows, every one of them once
    layers = dict(tables.page_parts(frames["layers"])[0])
    assert len(layers["iEAT d by layer"]) + len(layers["BTS rho by layer"]) == len(frames["layers"])
    link = dict(tables.page_parts(frames["link"])[0])
    embedding = link["Embedding: d before and after finetuning"]
    assert len(embedding) == len(frames["link"]) and list(embedding["delta_d_low"]) == list(frames["link"]["delta_low"])


def test_a_column_that_no_layout_names_is_shown_in_a_last_part_beside_the_rows_keys():
    import report_site

    link = report_site.demo_sized_tables(report_site.demo_sized_summaries(np.random.default_rng(0)))["link"].assign(
        new_measure=1.5
    )
    title, rows = tables.page_parts(link)[0][-1]
    assert title == "More columns of the link table" and list(rows.columns) == [
        "test",
        "network",
        "model",
        "seed",
        "new_measure",
    ]
    analysis_set = pd.DataFrame({"class": ["a", "b"], "n": [3, 4]})
    parts, note = tables.page_parts(analysis_set)  # a table that fits is shown whole
    assert len(parts) == 1 and parts[0][1] is analysis_set and note == ""


def test_the_trajectory_table_shows_each_series_at_its_first_epoch_and_its_checkpoint_with_its_range():
    import report_site

    full = report_site.demo_sized_tables(report_site.demo_sized_summaries(np.random.default_rng(0)))["trajectory"]
    [(_, rows)], note = tables.page_parts(full)
    shown = full[full["measure"] != "similarity"]
    series = shown.groupby(list(tables.TRAJECTORY_SERIES), dropna=False)
    assert len(rows) == 2 * series.ngroups and len(full) == 1759
    assert f"{len(rows)} of the table's 1759 rows" in note and "similarity of every class and pair" in note
    for (measure, _, key, seed), part in series:  # a kind is empty beside an iEAT or curve key
        mine = rows[(rows["measure"] == measure) & (rows["key"] == key) & (rows["seed"] == seed)]
        first, last = mine.iloc[0], mine.iloc[1]
        assert first["checkpoint"] == "first epoch" and first["epoch"] == part["epoch"].min()
        assert first["value"] == part.loc[part["epoch"].idxmin(), "value"]
        chosen = part[part["final"]]
        if seed == "pooled":  # no checkpoint of its own: its last epoch
            assert last["checkpoint"] == "last epoch" and last["epoch"] == part["epoch"].max()
        else:
            assert last["checkpoint"] == "chosen checkpoint" and last["epoch"] == chosen["epoch"].item()
            assert last["value"] == chosen["value"].item()
        assert (mine["value_min"] == part["value"].min()).all() and (mine["value_max"] == part["value"].max()).all()


def _cka_summary(scratch: bool = True) -> pd.DataFrame:
    """A CKA summary on coco finetuned on coco: every model's finetuned seeds pooled, and (but the last model's)
    the scratch network's."""
    rows = []
    for i, model in enumerate(rd.MODELS):
        rows.append(dict(network="finetuned", model=model, cka=0.9 - 0.1 * i, representation="kept"))
        if scratch and i < len(rd.MODELS) - 1:
            rows.append(dict(network="scratch", model=model, cka=0.5, representation=""))
    frame = pd.DataFrame(rows).assign(analysis_set="coco", finetune_dataset="coco", seed="pooled")
    return frame.assign(ci_low=frame["cka"] - 0.05, ci_high=frame["cka"] + 0.05)


def test_bts_table_shows_the_linear_cka_beside_the_bts(summaries, tmp_path):
    bts, cka = summaries["bts"], _cka_summary()
    doc = tables.bts_latex(bts, "coco", "coco", alpha=0.05, cka=cka)
    rows = data_rows(doc)
    assert "Linear CKA" in doc and "scratch network's reads as a replaced representation" in doc
    number, bounds = formatting.format_number, formatting.format_interval
    assert rows[0][11:] == [number(0.9), bounds(0.85, 0.95), number(0.5), bounds(0.45, 0.55)]
    assert rows[-1][13:] == ["--", "--"]  # no scratch network for the last model
    assert len({len(r) for r in rows}) == 1
    frame = tables.bts_frame(bts, "coco", "coco", cka=cka)
    first = frame[frame["model"] == rd.MODELS[0]].iloc[0]
    assert (first["cka"], first["cka_low"], first["cka_scratch"], first["representation"]) == (0.9, 0.85, 0.5, "kept")
    # without scratch networks the table has two CKA columns; without a CKA summary none
    alone = tables.bts_latex(bts, "coco", "coco", alpha=0.05, cka=_cka_summary(scratch=False))
    assert data_rows(alone)[0][11:] == [number(0.9), bounds(0.85, 0.95)]
    assert "CKA" not in tables.bts_latex(bts, "coco", "coco", alpha=0.05)
    with pytest.raises(ValueError, match="CKA summary.*missing column.*cka"):
        tables.bts_latex(bts, "coco", "coco", alpha=0.05, cka=cka.drop(columns="cka"))
    if PDFLATEX:
        compile_latex(doc, tmp_path, "bts_cka")
