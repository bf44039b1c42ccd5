"""Each rule's settings as one typed object, built by the plan from the filled config.

A rule passes its settings whole, as a plain mapping (``params: settings=PLAN.settings("change", ...)``, so that
Snakemake's params trigger sees every value and a changed value reruns exactly the jobs it shapes); the
script's ``main`` takes them whole, typed (``settings: ChangeSettings``), converted by
``biastransfer.scripting`` (or, run by hand, from ``--settings '<JSON>'``). A class declares its rule
(``rule``) and builds itself from the plan (``build``); the fields carry only what shapes that rule's outputs.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Mapping
from typing import Any, ClassVar, Self

#: rule name -> its settings class (filled by ``Settings.__init_subclass__``).
RULE_SETTINGS: dict[str, type[Settings]] = {}


@dataclasses.dataclass(frozen=True)
class Settings:
    """Base of a rule's settings: a frozen dataclass read from and written to a plain mapping."""

    rule: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs):
        """Register a class that names its rule; it must then build itself from the plan (``build``)."""
        super().__init_subclass__(**kwargs)
        if cls.rule:
            if not callable(getattr(cls, "build", None)):
                raise TypeError(f"{cls.__name__}: a rule's settings class needs build(plan, **wildcards)")
            if cls.rule in RULE_SETTINGS:
                raise TypeError(f"rule {cls.rule!r} has two settings classes: {RULE_SETTINGS[cls.rule]}, {cls}")
            RULE_SETTINGS[cls.rule] = cls

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> Self:
        """The settings from a mapping with exactly this class's fields (nested settings as mappings)."""
        if isinstance(values, cls):
            return values
        if not isinstance(values, Mapping):
            raise TypeError(f"{cls.__name__}: expected a mapping of settings, got {type(values).__name__}")
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - set(fields))
        missing = sorted(
            n
            for n, f in fields.items()
            if n not in values and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        )
        if unknown or missing:
            said = ([f"unknown {unknown}"] if unknown else []) + ([f"missing {missing}"] if missing else [])
            raise TypeError(f"{cls.__name__} ({cls.rule or 'settings'}): {'; '.join(said)}")
        hints = typing.get_type_hints(cls)
        return cls(**{name: _typed(hints[name], value) for name, value in values.items()})

    @classmethod
    def pick(cls, section: Mapping[str, Any], **overrides: Any) -> Self:
        """The settings from the keys of a larger mapping (a config section) that are this class's fields,
        ``overrides`` replacing or adding some."""
        values = {**section, **overrides}
        return cls.from_mapping({f.name: values[f.name] for f in dataclasses.fields(cls) if f.name in values})

    def as_dict(self) -> dict[str, Any]:
        """The settings as a plain, canonical mapping (sorted keys, JSON types)."""
        return canonical(dataclasses.asdict(self))


def canonical(value: Any) -> Any:
    """``value`` with every mapping's keys sorted (recursively); lists keep their order.

    Rule params are compared by their text to decide reruns: sorting makes a reordered config
    (or one dumped by a YAML writer) rerun nothing.
    """
    if isinstance(value, Mapping):
        return {k: canonical(value[k]) for k in sorted(value)}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    return value


def _typed(annotation: Any, value: Any) -> Any:
    """A field's value as its declared type where that is a settings class (or one or ``None``: ``None`` stays);
    any other value as given."""
    options = typing.get_args(annotation)
    kinds = [a for a in options if a is not type(None)] or [annotation]
    kind = settings_type(kinds[0]) if len(kinds) == 1 else None
    if kind is None or (value is None and type(None) in options):
        return value
    return kind.from_mapping(value)


def settings_type(annotation: Any) -> type[Settings] | None:
    """The settings class a ``main`` parameter is annotated with (``None`` for any other annotation)."""
    if inspect.isclass(annotation) and issubclass(annotation, Settings):
        return annotation
    return None
