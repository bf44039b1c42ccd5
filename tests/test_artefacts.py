"""The reports' artefacts, each declared once: its targets, static-report items and Snakemake report marks."""

import pytest

from biastransfer.report.artefacts import Artefact, Artefacts, combinations

FIGURE = {
    "kind": "figure",
    "section": "Analysis set {analysis_set}",
    "subsection": "{model}",
    "title": "Intra-class similarity",
    "caption": "/x/intra.rst",
    "files": {
        "png": "results/figures/{analysis_set}/{model}/intra.png",
        "pdf": "results/figures/{analysis_set}/{model}/intra.pdf",
    },
}


def test_combinations_vary_the_last_name_fastest():
    assert combinations(a=["s", "t"], m=["x", "y"]) == [
        {"a": "s", "m": "x"},
        {"a": "s", "m": "y"},
        {"a": "t", "m": "x"},
        {"a": "t", "m": "y"},
    ]
    assert combinations() == [{}]
    assert combinations(a=[]) == []


def test_one_declaration_gives_the_targets_the_items_and_the_marks():
    registry = Artefacts()
    registry.declare("intra", instances=combinations(analysis_set=["coco"], model=["r18", "r50"]), **FIGURE)
    registry.declare(
        "ieat",
        kind="table",
        section="iEAT",
        title="iEAT on {analysis_set}",
        caption="/x/t.rst",
        files={"csv": "t/ieat_{analysis_set}.csv", "document": "t/ieat_{analysis_set}.tex"},
        instances=combinations(analysis_set=["coco"]),
    )
    registry.declare(
        "zoo", kind="page", section="Zoo", title="Zoo", caption="/x/z.rst", files={"html": "z.html"}, run="zoo"
    )
    assert registry.targets() == [
        "results/figures/coco/r18/intra.png",
        "results/figures/coco/r18/intra.pdf",
        "results/figures/coco/r50/intra.png",
        "results/figures/coco/r50/intra.pdf",
        "t/ieat_coco.csv",
        "t/ieat_coco.tex",
    ]
    assert registry.targets("zoo") == registry.files("zoo") == ["z.html"]
    first = registry.items()[0]
    assert first == {
        "kind": "figure",
        "group": "Analysis set coco, r18",
        "title": "Intra-class similarity",
        "caption": "/x/intra.rst",
        "files": {"png": "results/figures/coco/r18/intra.png", "pdf": "results/figures/coco/r18/intra.pdf"},
        "wildcards": {"analysis_set": "coco", "model": "r18"},
    }
    assert [i["group"] for i in registry.items()] == ["Analysis set coco, r18", "Analysis set coco, r50", "iEAT"]
    intra, table = registry["intra"], registry["ieat"]
    assert (intra.category(), intra.subcategory()) == ("Analysis set {analysis_set}", "{model}")
    assert (table.category(), table.subcategory()) == ("Tables", "iEAT")
    assert intra.labels() == {"analysis set": "{analysis_set}", "model": "{model}", "figure": "Intra-class similarity"}
    assert intra.marked() == {"png": True, "pdf": False}
    assert table.marked() == {"csv": True, "document": True}


def test_an_artefact_without_instances_makes_nothing():
    registry = Artefacts()
    registry.declare("intra", instances=[], **FIGURE)
    assert registry.targets() == [] and registry.items() == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kind": "chart"}, "kind must be one of figure, table, page, not 'chart'"),
        ({"run": "paper"}, "run must be one of transfer, zoo"),
        ({"files": {"png": "a.png", "gif": "a.gif"}}, r"unknown file role\(s\) \['gif'\]"),
        ({"files": {"pdf": "a.pdf"}}, "a figure needs a 'png' file"),
        ({"instances": [{"analysis_set": "coco"}]}, "instance {'analysis_set': 'coco'} lacks wildcard 'model'"),
    ],
)
def test_a_bad_declaration_is_refused_naming_the_artefact(change, message):
    with pytest.raises(ValueError, match=f"report artefact 'intra': {message}"):
        Artefact(name="intra", **{**FIGURE, "instances": [{"analysis_set": "coco", "model": "m"}], **change})


def test_a_name_is_declared_once():
    registry = Artefacts()
    registry.declare("intra", **{**FIGURE, "instances": []})
    with pytest.raises(ValueError, match="'intra' is declared twice"):
        registry.declare("intra", **{**FIGURE, "instances": []})
