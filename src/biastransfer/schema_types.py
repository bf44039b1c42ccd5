"""A config checked against its JSON schema, every problem at once, with integers counted strictly, and its
defaults filled.

Snakemake's ``validate`` stops at the first problem, and JSON Schema counts ``2.0`` as an integer (draft 4
on), so ``epochs: 2.0`` would pass it and fail later, inside a job, with a TypeError that names no key.
Each schema file is read once per process (every ``$ref`` to a file beside it would read it again).
"""

from __future__ import annotations

import copy
import functools
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


def read_schema(path: str | os.PathLike) -> dict:
    """The schema file ``path`` (YAML) as a mapping, read now (with libyaml where PyYAML has it)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(Path(path).read_text(encoding="utf-8"), Loader=loader)  # noqa: S506 (a safe loader)


@functools.cache
def load_schema(path: str) -> dict:
    """The schema file ``path`` (an absolute path) as :func:`read_schema` gives it, read once per process; never
    modify it."""
    return read_schema(path)


def _validator(schema: str | os.PathLike, *, fill_defaults: bool):
    """A draft 2020-12 validator of ``schema`` (relative ``$ref``s read beside it).

    Without ``fill_defaults``: integers counted strictly everywhere (each file read less its ``$schema``: a
    resource that names its dialect is validated by that dialect's own class). With it: as Snakemake's
    ``validate(..., set_default=True)``, each absent key that has a default set (a copy of it) as it checks,
    but in a file that a ``$ref`` names whole (which names its dialect), whose keys keep no default.
    """
    from jsonschema import Draft202012Validator, validators
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    def contents(path: str) -> dict:
        whole = load_schema(path)
        return whole if fill_defaults else {k: v for k, v in whole.items() if k != "$schema"}

    def retrieve(ref):
        return Resource.from_contents(contents(url2pathname(urlparse(ref).path)), default_specification=DRAFT202012)

    if fill_defaults:
        check_properties = Draft202012Validator.VALIDATORS["properties"]

        def properties(validator, props, instance, subschema):
            if validator.is_type(instance, "object"):
                for key, prop in props.items():
                    if "default" in prop and key not in instance:
                        instance[key] = copy.deepcopy(prop["default"])
            yield from check_properties(validator, props, instance, subschema)

        cls = validators.extend(Draft202012Validator, {"properties": properties})
    else:
        strict = Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_int)
        cls = validators.extend(Draft202012Validator, type_checker=strict)
    path = Path(schema).resolve()
    return cls({**contents(str(path)), "$id": path.as_uri()}, registry=Registry(retrieve=retrieve))


def _problem(error) -> str:
    from jsonschema.exceptions import best_match

    best = best_match([error])
    return _non_integer(error) or f"{_key(best.absolute_path)}: {best.message}"


def schema_problems(config: Mapping, schema: str | os.PathLike) -> list[str]:
    """One line per place where ``config`` breaks ``schema`` (a YAML file; relative ``$ref``s are read
    beside it), naming its key, sorted: ``finetune.defaults.epochs: 2.0 is not an integer (write 2)``,
    ``analysis.ieat: Additional properties are not allowed ('permutation' was unexpected)``. A float is no
    integer here; where several alternatives fail, the most specific problem is named."""
    return sorted({_problem(error) for error in _validator(schema, fill_defaults=False).iter_errors(config)})


def filled_problems(config: dict, schema: str | os.PathLike) -> list[str]:
    """In place: ``schema``'s defaults set where ``config`` lacks their keys (``_validator``'s
    ``fill_defaults``; a default of an object gets the defaults of its own keys), and one line per problem
    found on the way (as :func:`schema_problems`, but integers as JSON Schema counts them)."""
    return sorted({_problem(error) for error in _validator(schema, fill_defaults=True).iter_errors(config)})
