"""The glossary (report.glossary): every term on the page with its source, terms linked once per page without
touching tags, the methods paragraph from the config, and the commands that reproduce each table."""

import re
import shlex

import pytest
import yaml
from conftest import ROOT, run_snakemake
from hypothesis import given, settings
from hypothesis import strategies as st

from biastransfer.report.glossary import (
    GLOSSARY,
    LINK_CLASS,
    REFERENCES,
    REPRODUCE,
    glossary_body,
    link_terms,
    methods_block,
    reproduce_command,
)
from biastransfer.report.html import esc
from biastransfer.workflow import config as cfg
from biastransfer.workflow.plan import SUMMARIES, Plan
from biastransfer.workflow.rules.report import run_facts

ADDED = re.compile(rf'<a class="{LINK_CLASS}" href="glossary\.html#[\w-]+">(.*?)</a>', re.S)
#: The terms the issue asks the glossary for, by anchor.
REQUIRED = (
    "ieat effect-size association permutation-p p-floor adjusted-p bootstrap bts intra-class inter-class scratch "
    "retention seed pooled leakage leakage-amplification biasamp directional planted control known-answer "
    "detectable-d layer-profile trajectory intervention claim"
).split()


def test_every_term_has_an_anchor_two_sentences_and_a_listed_source():
    page = glossary_body()
    assert set(REQUIRED) <= set(GLOSSARY)
    for anchor, term in GLOSSARY.items():
        assert page.count(f'<dt id="{anchor}">') == 1, anchor
        sentences = re.findall(r"[.!?](?:\s|$)", term.definition)
        assert len(sentences) == 2, (anchor, term.definition)
        for key in term.sources:
            assert f'<li id="ref-{key}">' in page and f'href="#ref-{key}"' in page, (anchor, key)
    assert "A-&gt;T" in page and "arXiv:2303.07615" in page  # "BiasAmp A->T" spelled out, the paper cited
    assert "http://" not in page and "https://" not in page  # sources as text: the report works offline


def test_every_source_names_an_identifier_a_reader_can_look_up():
    for key, (short, full) in REFERENCES.items():
        if key != "docs":
            assert re.search(r"doi:10\.|arXiv:\d{4}\.\d{4,5}|ISBN|JSTOR", full), key
            assert short.split()[0].rstrip(",") in full, key


def test_link_terms_links_the_first_occurrence_once_and_leaves_tags_alone():
    page = (
        '<h2>iEAT</h2><p title="iEAT and BTS">An <code>iEAT</code> is <a href="x.html">an iEAT</a>; the iEAT '
        "here, the iEAT again and the BTS.</p><table><tr><th>BTS</th><td>leakage</td></tr></table>"
        "<p>Its leakage.</p><!-- BTS --><script>var iEAT = 1 < 2;</script>"
    )
    out = link_terms(page)
    assert out.count("glossary.html#ieat") == 1 and out.count("glossary.html#bts") == 1
    assert out.count("glossary.html#leakage") == 1
    assert '<p title="iEAT and BTS">An <code>iEAT</code> is <a href="x.html">an iEAT</a>; the ' in out
    assert 'the <a class="term" href="glossary.html#ieat">iEAT</a> here, the iEAT again' in out
    assert "<th>BTS</th><td>leakage</td>" in out and "Its <a class=" in out
    assert out.startswith("<h2>iEAT</h2>") and out.endswith("<!-- BTS --><script>var iEAT = 1 < 2;</script>")
    # a term the page already links is not linked again, and the longest phrase wins
    assert link_terms('<a href="glossary.html#ieat">iEAT</a> iEAT') == '<a href="glossary.html#ieat">iEAT</a> iEAT'
    arrow = link_terms(f"<p>{esc('BiasAmp A->T')} and BiasAmp, pooled SD then pooled.</p>")
    assert re.findall(r"#([\w-]+)", arrow) == ["directional", "biasamp", "effect-size", "pooled"]
    assert link_terms("<p>iEATs are seeded</p>").count("glossary.html") == 1  # whole words only: not "seeded"


PHRASES = sorted({p for t in GLOSSARY.values() for p in t.phrases})
TEXT = st.lists(
    st.one_of(
        st.sampled_from(PHRASES),
        st.sampled_from(["<p>", "</p>", "<code>", "</code>", "<h3>", "</h3>", '<a href="f.csv">', "</a>"]),
        st.sampled_from(['<th scope="col">', "</th>", '<span title="iEAT">', "</span>", "<br>", " ", ", "]),
        st.text(alphabet="abcdefghij -.;&<>", max_size=12),
    ),
    max_size=30,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_stripping_the_added_links_gives_back_the_page(page):
    out = link_terms(page)
    assert ADDED.sub(r"\1", out) == page
    anchors = re.findall(r'glossary\.html#([\w-]+)">', out)
    assert len(anchors) == len(set(anchors))  # once per term


def test_the_methods_paragraph_reads_the_runs_settings_and_gives_bibtex():
    config = {
        "analysis_sets": {"synthetic": {}},
        "finetune": {
            "datasets": ["target"],
            "seeds": {"target": [3, 4]},
            "defaults": {"epochs": 7, "lr": 0.01, "optimizer": "adamw"},
        },
        "analysis": {
            "ieat": {
                "alpha": 0.01,
                "alternative": "greater",
                "permutations": 50_000,
                "bootstrap": 1500,
                "ci_level": 0.9,
                "seed": 11,
            },
            "bts": {
                "reference": "scratch",
                "reference_seeds": [5],
                "pvalue": "permutation",
                "bootstrap": 999,
                "ci_level": 0.95,
                "seed": 2,
            },
        },
        "report": {"p_adjust": "bh"},
        "models": {"m": {}},
        "datasets": {},
    }
    facts = run_facts(Plan(config, ROOT))  # what the html_report rule passes to the results model, which records it
    model = {"run": {**facts, "config_hash": "h"}, "settings": {"alpha": 0.01, "adjust": "bh", **facts["statistics"]}}
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    text = methods_block(model, citation)
    for words in (
        "target: seeds 3, 4; 7 epochs, learning rate 0.01, adamw",
        "trained from scratch on the target data as the BTS reference, target: seeds 5",
        "greater alternative, 50,000 permutations",
        "1,500 replicates, level 0.9",
        "999 replicates, level 0.95, seed 2",
        "adjusted by the Benjamini-Hochberg procedure",
        "alpha = 0.01",
    ):
        assert words in text, words
    assert "@article{ranjit2023," in text and "eprint = {2303.07615}" in text
    assert f"version = {{{citation['version']}}}" in text and "@software{biastransfer," in text
    assert "<h3>BibTeX</h3>" not in methods_block(model, None)
    del model["settings"]["bts"]["bootstrap"]
    with pytest.raises(KeyError, match="bootstrap"):
        methods_block(model, citation)


def test_each_reproduce_command_names_a_rule_of_the_workflow_and_a_summary():
    rules = set(
        re.findall(r"^(?:rule|checkpoint) (\w+):", "".join(p.read_text() for p in ROOT.glob("rules/*.smk")), re.M)
    )
    for measure, (rule, summary) in REPRODUCE.items():
        got_rule, command = reproduce_command(measure)
        assert got_rule == rule and rule in rules, measure
        assert (
            summary in SUMMARIES and command == f"snakemake --cores 1 results/summary/{summary}.csv --forcerun {rule}"
        )
    assert set(REPRODUCE) == set(SUMMARIES)  # a new summary needs its command
    with pytest.raises(KeyError, match="no reproduce command for measure 'd'"):
        reproduce_command("d")


DEMO = [ROOT / "config" / "config.yaml"]
#: The demo writes most summaries; its controls overlay adds the attribution, interventions and claims.
WRITTEN = Plan(cfg.read_configs(DEMO), ROOT).written_summaries


@pytest.mark.slow
@pytest.mark.parametrize("measure", list(REPRODUCE))
def test_snakemake_plans_each_reproduce_command_for_the_demo(measure, tmp_path):
    """A dry run of the exact command in an empty folder: its target is read as the target (not swallowed by
    --forcerun, which would plan rule all) and its rule runs."""
    rule, command = reproduce_command(measure)
    configs = [] if REPRODUCE[measure][1] in WRITTEN else ["--configfile", *DEMO, ROOT / "config" / "controls.yaml"]
    words = shlex.split(command)
    assert words[0] == "snakemake"
    done = run_snakemake("-n", *words[1:], *configs, cwd=tmp_path, timeout=300)
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", done.stdout.split("Job stats:", 1)[1], re.M))
    assert rule in jobs and "all" not in jobs and "html_report" not in jobs, jobs
    assert f"results/summary/{REPRODUCE[measure][1]}.csv" in done.stdout
