"""Run a workflow script's ``main`` from Snakemake or, for a reviewer, from the command line.

Each script in ``workflow/scripts`` defines ``main(...)`` whose parameter names are the rule's named
inputs, outputs, params and (where it needs them) wildcards, and ends with
``run(main, globals().get("snakemake"))``. Under Snakemake the arguments come from the ``snakemake``
object and logging goes to ``snakemake.log[0]``; run by hand, ``python workflow/scripts/<name>.py
--help`` lists the same arguments (lists take several values or one JSON array, mappings take JSON)
and logging goes to the terminal. The handoff is strict: a name given twice, a name ``main`` does not take, or a required
parameter nobody gives stops the job naming rule, name and script (``handoff_problems``;
tests/test_scripting.py checks every rule of the workflow).
"""

from __future__ import annotations

import argparse
import functools
import inspect
import json
import logging
import sys
import types
import typing
from collections import abc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from biastransfer.stages import parse_stage
from biastransfer.workflow.settings import settings_type

LOG_FORMAT = "%(asctime)s %(levelname)s %(message)s"
# Errors whose message names what is wrong (the file, table row, class or key): a job that raises one ends
# with that message, not a traceback. Any other exception is a defect here, and keeps its traceback.
NAMED_ERRORS = (ValueError, OSError, FloatingPointError)


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


SECTIONS = ("input", "output", "params")


def handoff_problems(
    rule: str,
    script: str,
    accepted: dict[str, bool],
    named: dict[str, list[str]],
    wildcards: list[str] = (),
) -> list[str]:
    """What is wrong with handing a rule's named values to a script's ``main``.

    ``accepted`` maps each parameter of ``main`` to whether it is required; ``named`` maps ``input``,
    ``output`` and ``params`` to the names the rule gives. A name in two sections (wildcards included),
    a name ``main`` does not accept, and a required parameter nobody provides are each one problem.
    Wildcards that ``main`` does not take are not problems: they only shape the paths.
    """
    problems, seen = [], {}
    for section, names in [*named.items(), ("wildcards", list(wildcards))]:
        for name in names:
            if name in seen:
                problems.append(f"rule {rule}: {name!r} is named in both {seen[name]} and {section} ({script})")
            seen.setdefault(name, section)
            if section != "wildcards" and name not in accepted:
                problems.append(f"rule {rule}: {section} {name!r} is not a parameter of main ({script})")
    provided = set(seen) | {"threads"}
    missing = [n for n, required in accepted.items() if required and n not in provided]
    if missing:
        problems.append(f"rule {rule}: main needs {missing}, which the rule does not name ({script})")
    return problems


def _wildcard_value(param: inspect.Parameter, value: str) -> Any:
    """A wildcard (always text) as the type ``main`` declares for it (``int`` for seeds)."""
    convert, _ = _argument_type(param.annotation)
    return convert(value) if convert in (int, float) else str(value)


def _from_snakemake(main: Callable, smk: Any) -> dict[str, Any]:
    wanted = inspect.signature(main, eval_str=True).parameters
    script = Path(inspect.getsourcefile(main) or main.__module__).name
    sections = {s: getattr(smk, s) for s in SECTIONS}
    problems = handoff_problems(
        getattr(smk, "rule", "?"),
        script,
        {n: p.default is inspect.Parameter.empty for n, p in wanted.items()},
        {s: [k for k, _ in named.items()] for s, named in sections.items()},
        [k for k, _ in smk.wildcards.items()],
    )
    if problems:
        raise TypeError("; ".join(problems))
    available: dict[str, Any] = {"threads": smk.threads}
    available.update({k: _wildcard_value(wanted[k], v) for k, v in smk.wildcards.items() if k in wanted})
    for named in sections.values():
        available.update({k: _plain(v) for k, v in named.items()})
    return {n: _settings_value(wanted[n], available[n]) for n in wanted if n in available}


def _settings_value(param: inspect.Parameter, value: Any) -> Any:
    """A rule's settings (a plain mapping in its params) as the settings class ``main`` declares."""
    kind = settings_type(param.annotation)
    return kind.from_mapping(value) if kind else value


def _list_item(text: str) -> Any:
    """One value of a list argument: a JSON array or object (``'[{"X": "man"}]'``) is parsed, anything else
    is the string itself."""
    if text.lstrip()[:1] in ("[", "{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as err:
            raise argparse.ArgumentTypeError(f"not JSON: {text!r} ({err})") from None
    return text


def _settings_argument(kind: type, text: str) -> Any:
    """``--settings '<JSON>'`` as its settings class; a wrong key or bad JSON is argparse's error, named."""
    try:
        return kind.from_mapping(json.loads(text))
    except (TypeError, ValueError) as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _argument_type(annotation: Any) -> tuple[Callable, str | None]:
    """(converter, nargs) for a parameter annotation; ``X | None`` is treated as ``X``; a bare bool flag is true."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    base = typing.get_origin(annotation) or annotation
    if base in (list, tuple, abc.Sequence):
        return _list_item, "+"
    if base is bool:
        return json.loads, "?"
    if base in (dict, abc.Mapping):
        return json.loads, None
    if base in (int, float):
        return base, None
    if kind := settings_type(annotation):
        return functools.partial(_settings_argument, kind), None
    return str, None


def _from_command_line(main: Callable, argv: list[str] | None) -> dict[str, Any]:
    doc = (sys.modules[main.__module__].__doc__ or "").strip()
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, param in inspect.signature(main, eval_str=True).parameters.items():
        convert, nargs = _argument_type(param.annotation)
        required = param.default is inspect.Parameter.empty
        parser.add_argument(
            f"--{name}",
            type=convert,
            nargs=nargs,
            **({"const": True} if nargs == "?" else {}),
            required=required,
            default=None if required else param.default,
            help=f"({'required' if required else f'default: {param.default!r}'})",
        )
    parser.add_argument("--log", default=None, help="write the log to this file instead of the terminal")
    args = vars(parser.parse_args(argv))
    for name, value in args.items():  # one JSON array given for a list is that list
        if isinstance(value, list) and len(value) == 1 and isinstance(value[0], list):
            args[name] = value[0]
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
    log = logging.getLogger(main.__module__)
    for name, value in kwargs.items():
        if hasattr(value, "as_dict") and settings_type(type(value)):  # to rerun the job by hand: --settings '...'
            log.info("--%s '%s'", name, json.dumps(value.as_dict()))
    try:
        return main(**kwargs)
    except Exception as exc:
        if smk is None or not isinstance(exc, NAMED_ERRORS):
            log.exception("failed")
            raise
        # a problem of the data, the files or the disk, which the message names: the traceback stays in
        # the log above it; the log's last line and the console (stderr) carry the message alone
        log.info("failed:", exc_info=True)
        message = f"{type(exc).__name__}: {exc}"
        log.error("%s", message)
        if smk.log:
            print(f"{Path(inspect.getsourcefile(main) or main.__module__).name}: {message}", file=sys.stderr)
        raise SystemExit(1) from None


def stage_files(stages: list, *files: list) -> list[tuple]:
    """``(stage, file, ...)`` for each network of a job that runs over several (``files`` in stage order); a
    clear error where a list's length differs from the stages'."""
    for named in files:
        if len(named) != len(stages):
            raise ValueError(f"{len(named)} files for {len(stages)} stages {stages}: one file per stage")
    return list(zip(stages, *files))


def dataset_files(datasets: list, files: list) -> dict[str, list]:
    """``{dataset: its files, in their order}`` for a job that runs over several finetuning datasets, each file
    named by its network's stage (``ft-<dataset>-seed<n>`` or ``scratch-<dataset>-seed<n>``, the workflow's
    names); a clear error for a file of no such stage or of a dataset not in ``datasets``."""
    grouped: dict[str, list] = {d: [] for d in datasets}
    for file in files:
        try:
            dataset, _ = parse_stage(Path(file).stem)
        except ValueError as err:
            raise ValueError(f"{file}: the file is not named by its stage: {err}") from None
        if dataset is None:
            raise ValueError(f"{file}: the pretrained network, not one trained on a finetuning dataset")
        if dataset not in grouped:
            raise ValueError(f"{file}: a network of dataset {dataset!r}, not one of the datasets {datasets}")
        grouped[dataset].append(file)
    return grouped
