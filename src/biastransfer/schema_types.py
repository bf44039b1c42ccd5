"""A config checked against its JSON schema, every problem at once, with integers counted strictly.

Snakemake's ``validate`` stops at the first problem, and JSON Schema counts ``2.0`` as an integer (draft 4
on), so ``epochs: 2.0`` would pass it and fail later, inside a job, with a TypeError that names no key.
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


def _non_integer(error) -> str | None:
    """The words for a float where ``error`` (or one of the errors under it) wants an integer, else None."""
    types = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
    if error.validator == "type" and "integer" in types and isinstance(error.instance, float):
        hint = f" (write {int(error.instance)})" if error.instance.is_integer() else ""
        return f"{_key(error.absolute_path)}: {error.instance!r} is not an integer{hint}"
    return next((found for sub in error.context or [] if (found := _non_integer(sub))), None)


def schema_problems(config: Mapping, schema: str | os.PathLike) -> list[str]:
    """One line per place where ``config`` breaks ``schema`` (a YAML file; relative ``$ref``s are read
    beside it), naming its key, sorted: ``finetune.defaults.epochs: 2.0 is not an integer (write 2)``,
    ``analysis.ieat: Additional properties are not allowed ('permutation' was unexpected)``. A float is no
    integer here; where several alternatives fail, the most specific problem is named."""
    from jsonschema import Draft202012Validator, validators
    from jsonschema.exceptions import best_match
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
    problems = set()
    for error in strict(root, registry=Registry(retrieve=retrieve)).iter_errors(config):
        best = best_match([error])
        problems.add(_non_integer(error) or f"{_key(best.absolute_path)}: {best.message}")
    return sorted(problems)
