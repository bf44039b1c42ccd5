"""The key tables of config/README.md, generated from the config schema's descriptions and defaults.

Each table sits between a marker that names a schema node and an end marker; the prose around them is
written by hand. A node is a file of workflow/schemas and a JSON pointer into it:

    <!-- schema: config.schema.yaml#/$defs/synthetic_dataset -->
    ...generated table...
    <!-- /schema -->

Each row is one key (the keys of a nested section with keys of its own as ``section.key``), its default
(``required`` when the schema requires it; a default the schema sets only for some values of another key
is shown with them) and its description. Rewrite the tables, or with --check true exit 1 naming each
table that is out of date (tests/test_config_docs.py runs the check).

Standalone: python workflow/scripts/config_docs.py [--check true] [--readme config/README.md]
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path

import yaml

from biastransfer.schema_types import read_schema
from biastransfer.scripting import run

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "workflow" / "schemas"
README = ROOT / "config" / "README.md"
BLOCK = re.compile(r"(<!-- schema: (?P<ref>\S+) -->\n)(?P<body>.*?)(<!-- /schema -->)", re.DOTALL)


def load(name: str) -> dict:
    """The schema file ``name`` of SCHEMAS as it is now (this script's test rewrites one between calls)."""
    return read_schema(SCHEMAS / name)


def resolve(ref: str, base: str) -> tuple[dict, str]:
    """(node, its file) of a ``$ref`` (``file#/pointer``, ``#/pointer`` within ``base``, or a whole file)."""
    name, _, pointer = ref.partition("#")
    name = name or base
    node = load(name)
    for part in filter(None, pointer.split("/")):
        node = node[part]
    return node, name


def merged(node: Mapping, base: str) -> tuple[dict, dict, str]:
    """(node with its ``$ref`` and ``allOf`` members' properties, required keys and description folded in,
    {key: [(condition, default)]} of the defaults its ``if``/``then`` members set, the file it is read in)."""
    out = {k: v for k, v in node.items() if k not in ("$ref", "allOf", "if", "then", "else")}
    out["properties"] = dict(node.get("properties", {}))
    out["required"] = list(node.get("required", []))
    conditional: dict[str, list] = {}
    parts = [resolve(node["$ref"], base)] if "$ref" in node else []
    parts += [(member, base) for member in node.get("allOf", [])]
    if "if" in node:
        condition = " or ".join(
            f"{key} {' or '.join(map(str, spec.get('enum', [spec.get('const')])))}"
            for key, spec in node["if"]["properties"].items()
        )
        for key, spec in node["then"].get("properties", {}).items():
            if "default" in spec:
                conditional.setdefault(key, []).append((condition, spec["default"]))
    for part, where in parts:
        part, more, _ = merged(part, where)
        for key, spec in part["properties"].items():
            out["properties"][key] = {**spec, **out["properties"].get(key, {})}
        out["required"] += [k for k in part["required"] if k not in out["required"]]
        if part.get("description"):
            out.setdefault("description", part["description"])
        for key, values in more.items():
            conditional.setdefault(key, []).extend(values)
    return out, conditional, base


def show(value) -> str:
    """A default as YAML writes it, in one line."""
    text = yaml.safe_dump(value, default_flow_style=True, width=1000).strip()
    return text.removesuffix("\n...").removesuffix("...").strip()


def choices(spec: Mapping) -> list:
    """The values an ``enum`` key (or a ``oneOf`` of enums and other types) allows."""
    values = list(spec.get("enum", []))
    for option in spec.get("oneOf", []):
        values += option.get("enum", [])
    return values


def describe(spec: Mapping) -> str:
    text = " ".join(str(spec.get("description", "")).split())
    values = [v for v in choices(spec) if v is not False]
    if values and not all(re.search(rf"(?<![\w-]){re.escape(str(v))}(?![\w-])", text) for v in values):
        text += f" One of {', '.join(f'`{v}`' for v in values)}."
    return text.strip().replace("|", "\\|")


def rows(node: Mapping, base: str, prefix: str = "") -> list[tuple[str, str, str]]:
    """(key, default, meaning) of every key of a node; a section with keys of its own (no ``$ref``) is
    listed as its own row, when it has a description, then its keys as ``section.key``."""
    node, conditional, base = merged(node, base)
    out = []
    for key, spec in node["properties"].items():
        name = f"{prefix}{key}"
        own = {k: v for k, v in spec.items() if k != "default"}
        if "$ref" not in spec and "allOf" not in spec and "properties" in spec and not spec.get("additionalProperties"):
            if spec.get("description"):
                out.append((name, _default(spec, key, node, conditional), describe(own)))
            out += rows(spec, base, f"{name}.")
            continue
        if "$ref" in spec and "description" not in spec:
            target, _ = resolve(spec["$ref"], base)
            own["description"] = target.get("description", "")
            own.setdefault("enum", target.get("enum", []))
        out.append((name, _default(spec, key, node, conditional), describe(own)))
    return out


def _default(spec: Mapping, key: str, node: Mapping, conditional: Mapping) -> str:
    shown = [f"`{show(spec['default'])}`"] if "default" in spec else []
    by_value: dict[str, list[str]] = {}
    for condition, value in conditional.get(key, []):
        by_value.setdefault(show(value), []).append(condition)
    shown += [f"`{value}` ({' or '.join(conditions)})" for value, conditions in by_value.items()]
    if not shown and key in node["required"]:
        return "required"
    return ", ".join(shown).replace("|", "\\|")


def table(ref: str) -> str:
    node, base = resolve(ref, "config.schema.yaml")
    lines = ["| key | default | meaning |", "|---|---|---|"]
    lines += [f"| `{key}` | {default} | {meaning} |" for key, default, meaning in rows(node, base)]
    return "\n".join(lines) + "\n"


def render(text: str) -> str:
    """The README text with every generated table rewritten from the schema."""
    return BLOCK.sub(lambda m: m.group(1) + table(m.group("ref")) + m.group(4), text)


def stale(text: str) -> list[str]:
    """The schema nodes whose table in ``text`` differs from what the schema gives."""
    return [m.group("ref") for m in BLOCK.finditer(text) if m.group("body") != table(m.group("ref"))]


def undescribed(text: str) -> list[str]:
    """``node: key`` of every row of the tables in ``text`` whose key the schema does not describe."""
    return [
        f"{m.group('ref')}: {key}"
        for m in BLOCK.finditer(text)
        for key, _, meaning in rows(*resolve(m.group("ref"), "config.schema.yaml"))
        if not meaning
    ]


def main(check: bool = False, readme: str = str(README)) -> None:
    text = Path(readme).read_text()
    if not check:
        Path(readme).write_text(render(text))
        return
    old = stale(text)
    for ref in old:
        print(f"{readme}: the table of {ref} is out of date (python workflow/scripts/config_docs.py)")
    if old:
        sys.exit(1)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
