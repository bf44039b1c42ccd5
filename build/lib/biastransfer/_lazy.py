"""Curated namespaces that load on first use (PEP 562), as scipy's subpackages do: importing one light module
of a package (the config checks read a few) does not import torch, scipy.stats or matplotlib with the rest."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from importlib import import_module
from types import ModuleType


def lazy_namespace(package: str, exports: Mapping[str, str | None]) -> None:
    """Make ``package``'s public names (``exports``: name -> the module of the package that defines it, or
    None for a submodule exported as itself) load when first read. A submodule named like one of them
    (``stats.ieat``, the module of ``stats.ieat``, the function) does not replace it when imported, as the
    eager ``from .ieat import ieat`` in an ``__init__`` would not."""

    class Namespace(ModuleType):
        def __getattr__(self, name: str):
            if name not in exports:
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            module = import_module(f"{package}.{exports[name] or name}")
            value = module if exports[name] is None else getattr(module, name)
            ModuleType.__setattr__(self, name, value)
            return value

        def __setattr__(self, name: str, value) -> None:
            if name in exports and exports[name] is not None and isinstance(value, ModuleType):
                value = getattr(value, name) if exports[name] == name else getattr(self, name)
            ModuleType.__setattr__(self, name, value)

        def __dir__(self) -> list[str]:
            return sorted({*self.__dict__, *exports})

    sys.modules[package].__class__ = Namespace
