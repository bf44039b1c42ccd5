"""Cross-references between the config's sections, checked once for every section that makes them."""

from __future__ import annotations

from collections.abc import Mapping


def ieat_reference_problems(where: str, config: Mapping, analysis_set: str, test: str | None) -> list[str]:
    """What is wrong with ``{where}.analysis_set`` and ``{where}.test`` naming iEAT ``test`` of an analysis set
    (``test`` None: only the set is checked)."""
    aset = config["analysis_sets"].get(analysis_set)
    if aset is None:
        return [f"{where}.analysis_set: unknown analysis set {analysis_set!r}"]
    if test is not None and test not in [t["name"] for t in aset["ieat"]]:
        return [f"{where}.test: {test!r} is not an iEAT test of analysis_sets.{analysis_set}"]
    return []
