"""Workflow configuration helpers: cross-reference checks and per-run parameters (read at DAG-build time).

The JSON schema (``workflow/schemas/config.schema.yaml``) checks keys and types and fills every default
(``fill_defaults``), so the rules and these helpers read the config without
defaults of their own; ``section_problems`` checks the filled config for what a schema cannot: that every name
refers to something defined, section by section. ``biastransfer.workflow.config_check.validate_config`` runs every
check, in order: the one the workflow runs (rules/common.smk) and ``python -m biastransfer.workflow.config FILE...``.
"""

from __future__ import annotations

import difflib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from biastransfer.claims import claims_problems, model_group_problems
from biastransfer.factors import factors_problems

# stage names, for the rules (cfg.parse_stage, ...)
from biastransfer.references import ieat_reference_problems
from biastransfer.stages import PRETRAINED, finetuned_stage, parse_stage, scratch_stage, stage_kind  # noqa: F401
from biastransfer.vocabulary import HEAD_ONLY_METHODS, INTERVENABLE, SYNTHETIC_CLASSES
from biastransfer.workflow.settings import canonical  # noqa: F401  (the rules' cfg.canonical)
from biastransfer.zoo import zoo_problems


def finetune_seeds(config: Mapping, dataset: str) -> list[int]:
    """The finetuning seeds of ``dataset``: ``finetune.seeds`` is one list for every dataset or a
    ``{dataset: [seeds]}`` mapping (the paper: three trials on COCO, one on Open Images)."""
    seeds = config["finetune"]["seeds"]
    return list(seeds[dataset] if isinstance(seeds, Mapping) else seeds)


def seeds_per_dataset(config: Mapping) -> dict[str, list[int]]:
    """{finetuning dataset: its seeds} (``finetune.seeds`` may map datasets to their own)."""
    return {d: finetune_seeds(config, d) for d in config["finetune"]["datasets"]}


def finetuned_stages(config: Mapping) -> list[str]:
    """All finetuned stages, dataset-major then seed."""
    return [finetuned_stage(d, s) for d in config["finetune"]["datasets"] for s in finetune_seeds(config, d)]


def stages(config: Mapping) -> list[str]:
    """``pretrained`` followed by every finetuned stage."""
    return [PRETRAINED, *finetuned_stages(config)]


def reference_seeds(config: Mapping, dataset: str) -> list[int]:
    """Seeds of the scratch reference networks trained on ``dataset`` (none unless
    ``analysis.bts.reference`` is ``scratch``; ``reference_seeds`` null means the finetuning seeds)."""
    bts = config["analysis"]["bts"]
    if bts["reference"] != "scratch":
        return []
    return list(bts["reference_seeds"]) if bts["reference_seeds"] is not None else finetune_seeds(config, dataset)


def scratch_stages(config: Mapping) -> list[str]:
    """All scratch reference stages, dataset-major then seed (empty without a scratch reference)."""
    return [scratch_stage(d, s) for d in config["finetune"]["datasets"] for s in reference_seeds(config, d)]


def finetune_params(config: Mapping, model: str, dataset: str) -> dict[str, Any]:
    """Training hyper-parameters for ``model`` on ``dataset``: ``finetune.defaults`` (which the schema
    fills), then ``finetune.overrides.<model>.<dataset>``; an intervention or a mitigation arm that it does
    not name takes its ``from``'s, so that its networks are trained as the untouched ones they are compared
    with."""
    ft = config["finetune"]
    per_model, spec = ft["overrides"].get(model, {}), config.get("datasets", {}).get(dataset, {})
    if dataset not in per_model and spec.get("kind") in ("intervention", "mitigation"):
        dataset = spec["from"]
    return canonical({**ft["defaults"], **per_model.get(dataset, {})})


def switch(value: Any) -> bool:
    """A config switch as a boolean: ``on``/``off`` or YAML's true/false (YAML 1.1 reads a bare on as true)."""
    return value not in ("off", False, None)


def pretrain_params(config: Mapping, model: str) -> dict[str, Any]:
    """Training hyper-parameters of a model pretrained inside the workflow (demo models)."""
    spec = dict(config["models"][model]["pretrain"])
    spec.pop("dataset")
    return canonical(spec)


def training_datasets(config: Mapping) -> list[str]:
    """Datasets any model is trained on (demo pretraining and finetuning), in config order."""
    names = [m["pretrain"]["dataset"] for m in config["models"].values() if "pretrain" in m]
    names += list(config["finetune"]["datasets"])
    return list(dict.fromkeys(names))


ANALYSIS_ONLY = ("ieat", "bts")
# Keys of a COCO or Open Images entry that shape its splits (or only the download speed), not the
# annotation files a download job fetches.
SPLIT_ONLY = ("seed", "train_subset", "val_subset", "drop_unlabeled", "verified_only", "workers", "evaluation")
# Keys of a table dataset's entry that only its attribute files read: a new declaration redraws no split.
ATTRIBUTE_ONLY = ("attributes",)


def selection_spec(analysis_set: Mapping) -> dict[str, Any]:
    """An analysis-set entry without what only the analysis reads (its iEATs and BTS lists): the params of
    the jobs that select and draw its images, so that an edit to a test reruns none of them."""
    return canonical({k: v for k, v in analysis_set.items() if k not in ANALYSIS_ONLY})


def _unique_key_loader():
    """A safe YAML loader that refuses a key given twice in one mapping (PyYAML, like Snakemake's own
    reading, keeps the last one silently); keys merged in with ``<<`` may be overridden as usual."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                first = {}
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue
                    key = self.construct_object(key_node, deep=True)
                    try:
                        if key in first:
                            raise yaml.constructor.ConstructorError(
                                None,
                                None,
                                f"duplicate key {key!r} (first given on line {first[key] + 1})",
                                key_node.start_mark,
                            )
                        first[key] = key_node.start_mark.line
                    except TypeError:  # an unhashable key: the base class names it
                        pass
            return super().construct_mapping(node, deep)

    return UniqueKeyLoader


def read_config_file(path: str | os.PathLike) -> dict[str, Any]:
    """A YAML config file as a mapping; a syntax error or a key given twice in one mapping names the
    file, the line and the column."""
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.load(fh, Loader=_unique_key_loader())  # noqa: S506 (a SafeLoader)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        raise ValueError(
            f"{path}, line {mark.line + 1}, column {mark.column + 1}: {err.problem or err.context}"
        ) from None
    if not isinstance(data, Mapping):
        raise ValueError(f"{path}: a config file holds a mapping of keys, not {type(data).__name__}")
    return data


#: The config's JSON schema: keys, types and every default.
SCHEMA = Path(__file__).resolve().parents[3] / "workflow" / "schemas" / "config.schema.yaml"
#: Sections whose entries are named (``datasets.<name>``, ...): a null entry in a later file removes one.
NAMED_SECTIONS = ("datasets", "analysis_sets", "models")


def drop_removed(config: dict) -> dict:
    """In place: remove what a later config file set to null (``--configfile paper.yaml zoo.yaml``): a null
    top-level section (it takes the schema's defaults again) or a null entry of ``NAMED_SECTIONS``."""
    for key in [k for k, v in config.items() if v is None]:
        del config[key]
    for section in NAMED_SECTIONS:
        entries = config.get(section)
        if isinstance(entries, dict):
            for name in [n for n, v in entries.items() if v is None]:
                del entries[name]
    return config


def drop_switched_off(config: dict) -> dict:
    """In place: remove each intervention or mitigation arm switched off (``enabled: false``) from ``datasets``
    and from what ``finetune`` says of it (``datasets``, ``seeds``, ``overrides``), so that nothing reads it."""
    off = [n for n, s in config["datasets"].items() if s["kind"] in ("intervention", "mitigation") and not s["enabled"]]
    ft = config.get("finetune", {})
    for name in off:
        del config["datasets"][name]
        if name in ft.get("datasets", []):
            ft["datasets"] = [d for d in ft["datasets"] if d != name]
        if isinstance(ft.get("seeds"), dict):
            ft["seeds"].pop(name, None)
        for per_dataset in ft.get("overrides", {}).values():
            per_dataset.pop(name, None)
    return config


def fill_defaults(config: dict) -> dict:
    """In place: ``drop_removed``, then check keys and types against ``SCHEMA`` and fill every default
    (``biastransfer.schema_types.filled_problems``; ConfigError naming every problem), so that readers need no
    defaults of their own; no two entries share one default object; then ``drop_switched_off``."""
    from biastransfer.schema_types import filled_problems

    problems = filled_problems(drop_removed(config), SCHEMA)
    if problems:
        raise ConfigError(problems)
    config.update(json.loads(json.dumps(config)))
    return drop_switched_off(config)


def merge_configs(paths: Sequence[str | os.PathLike]) -> dict[str, Any]:
    """Config files (``read_config_file``) merged in order as Snakemake merges several ``--configfile`` (key
    by key; a list or a value replaces the earlier one)."""
    from snakemake.utils import update_config

    config: dict[str, Any] = {}
    for path in paths:
        update_config(config, read_config_file(path))
    return config


def read_configs(paths: Sequence[str | os.PathLike]) -> dict[str, Any]:
    """Config files merged in order (``merge_configs``), then filled (``fill_defaults``)."""
    return fill_defaults(merge_configs(paths))


def download_spec(dataset: Mapping) -> dict[str, Any]:
    """A real dataset's entry without its split-only keys (a table's: its declared ``attributes``): the
    params of its download job, so that a new split seed or subset size redraws the splits without
    downloading (and re-curating) anew."""
    if dataset["kind"] not in ("coco", "openimages"):
        return canonical({k: v for k, v in dataset.items() if k not in ATTRIBUTE_ONLY})
    return canonical({k: v for k, v in dataset.items() if k not in SPLIT_ONLY})


def evaluated(dataset: Mapping) -> bool:
    """Whether a COCO or Open Images dataset has an evaluation split (``evaluation.enabled``)."""
    return dataset["kind"] in ("coco", "openimages") and (dataset.get("evaluation") or {}).get("enabled", True)


def evaluation_is_val(dataset: Mapping) -> bool:
    """Whether a dataset's evaluation split is its model-selection (val) split: COCO without a hold-out."""
    return dataset["kind"] == "coco" and not (dataset.get("evaluation") or {}).get("holdout", 0)


def split_spec(dataset: Mapping) -> dict[str, Any]:
    """A dataset's entry as its train / val splits depend on it: less its ``evaluation`` options (and a
    table's declared ``attributes``), but for a COCO hold-out (which leaves the held-out images out of val), so that turning the evaluation on or
    off, or an Open Images subset, redraws no finetuning split."""
    entry = {k: v for k, v in dataset.items() if k not in ("evaluation", *ATTRIBUTE_ONLY)}
    if dataset["kind"] == "coco" and not evaluation_is_val(dataset):
        entry["evaluation"] = {k: dataset["evaluation"][k] for k in ("holdout", "seed")}
    return canonical(entry)


def evaluation_spec(dataset: Mapping) -> dict[str, Any]:
    """A dataset's entry as its evaluation split and attributes depend on it: less what shapes only the
    finetuning splits or the download (subsets of train and val, their seed, mirror, checksums, workers)."""
    ignored = {"workers", "mirror", "checksums", "images", "train_subset", "val_subset"}
    if dataset["kind"] == "openimages":
        ignored.add("seed")
    return canonical({k: v for k, v in dataset.items() if k not in ignored})


class ConfigError(ValueError):
    """Every problem of a config (``problems``, one line each naming its key), in one message."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("invalid configuration:\n  " + "\n  ".join(self.problems))


def section_problems(config: Mapping) -> list[str]:
    """Every problem of the filled config (``fill_defaults``) that a schema cannot find, each naming its key
    path: the per-section checks of ``SECTION_CHECKS``, all run."""
    return [problem for check in SECTION_CHECKS for problem in check(config)]


def check_config(config: Mapping) -> None:
    """Raise ConfigError listing the ``section_problems`` of the filled config, if any."""
    problems = section_problems(config)
    if problems:
        raise ConfigError(problems)


def model_problems(config: Mapping) -> list[str]:
    """``models``: a model trained here (source ``workflow``) has its pretraining section, and only it."""
    problems = []
    for name, spec in config["models"].items():
        # no default: an entry without source takes the registry's
        if spec.get("source") == "workflow":
            if "pretrain" not in spec:
                problems.append(f"models.{name}: source 'workflow' needs a 'pretrain' section")
            elif spec["pretrain"]["dataset"] not in config["datasets"]:
                problems.append(f"models.{name}.pretrain.dataset: unknown dataset {spec['pretrain']['dataset']!r}")
            if "arch" not in spec or "preprocess" not in spec:
                problems.append(f"models.{name}: source 'workflow' needs 'arch' and 'preprocess'")
        elif "pretrain" in spec:
            problems.append(f"models.{name}.pretrain: only models with source 'workflow' are pretrained here")
    return problems


def finetune_problems(config: Mapping) -> list[str]:
    """``finetune``: its datasets, seeds and overrides name defined datasets and models; trajectory epochs
    lie within the epochs a run sets (``defaults`` or its override)."""
    ft, problems = config["finetune"], []
    for dataset in ft["datasets"]:
        if dataset not in config["datasets"]:
            problems.append(f"finetune.datasets: unknown dataset {dataset!r}")
    seeds = ft["seeds"]
    if isinstance(seeds, Mapping):
        for dataset in ft["datasets"]:
            if dataset not in seeds:
                problems.append(f"finetune.seeds: no seeds for finetune dataset {dataset!r}")
        for dataset in seeds:
            if dataset not in ft["datasets"]:
                problems.append(f"finetune.seeds: {dataset!r} is not in finetune.datasets")
    for model, per_dataset in ft["overrides"].items():
        if model not in config["models"]:
            problems.append(f"finetune.overrides: unknown model {model!r}")
        for dataset in per_dataset:
            if dataset not in ft["datasets"]:
                problems.append(f"finetune.overrides.{model}: {dataset!r} is not in finetune.datasets")
    if isinstance(ft["trajectory"], list):
        for model in config["models"]:
            for dataset in ft["datasets"]:
                epochs = finetune_params(config, model, dataset)["epochs"]
                late = [e for e in ft["trajectory"] if e > epochs]
                if late:
                    problems.append(
                        f"finetune.trajectory: epoch(s) {late} beyond the {epochs} epochs of {model} "
                        f"finetuned on {dataset}"
                    )
    return problems


def analysis_set_problems(config: Mapping) -> list[str]:
    """``analysis_sets``: each set's dataset exists and suits its source, and its lists, sizes, BTS classes and
    iEAT roles name classes of the set."""
    datasets, problems = config["datasets"], []
    for name, aset in config["analysis_sets"].items():
        where = f"analysis_sets.{name}"
        # no default: dataset only labels a folder or table set, and may be left out there
        if "dataset" in aset and aset["dataset"] not in datasets:
            problems.append(f"{where}.dataset: unknown dataset {aset['dataset']!r}")
        elif aset["source"] in ("paper", "curated") and datasets[aset["dataset"]]["kind"] not in ("coco", "openimages"):
            problems.append(
                f"{where}.source: {aset['source']!r} needs a coco or openimages dataset, "
                f"{aset['dataset']!r} is not (list your own images with source folder or table)"
            )
        for source, section, key in (("paper", "paper", "files"), ("curated", "curation", "sizes")):
            # no default: a missing section is reported here as classes without an entry
            defined = aset.get(section, {}).get(key, {}) if aset["source"] == source else aset["classes"]
            missing = [c for c in aset["classes"] if c not in defined]
            if missing:
                problems.append(f"{where}.{section}.{key}: no entry for class(es) {missing} of {where}.classes")
        classes = set(aset["classes"])
        # no defaults: without intra or inter the BTS ranks every class or pair
        for cls in aset["bts"].get("intra", []):
            if cls not in classes:
                problems.append(f"{where}.bts.intra: class {cls!r} is not in {where}.classes")
        for pair in aset["bts"].get("inter", []):
            for cls in pair:
                if cls not in classes:
                    problems.append(f"{where}.bts.inter: class {cls!r} in pair {pair} is not in {where}.classes")
        for test in aset["ieat"]:
            for role in ("X", "Y", "A", "B"):
                if test[role] not in classes:
                    problems.append(
                        f"{where}.ieat.{test['name']}.{role}: class {test[role]!r} is not in {where}.classes"
                    )
            problems += _ieat_role_problems(f"{where}.ieat.{test['name']}", test)
        if aset["source"] == "synthetic":
            unknown = [c for c in aset["classes"] if c not in SYNTHETIC_CLASSES]
            if unknown:
                problems.append(
                    f"{where}.classes: {unknown} are no synthetic classes (known: {', '.join(SYNTHETIC_CLASSES)})"
                )
        names = [t["name"] for t in aset["ieat"]]
        if len(names) != len(set(names)):
            problems.append(f"{where}.ieat: test names must be unique, got {names}")
        if aset["source"] == "synthetic" and datasets.get(aset["dataset"], {}).get("kind") != "synthetic":
            problems.append(f"{where}.source: 'synthetic' needs a synthetic dataset, {aset['dataset']!r} is not")
    return problems


def _ieat_role_problems(where: str, test: Mapping) -> list[str]:
    """A class in two roles of one iEAT test (``biastransfer.stats._validation.ieat_role_problems``)."""
    from biastransfer.stats._validation import ieat_role_problems

    return [f"{where}: {problem}" for problem in ieat_role_problems(test)]


def user_data_problems(config: Mapping) -> list[str]:
    """Your own images (biastransfer.data.user): folders, tables, their columns and classes exist."""
    from biastransfer.data.user import config_problems

    problems = []
    for name, aset in config["analysis_sets"].items():
        if aset["source"] in ("folder", "table"):
            problems += config_problems(f"analysis_sets.{name}", aset)
    for name, spec in config["datasets"].items():
        if spec["kind"] == "table":
            problems += config_problems(f"datasets.{name}", spec, dataset=True)
    return problems


def intervention_problems(config: Mapping) -> list[str]:
    """``datasets`` of kind intervention: ``from`` names a dataset of a kind with a training attribute file
    (:data:`biastransfer.vocabulary.INTERVENABLE`), its objects are classes of that dataset, and only finetuning reads its sample
    weights (a reweighting is no pretraining dataset)."""
    datasets, problems = config["datasets"], []
    pretrained_on = {m["pretrain"]["dataset"] for m in config["models"].values() if "pretrain" in m}
    for name, spec in datasets.items():
        if spec["kind"] != "intervention":
            continue
        where, source = f"datasets.{name}", datasets.get(spec["from"])
        if source is None:
            problems.append(f"{where}.from: unknown dataset {spec['from']!r}")
        elif source["kind"] not in INTERVENABLE:
            problems.append(
                f"{where}.from: {spec['from']!r} (kind {source['kind']}): its training split has no per-image "
                f"attribute file here (an intervention takes a dataset of kind {', '.join(INTERVENABLE)})"
            )
        else:
            what, known = INTERVENABLE[source["kind"]]
            if known is None:  # a table: its classes, and the attribute column its training rows need
                from biastransfer.data.user import intervention_classes

                known, found = intervention_classes(f"{where}.from", source)
                problems += found
            unknown = [o for o in spec["objects"] if known is not None and o not in known]
            if unknown:
                close = ", ".join(difflib.get_close_matches(unknown[0], known, cutoff=0.5)) or "none"
                listed = ", ".join(known) if len(known) <= 80 else f"{len(known)} of them; close: {close}"
                problems.append(f"{where}.objects: {unknown[0]!r} is not one of the {what} ({listed})")
        if spec["method"] == "reweight" and name in pretrained_on:
            problems.append(f"{where}: a reweighting's sample weights are read by finetuning only, not pretraining")
    return problems


def mitigation_problems(config: Mapping) -> list[str]:
    """``datasets`` of kind mitigation: ``from`` names a dataset of a kind with per-image attribute files
    (:data:`biastransfer.vocabulary.INTERVENABLE`); selection worst_group needs the validation split's
    attribute file (a synthetic ``from`` here) and epochs to select from (not dfr or leace); dfr and leace
    start from the plain finetuning of ``from``, which must be finetuned with each of the arm's seeds; an arm is
    no pretraining dataset."""
    datasets, problems = config["datasets"], []
    pretrained_on = {m["pretrain"]["dataset"] for m in config["models"].values() if "pretrain" in m}
    finetuned = config["finetune"]["datasets"]
    for name, spec in datasets.items():
        if spec["kind"] != "mitigation":
            continue
        where, source = f"datasets.{name}", datasets.get(spec["from"])
        if source is None:
            problems.append(f"{where}.from: unknown dataset {spec['from']!r}")
            continue
        if source["kind"] not in INTERVENABLE:
            problems.append(
                f"{where}.from: {spec['from']!r} (kind {source['kind']}): its splits have no per-image attribute "
                f"file here, which method {spec['method']} needs (a mitigation arm takes a dataset of kind "
                f"{', '.join(INTERVENABLE)})"
            )
        elif source["kind"] == "table":  # its attribute column, which every training row needs
            from biastransfer.data.user import intervention_classes

            problems += intervention_classes(f"{where}.from", source)[1]
        if spec["selection"] == "worst_group":
            if spec["method"] in HEAD_ONLY_METHODS:
                problems.append(f"{where}.selection: method {spec['method']} trains no epochs to select from: map")
            elif source["kind"] != "synthetic":
                problems.append(
                    f"{where}.selection: worst_group needs the validation split's attribute file, which only a "
                    f"synthetic dataset has here ({spec['from']!r} is of kind {source['kind']})"
                )
        seeds = config["finetune"]["seeds"]
        listed = not isinstance(seeds, Mapping) or name in seeds  # else finetune_problems names it
        if spec["method"] in HEAD_ONLY_METHODS and name in finetuned and listed:
            start = spec["from"] in finetuned and (not isinstance(seeds, Mapping) or spec["from"] in seeds)
            theirs = finetune_seeds(config, spec["from"]) if start else []
            missing = sorted(set(finetune_seeds(config, name)) - set(theirs))
            if missing:
                problems.append(
                    f"{where}: method {spec['method']} starts from the plain finetuning of {spec['from']!r}, "
                    f"which finetune.datasets and finetune.seeds must give seed(s) {', '.join(map(str, missing))}"
                )
        if name in pretrained_on:
            problems.append(f"{where}: a mitigation arm is a finetuning method, not a pretraining dataset")
    return problems


def bootstrap_problems(config: Mapping) -> list[str]:
    """Bootstrap counts (``analysis.{ieat,bts,trajectory}.bootstrap``) other than 0 below the floor that
    their interval level needs (``biastransfer.stats.floors``). Reads the config with the schema's defaults."""
    from biastransfer.stats.floors import min_replicates

    analysis = config["analysis"]
    levels = {"ieat": [analysis["ieat"]["ci_level"]], "bts": [analysis["bts"]["ci_level"]]}
    levels["trajectory"] = levels["ieat"] + levels["bts"]  # each epoch's d and rho
    problems = []
    for section, section_levels in levels.items():
        count, level = analysis[section]["bootstrap"], max(section_levels)
        if 0 < count < min_replicates(level):
            problems.append(
                f"analysis.{section}.bootstrap: {count} replicate(s) cannot give a {level:g} interval; "
                f"use 0 (no intervals) or at least {min_replicates(level)} (2 / (1 - level))"
            )
    return problems


def report_problems(config: Mapping) -> list[str]:
    """``report`` keys that name classes no analysis set has."""
    report = config["report"]
    known = {c for aset in config["analysis_sets"].values() for c in aset["classes"]}
    named = [("control_class", report["control_class"])]
    named += [("ieat_targets", c) for c in report["ieat_targets"] or []]
    return [f"report.{key}: class {cls!r} is in no analysis set" for key, cls in named if cls not in known | {None}]


def attribution_problems(config: Mapping) -> list[str]:
    """What ``analysis.attribution`` names that is not defined (sets, tests, stages, models)."""
    problems = []
    attribution = config["analysis"]["attribution"]
    for option in ("alpha", "level", "power"):
        if not 0 < attribution[option] < 1:
            problems.append(f"analysis.attribution.{option}: must be in (0, 1), got {attribution[option]}")
    for spec in attribution["comparisons"]:
        where = f"analysis.attribution.comparisons.{spec['name']}"
        problems += ieat_reference_problems(where, config, spec["analysis_set"], spec["test"])
        stage = spec["stage"]
        if stage != PRETRAINED and stage[len("ft-") :] not in config["finetune"]["datasets"]:
            problems.append(f"{where}.stage: {stage!r} names no dataset in finetune.datasets")
        if spec["measure"] == "contrast" and stage == PRETRAINED:
            problems.append(f"{where}.stage: the prediction contrast is measured on finetuned networks: ft-<dataset>")
        problems += model_group_problems(f"{where}.groups", spec["groups"], config["models"])
    return problems


def shared_seeds(config: Mapping, arm: str, against: str) -> list[int]:
    """The finetuning seeds of ``arm`` that ``against`` has too (none where either is not finetuned)."""
    finetuned = config["finetune"]["datasets"]
    if arm not in finetuned or against not in finetuned:
        return []
    theirs = set(finetune_seeds(config, against))
    return [s for s in finetune_seeds(config, arm) if s in theirs]


def comparison_pairs(config: Mapping) -> list[tuple[str, str]]:
    """Every compared pair ``(arm, against)`` of finetuning arms: each finetuned dataset with a ``from`` (an
    intervention) against its source, where both are finetuned with a seed in common, then the pairs of
    ``analysis.comparisons`` not already among them (``comparison_problems`` checks those)."""
    datasets = config["datasets"]
    pairs = [(d, datasets[d]["from"]) for d in config["finetune"]["datasets"] if "from" in datasets.get(d, {})]
    pairs = [p for p in pairs if shared_seeds(config, *p)]
    for spec in config["analysis"]["comparisons"]:
        if (spec["arm"], spec["against"]) not in pairs:
            pairs.append((spec["arm"], spec["against"]))
    return pairs


def comparison_problems(config: Mapping) -> list[str]:
    """``analysis.comparisons``: both arms of each pair are finetuning datasets, not the same one, with a
    finetuning seed in common (the analysis sets are every dataset's); and any pair, declared or an
    intervention's, needs the bootstrap of the per-seed change of d (``analysis.ieat.bootstrap`` above 0)."""
    finetuned, problems = config["finetune"]["datasets"], []
    if config["analysis"]["ieat"]["bootstrap"] == 0 and comparison_pairs(config):
        named = ", ".join(f"{arm} against {against}" for arm, against in comparison_pairs(config))
        problems.append(
            f"analysis.ieat.bootstrap: 0, but the paired change of d between finetuning arms ({named}) needs "
            "bootstrap replicates"
        )
    for i, spec in enumerate(config["analysis"]["comparisons"]):
        where = f"analysis.comparisons[{i}] ({spec['arm']} against {spec['against']})"
        missing = [f"{key} {spec[key]!r}" for key in ("arm", "against") if spec[key] not in finetuned]
        if missing:
            problems.append(
                f"{where}: {' and '.join(missing)} not in finetune.datasets ({', '.join(finetuned) or 'none'}): "
                "both arms must be finetuned"
            )
        elif spec["arm"] == spec["against"]:
            problems.append(f"{where}: an arm compared against itself")
        elif not shared_seeds(config, spec["arm"], spec["against"]):
            problems.append(
                f"{where}: no finetuning seed in common ({spec['arm']}: {finetune_seeds(config, spec['arm'])}, "
                f"{spec['against']}: {finetune_seeds(config, spec['against'])}): the comparison pairs networks by seed"
            )
    return problems


#: The per-section checks of ``section_problems``, in the order of the config's sections.
SECTION_CHECKS = (
    user_data_problems,
    intervention_problems,
    mitigation_problems,
    model_problems,
    finetune_problems,
    analysis_set_problems,
    report_problems,
    attribution_problems,
    comparison_problems,
    bootstrap_problems,
    zoo_problems,
    claims_problems,
    factors_problems,
)


if __name__ == "__main__":
    # python -m biastransfer.workflow.config FILE...: the checker's command (biastransfer.workflow.config_check, which needs torch
    # for the layer profiles: not imported by the jobs that read this module)
    from biastransfer.workflow.config_check import main

    sys.exit(main(sys.argv[1:]))
