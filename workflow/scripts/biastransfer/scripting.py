"""Run a workflow script's ``main`` from Snakemake or, for a reviewer, from the command line.

Each script in ``workflow/scripts`` defines ``main(...)`` whose parameter names are the rule's named
inputs, outputs and params, and ends with ``run(main, globals().get("snakemake"))``. Under Snakemake
the arguments come from the ``snakemake`` object and logging goes to ``snakemake.log[0]``; run by hand,
``python workflow/scripts/<name>.py --help`` lists the same arguments (lists take several values,
mappings take JSON) and logging goes to the terminal.
"""

from __future__ import annotations

import argparse
import inspect
import json
import logging
import sys
import types
import typing
from collections import abc
from pathlib import Path
from typing import Any, Callable

LOG_FORMAT = "%(asctime)s %(levelname)s %(message)s"


def _setup_logging(log_path: str | None) -> None:
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_path:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        handlers = [logging.FileHandler(log_path, mode="w")]
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, handlers=handlers, force=True)
    logging.captureWarnings(True)


def _progress_to_stderr() -> None:
    """Also show the ``biastransfer.progress`` lines on stderr (the console of a local Snakemake run)
    when the log goes to a file; one handler however often this is called."""
    progress = logging.getLogger("biastransfer.progress")
    for handler in [h for h in progress.handlers if getattr(h, "_biastransfer_progress", False)]:
        progress.removeHandler(handler)
    if any(isinstance(h, logging.FileHandler) for h in logging.getLogger().handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        handler._biastransfer_progress = True
        progress.addHandler(handler)


def _plain(value: Any) -> Any:
    """Snakemake's named lists and IO strings as plain Python values."""
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, str):
        return str(value)
    return value


def _from_snakemake(main: Callable, smk: Any) -> dict[str, Any]:
    wanted = inspect.signature(main).parameters
    available: dict[str, Any] = {"threads": smk.threads, "wildcards": dict(smk.wildcards.items())}
    for section in (smk.input, smk.output, smk.params):
        available.update({k: _plain(v) for k, v in section.items()})
    missing = [n for n, p in wanted.items() if n not in available and p.default is inspect.Parameter.empty]
    if missing:
        raise TypeError(f"{main.__module__}.main needs {missing}, which the rule does not name")
    return {n: available[n] for n in wanted if n in available}


def _argument_type(annotation: Any) -> tuple[Callable, str | None]:
    """(converter, nargs) for a parameter annotation; ``X | None`` is treated as ``X``."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    base = typing.get_origin(annotation) or annotation
    if base in (list, tuple, abc.Sequence):
        return str, "+"
    if base in (dict, abc.Mapping, bool):
        return json.loads, None
    if base in (int, float):
        return base, None
    return str, None


def _from_command_line(main: Callable, argv: list[str] | None) -> dict[str, Any]:
    doc = (sys.modules[main.__module__].__doc__ or "").strip()
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, param in inspect.signature(main).parameters.items():
        convert, nargs = _argument_type(param.annotation)
        required = param.default is inspect.Parameter.empty
        parser.add_argument(
            f"--{name}", type=convert, nargs=nargs, required=required,
            default=None if required else param.default,
            help=f"({'required' if required else f'default: {param.default!r}'})",
        )
    parser.add_argument("--log", default=None, help="write the log to this file instead of the terminal")
    args = vars(parser.parse_args(argv))
    _setup_logging(args.pop("log"))
    return args


def run(main: Callable, smk: Any = None, argv: list[str] | None = None) -> Any:
    """Call ``main`` with arguments from Snakemake's ``smk`` object, or from the command line."""
    if smk is not None:
        _setup_logging(smk.log[0] if smk.log else None)
        kwargs = _from_snakemake(main, smk)
    else:
        kwargs = _from_command_line(main, argv)
    _progress_to_stderr()
    try:
        return main(**kwargs)
    except Exception:
        logging.getLogger(main.__module__).exception("failed")
        raise
