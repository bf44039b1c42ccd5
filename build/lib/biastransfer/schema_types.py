"""A check of a config against its JSON schema that Snakemake's ``validate`` does not make.

JSON Schema counts ``2.0`` as an integer (draft 4 on), so ``epochs: 2.0`` passes ``validate`` and
fails later, inside a job, with a TypeError that names no key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

import yaml


def _is_int(checker, value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _key(path) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


def non_integer_problems(config: Mapping, schema: str | os.PathLike) -> list[str]:
    """One line per value that ``schema`` (a YAML file; relative ``$ref``s are read beside it) types as
    an integer but that is a float in ``config``, naming its key: ``finetune.defaults.epochs: 2.0 is
    not an integer (write 2)``."""
    from jsonschema import Draft202012Validator, validators
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    def load(path):
        # without "$schema": a resource that names its dialect is validated by that dialect's own class
        contents = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        return {k: v for k, v in contents.items() if k != "$schema"}

    def retrieve(ref):
        return Resource.from_contents(load(url2pathname(urlparse(ref).path)), default_specification=DRAFT202012)

    root = {**load(schema), "$id": Path(schema).resolve().as_uri()}
    strict = validators.extend(
        Draft202012Validator, type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_int)
    )
    problems = {}

    def visit(errors):
        for error in errors:
            types = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
            if error.validator == "type" and "integer" in types and isinstance(error.instance, float):
                value = error.instance
                hint = f" (write {int(value)})" if value.is_integer() else ""
                problems.setdefault(_key(error.absolute_path), f"{value!r} is not an integer{hint}")
            visit(error.context or [])

    visit(strict(root, registry=Registry(retrieve=retrieve)).iter_errors(config))
    return [f"{key}: {text}" for key, text in sorted(problems.items())]
