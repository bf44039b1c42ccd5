"""config/README.md's key tables are the schema's descriptions and defaults (workflow/scripts/config_docs.py)."""

import runpy
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT

SCRIPT = ROOT / "workflow" / "scripts" / "config_docs.py"
README = ROOT / "config" / "README.md"


@pytest.fixture
def docs():
    return runpy.run_path(str(SCRIPT))


def test_the_readme_tables_are_the_schemas(docs):
    text = README.read_text()
    assert docs["stale"](text) == [], "config/README.md is out of date: run python workflow/scripts/config_docs.py"
    assert docs["undescribed"](text) == [], "give these schema keys a description"


def test_every_section_of_the_config_has_a_table():
    text = README.read_text()
    for node in (
        "config.schema.yaml#/$defs/synthetic_dataset",
        "datasets.schema.yaml",
        "user.schema.yaml#/$defs/table_dataset",
        "config.schema.yaml#/$defs/analysis_set",
        "config.schema.yaml#/$defs/model",
        "config.schema.yaml#/properties/weights",
        "config.schema.yaml#/properties/finetune",
        "config.schema.yaml#/properties/analysis",
        "config.schema.yaml#/properties/zoo",
        "config.schema.yaml#/properties/claims",
        "config.schema.yaml#/properties/factors",
        "config.schema.yaml#/properties/report",
    ):
        assert f"<!-- schema: {node} -->" in text, node


SCHEMA = {
    "$defs": {
        "named": {"description": "A shared definition.", "type": "string"},
        "thing": {
            "type": "object",
            "required": ["kind"],
            "if": {"properties": {"kind": {"const": "a"}}},
            "then": {"properties": {"size": {"default": 4}}},
            "properties": {
                "kind": {"enum": ["a", "b"], "description": "Which thing."},
                "size": {"type": "integer", "description": "Its size | in pixels."},
                "ref": {"$ref": "#/$defs/named"},
                "inner": {
                    "type": "object",
                    "default": {},
                    "description": "A section.",
                    "properties": {"seed": {"type": "integer", "default": 0, "description": "A seed, a or b."}},
                },
                "tag": {"type": "string"},
            },
        },
    }
}
TABLE = """| key | default | meaning |
|---|---|---|
| `kind` | required | Which thing. One of `a`, `b`. |
| `size` | `4` (kind a) | Its size \\| in pixels. |
| `ref` |  | A shared definition. |
| `inner` | `{}` | A section. |
| `inner.seed` | `0` | A seed, a or b. |
| `tag` |  |  |
"""


@pytest.fixture
def toy(tmp_path, docs, monkeypatch):
    """The script's functions on a toy schema, and a README of prose around its table."""
    (tmp_path / "config.schema.yaml").write_text(yaml.safe_dump(SCHEMA, sort_keys=False))
    monkeypatch.setitem(docs["load"].__globals__, "SCHEMAS", tmp_path)
    readme = tmp_path / "README.md"
    readme.write_text(
        "Prose.\n\n<!-- schema: config.schema.yaml#/$defs/thing -->\n| old |\n<!-- /schema -->\n\nMore.\n"
    )
    return docs, readme


def test_a_table_from_a_hand_written_schema(toy):
    docs, readme = toy
    assert docs["table"]("config.schema.yaml#/$defs/thing") == TABLE
    assert docs["undescribed"](readme.read_text()) == ["config.schema.yaml#/$defs/thing: tag"]


def test_check_names_the_stale_table_and_rewrite_keeps_the_prose(toy):
    docs, readme = toy
    with pytest.raises(SystemExit) as stop:
        docs["main"](check=True, readme=str(readme))
    assert stop.value.code == 1
    docs["main"](readme=str(readme))
    assert readme.read_text() == (
        "Prose.\n\n<!-- schema: config.schema.yaml#/$defs/thing -->\n" + TABLE + "<!-- /schema -->\n\nMore.\n"
    )
    docs["main"](check=True, readme=str(readme))
    SCHEMA["$defs"]["thing"]["properties"]["tag"]["description"] = "Now described."
    try:
        (readme.parent / "config.schema.yaml").write_text(yaml.safe_dump(SCHEMA, sort_keys=False))
        assert docs["stale"](readme.read_text()) == ["config.schema.yaml#/$defs/thing"]
    finally:
        del SCHEMA["$defs"]["thing"]["properties"]["tag"]["description"]


def test_the_command_line_check_fails_on_a_stale_readme(tmp_path):
    stale = tmp_path / "README.md"
    stale.write_text(README.read_text().replace("| `cache_dir` |", "| `cache_directory` |"))
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--check", "true", "--readme", str(stale)], capture_output=True, text=True
    )
    assert done.returncode == 1 and "config.schema.yaml#/properties/weights is out of date" in done.stdout
