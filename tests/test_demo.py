"""The shipped default config end to end: the synthetic demo recovers its planted bias.

This is the known answer the README promises: the model pretrained on biased scenes shows the planted
association (p < 0.01, effect size > 0.5) and the control pair does not. It reads the one run of the
whole default workflow shared with test_workflow.py (a few minutes).
"""

import json
import re

import pandas as pd
import pytest
import report_site
import yaml


@pytest.fixture(scope="module")
def demo(demo_run):
    return demo_run / "results"


def pretrained(ieat: pd.DataFrame, model: str, test: str) -> pd.Series:
    row = ieat[(ieat["model"] == model) & (ieat["stage"] == "pretrained") & (ieat["test"] == test)]
    assert len(row) == 1
    return row.iloc[0]


@pytest.mark.slow
def test_the_planted_association_is_found(demo):
    row = pretrained(pd.read_csv(demo / "summary" / "ieat.csv"), "democnn", "surfboard_vs_car")
    assert row["pvalue"] < 0.01 and row["effect_size"] > 0.5, row.to_dict()


@pytest.mark.slow
def test_the_control_pair_shows_no_association(demo):
    control_pair = pretrained(pd.read_csv(demo / "summary" / "ieat.csv"), "democnn", "refrigerator_vs_stop_sign")
    assert control_pair["pvalue"] > 0.05, control_pair.to_dict()


@pytest.mark.slow
def test_the_findings_say_so_in_words(demo):
    text = (demo / "summary" / "findings.rst").read_text()
    planted = text.split("surfboard_vs_car", 1)[1].split("refrigerator_vs_stop_sign", 1)[0]
    control = text.split("refrigerator_vs_stop_sign", 1)[1]
    assert "**democnn** pretrained: significant" in planted
    assert "**democnn** pretrained: not significant" in control
    html = (demo / "summary" / "findings.html").read_text()
    assert "<h1" in html and "democnn" in html


@pytest.mark.slow
def test_every_model_was_finetuned_with_every_seed(demo):
    metrics = pd.read_csv(demo / "summary" / "finetune_metrics.csv")
    assert sorted(zip(metrics["model"], metrics["seed"])) == [("democnn", s) for s in (0, 1, 2)]
    assert (metrics["metric_value"] > 0.5).all(), metrics


@pytest.mark.slow
def test_the_bts_is_read_beside_a_network_trained_only_on_the_target_data(demo):
    bts = pd.read_csv(demo / "summary" / "bts.csv")
    assert bts["scratch_statistic"].between(-1, 1).all() and bts["pretrained_vs_scratch"].between(-1, 1).all(), bts
    assert (demo / "embeddings" / "synthetic" / "democnn" / "scratch-synthetic_target-seed0.parquet").is_file()
    text = (demo / "summary" / "findings.rst").read_text()
    assert "The BTS against a network trained only on the target data" in text
    assert "rho(scratch, finetuned) = " in text and "Did training converge?" in text


@pytest.mark.slow
def test_the_ieat_table_shows_the_target_data_alone_and_what_a_quiet_test_could_detect(demo):
    scratch = pd.read_csv(demo / "summary" / "ieat_scratch.csv")
    assert set(scratch["stage"]) == {"scratch-synthetic_target-seed0"}
    assert set(scratch["test"]) == {"surfboard_vs_car", "refrigerator_vs_stop_sign"}
    table = pd.read_csv(demo / "tables" / "ieat_synthetic.csv")
    assert set(table["stage"]) == {"pretrained", "ft-synthetic_target", "scratch-synthetic_target"}
    finetuned = table[table["stage"] == "ft-synthetic_target"]  # three seeds: a range of their intervals, not a CI
    assert finetuned[["ci_low", "ci_high"]].isna().all().all() and finetuned["ci_seeds_min"].notna().all()
    single = table[table["seeds"] == 1]  # one network: d is its numerator over its SD
    assert ((single["d"] - single["mean_difference"] / single["pooled_sd"]).abs() < 1e-6).all()
    quiet = table[~table["verdict"].str.fullmatch(r"significant(?: in (\d+) of \1 seeds)?")]  # not in every seed
    assert (
        len(quiet)
        and (quiet["detectable_d"] > 0).all()
        and table.loc[~table.index.isin(quiet.index), "detectable_d"].isna().all()
    )
    text = (demo / "summary" / "findings.rst").read_text()
    assert "target data alone (trained from scratch on synthetic_target, seed 0" in text
    assert "raw association" in text and "pooled SD" in text and "only an effect of size" in text
    assert (
        "Trained on \\texttt{synthetic\\_target} alone (scratch)"
        in (demo / "tables" / "ieat_synthetic.tex").read_text()
    )


@pytest.mark.slow
def test_the_known_answers_hold_with_intervals(demo):
    """The planted pair is found (significant, d > 0.5) and its d is the larger; after finetuning every
    seed's interval excludes 0. The pretrained network itself depends on the machine's floating point
    (training diverges from the first differing rounding): where these tests were written its planted
    interval lay above 0.5, on an Intel Xeon with AVX-512 d = 0.91 [-0.12, 1.53] at adjusted p = 0.00012 (the
    bootstrap resamples the attribute images too, the permutation test only the targets), and its control
    pair's d = -0.56 [-0.93, -0.07] on an AMD EPYC build machine, -0.10 elsewhere. So the report must say
    whether each known answer held from the data, not assume it."""
    ieat = pd.read_csv(demo / "summary" / "ieat.csv")
    planted = pretrained(ieat, "democnn", "surfboard_vs_car")
    assert planted["effect_size"] > 0.5 and planted["pvalue_holm"] < 0.01, planted.to_dict()
    finetuned = ieat[(ieat["test"] == "surfboard_vs_car") & ieat["stage"].str.startswith("ft-")]
    assert len(finetuned) == 3 and (finetuned["ci_low"] > 0).all(), finetuned  # the bias survives finetuning
    control = pretrained(ieat, "democnn", "refrigerator_vs_stop_sign")
    assert abs(control["effect_size"]) < planted["effect_size"], control.to_dict()
    record = json.loads((demo / "summary" / "results.json").read_text())
    held = {v["known_answer"].split(" (")[0]: v["held"] for v in record["verdicts"] if v["known_answer"]}
    rule = record["settings"]  # the headline's significance rule: adjusted p and two-sided p against alpha
    alpha = rule["alpha"]
    quiet = control["pvalue_two_sided"] >= alpha and control[f"pvalue_{rule['adjust']}"] >= alpha
    assert held == {"planted pair found": "yes", "control pair not found": "yes" if quiet else "no"}, held
    assert (ieat["ci_low"] <= ieat["effect_size"]).all() and (ieat["effect_size"] <= ieat["ci_high"]).all()
    assert (ieat["pvalue_two_sided"] > 0).all() and (ieat["pvalue"] >= ieat["pvalue_floor"]).all()


@pytest.mark.slow
def test_what_finetuning_changed_is_reported_in_both_directions(demo):
    """The change of every iEAT from pretrained to each seed, with its interval, is in the tables and
    the findings; an effect against the tested direction (the issue's control pair, d = -0.77 after
    finetuning under a one-sided test) is said in words, not hidden behind p = 1."""
    ieat = pd.read_csv(demo / "summary" / "ieat.csv")
    change = pd.read_csv(demo / "summary" / "ieat_change.csv")
    text = (demo / "summary" / "findings.rst").read_text()
    sections = {
        "surfboard_vs_car": text.split("surfboard_vs_car", 1)[1].split("refrigerator_vs_stop_sign", 1)[0],
        "refrigerator_vs_stop_sign": text.split("refrigerator_vs_stop_sign", 1)[1],
    }
    for test, section in sections.items():
        rows = change[change["test"] == test].set_index("seed")
        assert sorted(rows.index) == [0, 1, 2]
        before = pretrained(ieat, "democnn", test)["effect_size"]
        for seed, r in rows.iterrows():
            after = ieat[(ieat["test"] == test) & (ieat["stage"] == f"ft-synthetic_target-seed{seed}")].iloc[0]
            assert (r["d_pretrained"], r["d_finetuned"]) == pytest.approx((before, after["effect_size"]), abs=1e-9)
            assert r["ci_low"] <= r["delta_d"] <= r["ci_high"]
            assert (
                f"change from pretrained, seed {seed} (same images, paired bootstrap): delta d = {r['delta_d']:.2f}"
                in section
            )
            if after["effect_size"] <= -0.5:  # a large effect against the one-sided test's direction
                assert (
                    f"seed {seed}: " in section and f"**Opposite direction:** d = {after['effect_size']:.2f}" in section
                )
    seeds = pd.read_csv(demo / "summary" / "ieat_seeds.csv")
    assert sorted(seeds["test"]) == sorted(sections) and (seeds["n_seeds"] == 3).all()
    assert "one test on all seeds' embeddings" in text
    assert (demo / "figures" / "ieat_change.png").is_file()


@pytest.mark.slow
def test_the_trajectory_shows_every_epoch_of_every_seed(demo):
    """finetune.trajectory: every; epochs 0 (pretrained) to the last for each of 3 seeds, in the table, the
    figure, the LaTeX table (one row per epoch) and the findings, which say when the planted pair settles."""
    epochs = yaml.safe_load((demo / "summary" / "config.yaml").read_text())["finetune"]["defaults"]["epochs"]
    traj = pd.read_csv(demo / "summary" / "trajectory.csv", keep_default_na=False, na_values=[""])
    ieat = traj[traj["measure"] == "ieat"]
    assert sorted(ieat["epoch"].unique()) == list(range(epochs + 1)) and len(ieat) == (epochs + 1) * 3 * 2
    assert ((ieat["ci_low"] <= ieat["value"]) & (ieat["value"] <= ieat["ci_high"])).all()
    assert len(traj[(traj["measure"] == "bts") & (traj["seed"] == "pooled")]) == epochs * 2
    assert traj[traj["final"] & (traj["measure"] == "ieat")].groupby("seed").size().tolist() == [2, 2, 2]
    for ext in ("png", "pdf"):
        assert (demo / "figures" / "synthetic" / "democnn" / f"trajectory_ft-synthetic_target.{ext}").stat().st_size > 0
    tex = (demo / "tables" / "trajectory_synthetic_democnn_ft-synthetic_target.tex").read_text()
    rows = tex.split("\\midrule", 1)[1].split("\\bottomrule", 1)[0].strip().splitlines()
    assert [r.split(" & ")[0] for r in rows] == ["0 (pretrained)", *map(str, range(1, epochs + 1))]
    text = (demo / "summary" / "findings.rst").read_text().split("When did finetuning move the associations?", 1)[1]
    planted = text.split("surfboard_vs_car (planted)", 1)[1].split("\n", 1)[0]
    assert "settles from epoch" in planted or "throughout" in planted, planted


@pytest.mark.slow
def test_the_layer_profile_says_at_which_depth_the_planted_association_appears(demo):
    from biastransfer.report.formatting import read_summary
    from biastransfer.report.layer_report import PROFILE_REQUIRED, profile_figure

    profile = read_summary(demo / "summary" / "layer_profile.csv", PROFILE_REQUIRED)
    layers, stages, tests = ["layer1", "layer2", "layer3", "layer4"], 4, 2  # pretrained + 3 seeds
    ieat = profile[profile["measure"] == "ieat"]
    assert len(ieat) == len(layers) * stages * tests
    assert len(profile[(profile["measure"] == "bts") & (profile["seed"] == "pooled")]) == len(layers) * 2
    planted = ieat[(ieat["item"] == "surfboard_vs_car") & (ieat["stage"] == "pretrained")].set_index("layer")
    assert planted.index.tolist() == layers
    assert planted.loc["layer4", "pvalue_holm"] < 0.01 and planted.loc["layer4", "estimate"] > 0.5, planted
    assert planted.loc["layer1", "ci_low"] < 0 < planted.loc["layer1", "ci_high"], planted
    # layer4, average-pooled, is the penultimate embedding: the same d as the main iEAT table
    main = pretrained(pd.read_csv(demo / "summary" / "ieat.csv"), "democnn", "surfboard_vs_car")
    assert planted.loc["layer4", "estimate"] == pytest.approx(main["effect_size"], abs=1e-9)
    text = (demo / "summary" / "findings.rst").read_text()
    assert "iEAT surfboard_vs_car (planted), pretrained: appears at layer4 (depth 4 of 4)" in text
    # the figure: one line of four points per stage in each iEAT panel; the table, per layer: each iEAT, the
    # BTS intra and inter, and the linear CKA
    for ext in ("png", "pdf"):
        assert (demo / "figures" / "synthetic" / "democnn" / f"layers.{ext}").stat().st_size > 0
    fig = profile_figure(profile, analysis_set="synthetic", model="democnn")
    for ax in fig.axes[:tests]:
        assert [len(bars.lines[0].get_xdata()) for bars in ax.containers] == [len(layers)] * stages
    table = (demo / "tables" / "layers_synthetic.tex").read_text()
    assert sum(line.startswith("democnn & layer") for line in table.splitlines()) == len(layers) * (tests + 3)


@pytest.mark.slow
def test_the_html_report_opens_on_the_known_answers(demo):
    """results/report/index.html (rule html_report) leads with a summary that says it is the synthetic demo,
    then the demo's two known answers, both held: the planted pair found, the control pair not; the control
    pair's reverse shift after finetuning is a verdict of its finetuned row, not a known answer."""
    report = demo / "report"
    index = (report / "index.html").read_text()
    verdicts = json.loads((demo / "summary" / "results.json").read_text())["verdicts"]
    held = sum(v["held"] == "yes" for v in verdicts if v["known_answer"])
    assert index.index("In short") < index.index(f"Known answers: {held} of 2 held") < index.index('id="headline"')
    words = report_site.page_text(report / "index.html")  # tags dropped: glossary links inside the sentences
    assert "Planted: the pretraining data synthetic_biased put car beside person_b in 90% of its scenes" in words
    assert "the finetuning data: synthetic_target has no such co-occurrence." in words
    assert "planted pair found" in index and "control pair not found" in index and "opposite direction" in index
    assert 'id="forest"' in index and index.index('id="forest"') < index.index("the pretraining data synthetic_biased")
    pages = ("findings", "tables", "figures", "provenance", "glossary")
    assert all((report / f"{page}.html").is_file() for page in pages)
    assert (demo / "tables" / "ieat_synthetic_tabular.tex").read_text().lstrip().startswith("% Table fragment")


@pytest.mark.slow
def test_no_page_of_the_demo_gives_a_network_two_intervals_or_a_number_results_json_lacks(demo):
    """Every ``d = x [a, b]`` on every page is the interval results.json gives that network (the trajectory
    findings once printed a second interval for the pretrained network), and every decimal of the landing
    page's sentences is a number of results.json; results.json meets its schema."""
    from biastransfer.report.results import validate

    model = json.loads((demo / "summary" / "results.json").read_text())
    validate(model)
    texts = {p.name: report_site.page_text(p) for p in (demo / "report").glob("*.html")}
    assert report_site.second_intervals(texts, model) == []
    sentences = report_site.landing_sentences(demo / "report" / "index.html")
    assert report_site.unbacked_decimals(sentences, model) == []
    assert len(model["summary"]) <= 5 and model["predictions"] and model["convergence"]


@pytest.mark.slow
def test_every_figure_prints_at_a_paper_width_with_vector_fonts(demo):
    """save_figure refuses a figure with text under 7 pt or wider than 7 in; here the demo's files show
    it: every PNG (300 dpi) at most 7 in wide, every PDF with TrueType fonts, no Type 3 bitmaps."""

    from PIL import Image

    pngs = sorted((demo / "figures").rglob("*.png"))
    assert len(pngs) >= 9, pngs  # intra, inter, person, rank, contact sheet, curves (2), heat map, change
    for png in pngs:
        with Image.open(png) as image:
            assert image.width <= 300 * 7.05, f"{png}: {image.width / 300:.2f} in wide"
        pdf = png.with_suffix(".pdf").read_bytes()
        assert b"/Type3" not in pdf and re.search(rb"/Subtype ?/(TrueType|CIDFontType2)", pdf), png
    sheet = pd.read_csv(demo / "figures" / "synthetic" / "contact_sheet.csv")
    assert sheet.groupby("class").size().eq(4).all() and sheet["source"].eq("synthetic (CC0)").all()
