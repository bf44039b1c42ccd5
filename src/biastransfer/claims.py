"""The config's ``claims`` section (claims about groups of models, docs/claims.md): what it names must exist,
and each claim's measure must be one the run computes (a zoo run: pretrained d only). Read at DAG-build time,
so it imports nothing heavy."""

from __future__ import annotations

from collections.abc import Mapping

from biastransfer.references import ieat_reference_problems

#: Measures read from the change of d (ieat_change.csv), which needs analysis.ieat.bootstrap > 0.
CHANGE_MEASURES = ("change_d", "abs_change_d", "new_associations")
IEAT_MEASURES = ("d", *CHANGE_MEASURES)


def claims_on(config: Mapping) -> bool:
    """Whether the run tests any claim."""
    return bool(config["claims"]["tests"])


def _test_problems(where: str, test: Mapping, config: Mapping) -> list[str]:
    groups, datasets = config["claims"]["groups"], config["finetune"]["datasets"]
    measure = test["measure"]
    problems = ieat_reference_problems(where, config, test["analysis_set"], test["test"])
    if test["analysis_set"] not in config["analysis_sets"]:
        return problems
    if measure in IEAT_MEASURES and not config["analysis_sets"][test["analysis_set"]]["ieat"]:
        problems.insert(0, f"{where}.measure: {measure} needs iEATs, and analysis_sets.{test['analysis_set']} has none")
    if measure == "d" and test["test"] is None:
        problems.append(f"{where}.test: measure d needs one iEAT test")
    pretrained_only = measure == "d" and test["stage"] == "pretrained"
    if not pretrained_only and config["zoo"]:
        key, what = ("stage", "stage finetuned") if measure == "d" else ("measure", measure)
        problems.append(
            f"{where}.{key}: {what} needs finetuned networks, and a zoo run measures pretrained ones only "
            "(a zoo tests measure d at stage pretrained, compare groups)"
        )
    elif not pretrained_only and not datasets:
        problems.append(f"{where}.measure: {measure} needs finetuning, and finetune.datasets is empty")
    if measure in CHANGE_MEASURES and config["analysis"]["ieat"]["bootstrap"] == 0:
        problems.append(f"{where}.measure: {measure} needs the change of d, which analysis.ieat.bootstrap: 0 turns off")
    if test["compare"] == "groups":
        for side in ("x", "y"):
            if test[side] not in groups:
                problems.append(f"{where}.{side}: unknown group {test[side]!r} (claims.groups: {', '.join(groups)})")
        if test["dataset"] is not None and test["dataset"] not in datasets:
            problems.append(f"{where}.dataset: {test['dataset']!r} is not in finetune.datasets")
    else:
        for side in ("x", "y"):
            if test[side] not in datasets:
                problems.append(f"{where}.{side}: {test[side]!r} is not in finetune.datasets")
        problems += [f"{where}.models: unknown group {label!r}" for label in test["models"] if label not in groups]
        if pretrained_only:
            problems.append(f"{where}: a pretrained d is the same for every finetuning dataset; compare groups")
    if test["x"] == test["y"]:
        problems.append(f"{where}: x and y are both {test['x']!r}")
    return problems


def model_group_problems(where: str, groups: Mapping[str, list], models: Mapping) -> list[str]:
    """Groups of models (``{label: [models]}`` at key ``where``) that name an unknown model, or one model twice."""
    problems, seen = [], {}
    for label, members in groups.items():
        for model in members:
            if model not in models:
                problems.append(f"{where}.{label}: unknown model {model!r}")
            elif model in seen:
                problems.append(f"{where}.{label}: model {model!r} is also in group {seen[model]!r}")
            seen.setdefault(model, label)
    return problems


def claims_problems(config: Mapping) -> list[str]:
    """``claims``: groups name configured models, each in one group; every claim names defined groups,
    datasets, sets and tests, and a measure this run computes."""
    claims = config["claims"]
    problems = model_group_problems("claims.groups", claims["groups"], config["models"])
    names = [t["name"] for t in claims["tests"]]
    if len(names) != len(set(names)):
        problems.append(f"claims.tests: claim names must be unique, got {names}")
    for test in claims["tests"]:
        problems += _test_problems(f"claims.tests.{test['name']}", test, config)
    return problems
