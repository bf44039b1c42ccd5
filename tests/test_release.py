"""One version string (biastransfer.__version__) that pyproject, CITATION.cff and CHANGELOG.md agree with."""

import re
import tomllib
from pathlib import Path

import yaml

from biastransfer import __version__

ROOT = Path(__file__).resolve().parents[1]


def test_the_version_is_semantic_and_pyproject_reads_it_from_the_library():
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "biastransfer.__version__"}
    assert project["project"]["license"] == {"text": "MIT"}
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")


def test_citation_names_this_version_its_licence_and_the_paper():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert {"message", "title", "authors"} <= set(cff)
    assert (cff["version"], cff["license"]) == (__version__, "MIT")
    paper = cff["preferred-citation"]
    assert paper["title"] == "Variation of Gender Biases in Visual Recognition Models Before and After Finetuning"
    assert [a["family-names"] for a in paper["authors"]] == ["Ranjit", "Ray", "Wang", "Ordonez"]


def test_the_changelog_releases_this_version_last_and_keeps_an_unreleased_section():
    text = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", text, flags=re.M)
    assert headings[0] == ("Unreleased", "")
    assert headings[1][0] == __version__, (
        f"CHANGELOG.md's last release is {headings[1][0]}, the library is {__version__}"
    )
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["date-released"] == headings[1][1]
