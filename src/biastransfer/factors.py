"""The config's ``factors`` section (what predicts a measure across models, docs/statistics.md): each question's
measure must be one the run computes, and its covariates known, given for every model of the question, and
of two levels or more where categorical; checked before any job. Read at DAG-build time: nothing heavy."""

from __future__ import annotations

from collections.abc import Mapping

from biastransfer.claims import CHANGE_MEASURES, IEAT_MEASURES
from biastransfer.covariates import CKA, DATASET, covariate_problems, model_covariates
from biastransfer.references import ieat_reference_problems

RESOLUTION = "resolution"


def factors_on(config: Mapping) -> bool:
    """Whether the run asks any factors question."""
    return bool(config["factors"]["questions"])


def question_models(question: Mapping, config: Mapping) -> list[str]:
    """The models of a question: its ``models``, or every configured model."""
    return list(question["models"] or config["models"])


def question_datasets(question: Mapping, config: Mapping) -> list[str]:
    """The finetuning datasets a question observes: its ``datasets``, or the first of finetune.datasets
    (none for a pretrained d)."""
    if question["measure"] == "d" and question["stage"] == "pretrained":
        return []
    return list(question["datasets"] or config["finetune"]["datasets"][:1])


def config_covariates(
    config: Mapping, models=None, resolutions: Mapping[str, int | None] | None = None
) -> dict[str, dict[str, dict]]:
    """``{model: {covariate: {value, source}}}`` of ``models`` (every configured one by default)
    (``biastransfer.covariates.model_covariates``); ``resolutions``: ``{model: crop}`` from the libraries
    (``biastransfer.models.resolve.input_resolutions``, which needs torch), for a model whose entry and the
    registry give none (not given: such a model has no resolution)."""
    resolutions = resolutions or {}
    names = list(config["models"]) if models is None else models
    return {m: model_covariates(m, config["models"][m], lambda m=m: resolutions.get(m)) for m in names}


def asks_covariate(config: Mapping, covariate: str) -> bool:
    """Whether a factors question names ``covariate``."""
    return any(covariate in q["covariates"] for q in config["factors"]["questions"])


def asks_resolution(config: Mapping) -> bool:
    """Whether a factors question names the input resolution (which the libraries may have to give)."""
    return asks_covariate(config, RESOLUTION)


def _question_problems(where: str, question: Mapping, config: Mapping, resolutions: Mapping | None) -> list[str]:
    measure, datasets = question["measure"], config["finetune"]["datasets"]
    problems = ieat_reference_problems(where, config, question["analysis_set"], question["test"])
    if question["analysis_set"] not in config["analysis_sets"]:
        return problems
    if measure in IEAT_MEASURES and not config["analysis_sets"][question["analysis_set"]]["ieat"]:
        problems.append(
            f"{where}.measure: {measure} needs iEATs, and analysis_sets.{question['analysis_set']} has none"
        )
    pretrained_only = measure == "d" and question["stage"] == "pretrained"
    if CKA in question["covariates"] and pretrained_only:
        problems.append(
            f"{where}.covariates: cka (the linear CKA between the pretrained and the finetuned embeddings) needs "
            "finetuned networks, and the pretrained d has none: ask it of a finetuning measure"
        )
    if not pretrained_only and config["zoo"]:
        problems.append(
            f"{where}.measure: {measure} needs finetuned networks, and a zoo run measures pretrained ones only"
        )
    elif not pretrained_only and not datasets:
        problems.append(f"{where}.measure: {measure} needs finetuning, and finetune.datasets is empty")
    if measure in CHANGE_MEASURES and config["analysis"]["ieat"]["bootstrap"] == 0:
        problems.append(f"{where}.measure: {measure} needs the change of d, which analysis.ieat.bootstrap: 0 turns off")
    problems += [
        f"{where}.datasets: {d!r} is not in finetune.datasets" for d in question["datasets"] if d not in datasets
    ]
    if DATASET in question["covariates"] and len(question_datasets(question, config)) < 2:
        problems.append(f"{where}.covariates: dataset needs two finetuning datasets or more in {where}.datasets")
    unknown = [m for m in question["models"] if m not in config["models"]]
    problems += [f"{where}.models: unknown model {m!r}" for m in unknown]
    for term in question["references"]:
        if term not in question["covariates"]:
            problems.append(f"{where}.references: {term!r} is not one of the question's covariates")
    if unknown:
        return problems
    models = question_models(question, config)
    terms = [t for t in question["covariates"] if t != DATASET and (resolutions is not None or t != RESOLUTION)]
    found = config_covariates(config, models, resolutions) if terms else {}
    problems += covariate_problems(where, terms, found, models)
    return problems


def factors_problems(config: Mapping, resolutions: Mapping | None = None) -> list[str]:
    """``factors``: unique question names; each question names a defined set, test, datasets and models, a
    measure this run computes, and covariates every one of its models has (``covariate_problems``). The
    input resolution is checked only with the libraries' ``resolutions`` (:func:`resolution_problems`)."""
    questions = config["factors"]["questions"]
    names = [q["name"] for q in questions]
    problems = [] if len(names) == len(set(names)) else [f"factors.questions: names must be unique, got {names}"]
    for question in questions:
        problems += _question_problems(f"factors.questions.{question['name']}", question, config, resolutions)
    return problems


def resolution_problems(config: Mapping, resolutions: Mapping[str, int | None]) -> list[str]:
    """The questions that name the input resolution: a model without one (``covariate_problems``), with the
    libraries' ``resolutions``."""
    problems = []
    for question in config["factors"]["questions"]:
        if RESOLUTION in question["covariates"] and all(m in config["models"] for m in question["models"]):
            models = question_models(question, config)
            found = config_covariates(config, models, resolutions)
            problems += covariate_problems(f"factors.questions.{question['name']}", [RESOLUTION], found, models)
    return problems
