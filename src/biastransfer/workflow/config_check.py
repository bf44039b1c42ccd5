"""The one check of a config before any job: the workflow's (rules/common.smk) and the command line's
(``python -m biastransfer.workflow.config FILE...``).

:func:`validate_config` runs, in order: the schema (``biastransfer.schema_types.schema_problems``: every
problem at once, integers counted strictly), the defaults (``biastransfer.workflow.config.fill_defaults``), every
section's cross-references (``biastransfer.workflow.config.section_problems``) and the layer profiles
(:func:`layer_check_problems`, which needs torch: so not in ``biastransfer.workflow.config``, which the jobs import).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

from biastransfer.check_cache import passed_check
from biastransfer.schema_types import schema_problems
from biastransfer.workflow.config import (
    SCHEMA,
    ConfigError,
    drop_removed,
    fill_defaults,
    merge_configs,
    section_problems,
)


def layer_check_problems(config: Mapping) -> list[str]:
    """With layer profiles on, every model's profile resolved on a network without weights
    (``biastransfer.models.layers.layer_problems``: torch, only then), remembered once passed for these
    models (``biastransfer.check_cache``)."""
    if not config["analysis"]["layers"]["enabled"]:
        return []

    def check():
        from biastransfer.models.layers import layer_problems

        return layer_problems(config)

    inputs = {"models": config["models"], "layers": config["analysis"]["layers"]}
    return passed_check("layers", inputs, check, code="models")


def factors_resolution_problems(config: Mapping) -> list[str]:
    """With a factors question on the input resolution, the models that have none, the libraries' resolved
    (``biastransfer.models.resolve.input_resolutions``: timm, open_clip, only then)."""
    from biastransfer.factors import asks_resolution, resolution_problems

    if not asks_resolution(config):
        return []
    from biastransfer.models.resolve import input_resolutions

    return resolution_problems(config, input_resolutions(config))


def validation_problems(config: dict) -> list[str]:
    """In place: every check the workflow makes of a (merged) config before any job, in order, and every
    problem found, one line each naming its key and value. What a later file removed with null is dropped
    (``drop_removed``); the keys and types are checked against ``SCHEMA``, integers strictly
    (``schema_problems``: all of them, and nothing more when there are any); then every default is filled
    (``fill_defaults``), and the filled config's ``section_problems``, ``model_spec_problems`` (every model
    a network the library can build), ``layer_check_problems`` and ``factors_resolution_problems`` found."""
    problems = schema_problems(drop_removed(config), SCHEMA)
    if problems:
        return problems
    fill_defaults(config)
    from biastransfer.models.resolve import model_spec_problems  # timm, open_clip: only until passed once

    return [
        *section_problems(config),
        *model_spec_problems(config),
        *layer_check_problems(config),
        *factors_resolution_problems(config),
    ]


def validate_config(config: dict) -> dict:
    """In place: the config checked and filled (``validation_problems``); ConfigError listing every problem."""
    problems = validation_problems(config)
    if problems:
        raise ConfigError(problems)
    return config


def main(argv: Sequence[str]) -> int:
    """``python -m biastransfer.workflow.config FILE...``: the files merged in order (as ``--configfile FILE...``) and
    checked as the workflow checks them (``validate_config``); every problem on stderr and exit status 2, or
    one line on stdout and 0."""
    if not argv:
        print("usage: python -m biastransfer.workflow.config FILE... (config files, merged in order)", file=sys.stderr)
        return 2
    try:
        config = validate_config(merge_configs(argv))
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(
        f"OK: {' + '.join(map(str, argv))}: {len(config['models'])} model(s), {len(config['analysis_sets'])} "
        f"analysis set(s), {len(config['finetune']['datasets'])} finetuning dataset(s)"
    )
    return 0
