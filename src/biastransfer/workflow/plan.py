"""The plan of one run, built once from the filled config: what runs, where every file goes, what each rule
is given. Pure Python (no Snakemake), so it is tested and snapshotted without running anything
(tests/test_plan.py); rules/common.smk builds one ``PLAN`` and the rule files read it.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping
from functools import cached_property
from typing import Any

from biastransfer.claims import claims_on
from biastransfer.covariates import CKA
from biastransfer.factors import asks_covariate, asks_resolution, factors_on
from biastransfer.paths import path
from biastransfer.report.artefacts import FOREST_ROWS
from biastransfer.stages import PRETRAINED, finetuned_stage, parse_stage, scratch_stage, stage_kind
from biastransfer.vocabulary import HEAD_ONLY_METHODS
from biastransfer.workflow import config as cfg
from biastransfer.workflow.config import switch
from biastransfer.workflow.settings import RULE_SETTINGS, Settings

#: A mitigation arm's keys that its training reads (biastransfer.train.methods.MethodConfig's fields).
METHOD_KEYS = ("method", "selection", "dro_step_size", "adversary_weight", "head_l2", "head_steps")

#: The finetuning datasets read from real files (their splits come from rules/real_data.smk).
REAL_KINDS = ("coco", "openimages", "table")
#: Summaries that the findings and the report read: results/summary/<name>.csv (path("summary", summary=...)).
SUMMARIES = (
    "similarity",
    "bts",
    "cka",
    "ieat",
    "ieat_scratch",
    "ieat_change",
    "similarity_change",
    "ieat_seeds",
    "analysis_sets",
    "finetune_metrics",
    "provenance",
    "attribution",
    "amplification",
    "amplification_terms",
    "link",
    "link_correlation",
    "intervention",
    "comparison",
    "layer_profile",
    "trajectory",
    "claims",
    "claim_values",
    "factors",
    "factor_values",
    "covariates",
)


class Plan:
    """One run's plan from its filled config (``biastransfer.workflow.config.fill_defaults`` and ``check_config``).

    ``basedir`` is the workflow's own folder (the shipped word list is found there, wherever the workflow is
    run from or included as a module).
    """

    def __init__(self, config: Mapping, basedir: str | os.PathLike):
        self.config = config
        self.basedir = os.fspath(basedir)
        self._settings: dict[tuple, dict[str, Any]] = {}

    # ---- each rule's settings ---------------------------------------------------------------------------
    def rule_settings(self, rule: str, **wildcards: str) -> Settings:
        """A rule's settings (``biastransfer.workflow.rules``), typed; ``wildcards``: those its build takes."""
        from biastransfer.workflow import rules  # noqa: F401  (registers every rule's settings class)

        if rule not in RULE_SETTINGS:
            raise KeyError(f"rule {rule!r} has no settings class (biastransfer.workflow.rules)")
        return RULE_SETTINGS[rule].build(self, **wildcards)

    def settings(self, rule: str, wildcards: Any = None) -> dict[str, Any]:
        """A rule's settings as the plain mapping the rule passes whole (``params: settings=...``):
        ``wildcards`` is the job's (Snakemake's object, or a mapping) where the settings depend on them. Built
        once per rule and values of the wildcards its build takes: every job that shares them gets the same
        mapping (never modify it)."""
        from biastransfer.workflow import rules  # noqa: F401

        taken = [n for n in inspect.signature(RULE_SETTINGS[rule].build).parameters if n != "plan"]
        get = wildcards.get if isinstance(wildcards, Mapping) else lambda n: getattr(wildcards, n)
        values = {n: get(n) for n in taken}
        key = (rule, *values.values())
        if key not in self._settings:
            self._settings[key] = self.rule_settings(rule, **values).as_dict()
        return self._settings[key]

    # ---- names of things, by kind -----------------------------------------------------------------------
    @property
    def models(self) -> list[str]:
        return list(self.config["models"])

    @property
    def analysis_sets(self) -> list[str]:
        return list(self.config["analysis_sets"])

    @property
    def datasets(self) -> list[str]:
        return list(self.config["datasets"])

    @property
    def finetune_datasets(self) -> list[str]:
        return list(self.config["finetune"]["datasets"])

    def datasets_of_kind(self, *kinds: str) -> list[str]:
        return [d for d, s in self.config["datasets"].items() if s["kind"] in kinds]

    def analysis_sets_of_source(self, *sources: str) -> list[str]:
        return [a for a, s in self.config["analysis_sets"].items() if s["source"] in sources]

    @property
    def ieat_tests(self) -> dict[str, list]:
        """{analysis set: its iEAT tests}."""
        return {a: s["ieat"] for a, s in self.config["analysis_sets"].items()}

    @cached_property
    def real_datasets(self) -> list[str]:
        """Datasets read from real files (COCO, Open Images, a table): their splits come from rules/real_data.smk."""
        return self.datasets_of_kind(*REAL_KINDS)

    @cached_property
    def user_sets(self) -> list[str]:
        """Analysis sets of your own images, listed in a folder or a table (rules/analysis_sets.smk)."""
        return self.analysis_sets_of_source("folder", "table")

    @cached_property
    def paper_analysis_sets(self) -> list[str]:
        """The real analysis sets given by the paper's published lists."""
        return [a for a in self.real_analysis_sets if self.config["analysis_sets"][a]["source"] == "paper"]

    @cached_property
    def real_analysis_sets(self) -> list[str]:
        """Analysis sets drawn from a real dataset of this config (the paper's lists or curated)."""
        real, sets = set(self.real_datasets), self.config["analysis_sets"]
        return [a for a in self.analysis_sets_of_source("paper", "curated") if sets[a]["dataset"] in real]

    @property
    def workflow_models(self) -> list[str]:
        """Models pretrained inside the workflow (the demo); ``.get``: an entry without source takes the
        registry's (docs/models.md)."""
        return [m for m, s in self.config["models"].items() if s.get("source") == "workflow"]

    def model_entry(self, model: str) -> dict[str, Any]:
        """A model's config entry, less what only the zoo and the factors read (``about``, ``covariates``: not
        params of the model's jobs)."""
        return {k: v for k, v in self.config["models"][model].items() if k not in ("about", "covariates")}

    def network_entry(self, model: str) -> dict[str, Any]:
        """The keys of a model's entry that shape its network (weights, preprocessing, embedding layer): the
        params of its training, fetching and embedding jobs. Less the layer profile's keys and, with the
        default layer (the trunk's own pre-logits output, not pooled here), ``pool``."""
        entry = {k: v for k, v in self.model_entry(model).items() if k not in ("layers", "layer_pooling")}
        if entry.get("layer", "penultimate") == "penultimate":
            entry.pop("pool", None)
        return cfg.canonical(entry)

    # ---- switches, normalised once ----------------------------------------------------------------------
    @cached_property
    def zoo(self) -> bool:
        return bool(self.config["zoo"])

    @cached_property
    def trajectory_on(self) -> bool:
        return switch(self.config["finetune"]["trajectory"])

    @cached_property
    def cache_on(self) -> bool:
        return switch(self.config["finetune"]["cache"])

    @cached_property
    def cache_format(self) -> str:
        """The format version of the image caches this library writes (``biastransfer.data.cache``; imported
        here, so that the settings modules, which every step script imports, need no imaging library)."""
        from biastransfer.data.cache import CACHE_FORMAT

        return CACHE_FORMAT

    @cached_property
    def layers_on(self) -> bool:
        return bool(self.config["analysis"]["layers"]["enabled"])

    @cached_property
    def claims_on(self) -> bool:
        return claims_on(self.config)

    @cached_property
    def factors_on(self) -> bool:
        return factors_on(self.config)

    @cached_property
    def factors_cka(self) -> bool:
        """Whether a factors question names the covariate cka (rule factors then reads the CKA summary)."""
        return asks_covariate(self.config, CKA)

    @cached_property
    def input_resolutions(self) -> dict[str, int | None]:
        """{model: input resolution} from the libraries (``biastransfer.models.resolve``, imported here, as for
        :attr:`image_cache_settings`), resolved only when a factors question names the resolution."""
        if not asks_resolution(self.config):
            return {}
        from biastransfer.models.resolve import input_resolutions

        return input_resolutions(self.config)

    # ---- stages and seeds -------------------------------------------------------------------------------
    def finetune_seeds(self, dataset: str) -> list[int]:
        return cfg.finetune_seeds(self.config, dataset)

    def reference_seeds(self, dataset: str) -> list[int]:
        return cfg.reference_seeds(self.config, dataset)

    @cached_property
    def stages(self) -> list[str]:
        """``pretrained`` then every finetuned stage, dataset-major."""
        return cfg.stages(self.config)

    @cached_property
    def finetuned_stages(self) -> list[str]:
        return cfg.finetuned_stages(self.config)

    @cached_property
    def scratch_stages(self) -> list[str]:
        return cfg.scratch_stages(self.config)

    @cached_property
    def embedded_stages(self) -> list[str]:
        """The networks of one model that its embed job runs over an analysis set: ``pretrained``, every
        finetuned stage, then every scratch reference stage."""
        return [*self.stages, *self.scratch_stages]

    @cached_property
    def forest_rows(self) -> dict[str, int]:
        """{analysis set: its rows in the iEAT forest plot}: its tests x models x networks (every embedded
        stage)."""
        return {a: len(tests) * len(self.models) * len(self.embedded_stages) for a, tests in self.ieat_tests.items()}

    @cached_property
    def forest_sets(self) -> list[str]:
        """The analysis sets that get a forest plot each (``results/figures/ieat_forest_{analysis_set}``): every
        one when the run's forest rows exceed ``report.artefacts.FOREST_ROWS``, else none (one plot of all)."""
        return self.analysis_sets if sum(self.forest_rows.values()) > FOREST_ROWS else []

    def finetuned_stages_of(self, dataset: str) -> list[str]:
        return [finetuned_stage(dataset, s) for s in self.finetune_seeds(dataset)]

    def scratch_stages_of(self, dataset: str) -> list[str]:
        """The scratch reference networks trained on a finetuning dataset (none without ``analysis.bts.reference``)."""
        return [scratch_stage(dataset, s) for s in self.reference_seeds(dataset)]

    @staticmethod
    def embedding_files(analysis_set: str, model: str, stages: list[str]) -> list[str]:
        """The embeddings of an analysis set by these networks of one model, in the order of ``stages``."""
        return [path("embeddings", analysis_set=analysis_set, model=model, stage=s) for s in stages]

    def all_pairs(self) -> list[tuple[str, str]]:
        """(analysis_set, model) for every analysis set and model."""
        return [(a, m) for a in self.analysis_sets for m in self.models]

    # ---- weights ----------------------------------------------------------------------------------------
    def pretrained_weights(self, model: str) -> str:
        """The pretrained weights of a model: trained here (demo), checked by the zoo, or fetched."""
        if self.model_entry(model).get("source") == "workflow":
            return path("pretrain_run", model=model, file="model.safetensors")
        if self.zoo:  # the zoo's check fetched them: its record of a passed model is a weights record
            return f"results/zoo/status/{model}.json"
        return f"results/weights/{model}/weights.done"

    def weights_origin(self, model: str) -> str:
        """Where a model's pretrained weights came from: its pretraining record or the fetched file's."""
        if self.model_entry(model).get("source") == "workflow":
            return path("pretrain_run", model=model, file="metrics.json")
        return self.pretrained_weights(model)

    def trained_weights(self, model: str, stage: str) -> str:
        """The checkpoint of one finetuned or scratch reference network."""
        dataset, seed = parse_stage(stage)
        root = "scratch" if stage_kind(stage) == "scratch" else "finetune"
        return path(f"{root}_run", dataset=dataset, model=model, seed=seed, file="model.safetensors")

    def stage_weights(self, model: str, stage: str) -> str:
        """Weights to embed with: the pretrained model, or one finetuned or scratch checkpoint."""
        return self.pretrained_weights(model) if stage == PRETRAINED else self.trained_weights(model, stage)

    # ---- training ---------------------------------------------------------------------------------------
    @cached_property
    def training_datasets(self) -> list[str]:
        return cfg.training_datasets(self.config)

    @cached_property
    def image_cache_settings(self) -> dict[str, str]:
        """{model: the setting (``biastransfer.data.cache.CacheSetting``) of the image caches its finetuning
        reads}: its preprocessing's resize and interpolation, resolved once for every model."""
        from biastransfer.data.cache import CacheSetting
        from biastransfer.models.resolve import preprocess_resizes

        quality = self.config["finetune"]["cache_quality"]
        return {m: CacheSetting(side, how, quality).name for m, (side, how) in preprocess_resizes(self.config).items()}

    def finetune_runs(self, name: str = "metrics.json") -> list[str]:
        return [
            path("finetune_run", dataset=d, model=m, seed=s, file=name)
            for d in self.finetune_datasets
            for m in self.models
            for s in self.finetune_seeds(d)
        ]

    def scratch_runs(self) -> list[str]:
        """The metrics (with the training curve) of every scratch reference network."""
        return [
            path("scratch_run", dataset=d, model=m, seed=s, file="metrics.json")
            for d in self.finetune_datasets
            for m in self.models
            for s in self.reference_seeds(d)
        ]

    def trajectory_epochs(self, model: str, dataset: str) -> list[int]:
        """The epochs after which the finetune job of ``model`` on ``dataset`` embeds the analysis sets
        (``finetune.trajectory``: ``off`` or false = none, ``every`` = each epoch, or a list, sorted here)."""
        if not self.trajectory_on:
            return []
        chosen = self.config["finetune"]["trajectory"]
        epochs = cfg.finetune_params(self.config, model, dataset)["epochs"]
        return list(range(1, epochs + 1)) if chosen == "every" else sorted(chosen)

    # ---- interventions ----------------------------------------------------------------------------------
    @cached_property
    def interventions(self) -> list[str]:
        return self.datasets_of_kind("intervention")

    def source_of(self, dataset: str) -> str:
        """The dataset a derived dataset (one with ``from``: an intervention rebalances it, a mitigation arm
        trains on it) is made from; any other dataset is its own source."""
        return self.config["datasets"][dataset].get("from", dataset)

    def compared_seeds(self, arm: str, against: str | None = None) -> list[int]:
        """The finetuning seeds ``arm`` shares with ``against`` (default: its source), both finetuned."""
        return cfg.shared_seeds(self.config, arm, self.source_of(arm) if against is None else against)

    @cached_property
    def compared_interventions(self) -> list[str]:
        """Interventions compared with their untouched finetuning: both finetuned, with a seed in common."""
        return [d for d in self.interventions if self.compared_seeds(d)]

    @cached_property
    def comparisons(self) -> list[tuple[str, str]]:
        """Every compared pair ``(arm, against)`` of finetuning arms (``biastransfer.workflow.config.comparison_pairs``):
        each finetuned dataset with a ``from`` against its source, then those of ``analysis.comparisons``."""
        return cfg.comparison_pairs(self.config)

    def comparison_subject(self, arm: str, against: str) -> str:
        """How a pair's verdicts name its arm: ``the intervention`` (its kind) against its ``from``, else
        the arm's name."""
        if against != arm and against == self.source_of(arm):
            return f"the {self.config['datasets'][arm]['kind']}"
        return arm

    @cached_property
    def intervened_real(self) -> list[str]:
        """The real datasets an intervention rebalances or a mitigation arm trains on (their training split gets
        an attribute file)."""
        kinds = self.config["datasets"]
        return sorted(
            {
                self.source_of(d)
                for d in self.interventions + self.mitigations
                if kinds[self.source_of(d)]["kind"] in REAL_KINDS
            }
        )

    # ---- mitigation arms --------------------------------------------------------------------------------
    @cached_property
    def mitigations(self) -> list[str]:
        return self.datasets_of_kind("mitigation")

    @cached_property
    def head_only_mitigations(self) -> list[str]:
        """The arms that refit the last layer of a plain network (DFR, LEACE): no epochs, no trajectory."""
        return [d for d in self.mitigations if self.config["datasets"][d]["method"] in HEAD_ONLY_METHODS]

    @cached_property
    def loop_mitigations(self) -> list[str]:
        """The arms trained over epochs (group DRO, domain-independent, adversarial)."""
        return [d for d in self.mitigations if d not in self.head_only_mitigations]

    @cached_property
    def plain_datasets(self) -> list[str]:
        """The datasets that rule finetune trains on: all but the mitigation arms."""
        return [d for d in self.datasets if d not in self.mitigations]

    def method_of(self, dataset: str) -> dict[str, Any]:
        """A finetuning dataset's method and its options (``biastransfer.train.methods.MethodConfig``'s fields;
        plain finetuning for a dataset of another kind)."""
        spec = self.config["datasets"][dataset]
        if spec["kind"] != "mitigation":
            return {"method": "plain", "selection": "map"}
        return {k: spec[k] for k in METHOD_KEYS}

    @cached_property
    def val_attribute_datasets(self) -> list[str]:
        """The finetuning datasets whose validation split gets an attribute file (the worst-group validation
        mAP): the mitigation arms on a synthetic dataset, and those synthetic datasets."""
        kinds = self.config["datasets"]
        arms = [d for d in self.mitigations if kinds[self.source_of(d)]["kind"] == "synthetic"]
        return sorted({*arms, *(self.source_of(d) for d in arms)})

    @cached_property
    def trajectory_datasets(self) -> list[str]:
        """The finetuning datasets whose finetuning is embedded over its epochs (all but DFR and LEACE arms)."""
        if not self.trajectory_on:
            return []
        return [d for d in self.finetune_datasets if d not in self.head_only_mitigations]

    # ---- predictions on the evaluation split ------------------------------------------------------------
    def has_test_split(self, dataset: str) -> bool:
        """Whether a dataset (an intervention: its source) has an evaluation split."""
        from biastransfer.data import user_evaluation

        spec = self.config["datasets"][self.source_of(dataset)]
        if spec["kind"] == "synthetic":
            return spec["n_test"] > 0
        if spec["kind"] == "table":
            return user_evaluation.has_test_split(spec)
        return cfg.evaluated(spec)

    @cached_property
    def predicted_datasets(self) -> list[str]:
        """The finetuning datasets whose networks are scored on a test split."""
        return [d for d in self.finetune_datasets if self.has_test_split(d)]

    @cached_property
    def predicted_real_datasets(self) -> list[str]:
        kinds = self.config["datasets"]
        return [
            d for d in self.predicted_datasets if kinds[d]["kind"] not in ("synthetic", "intervention", "mitigation")
        ]

    def predicted_stages_of(self, dataset: str) -> list[str]:
        """The finetuned and scratch stages of a dataset with a test split, scored on it."""
        return [
            *self.finetuned_stages_of(dataset),
            *(scratch_stage(dataset, s) for s in self.reference_seeds(dataset)),
        ]

    @cached_property
    def predicted_stages(self) -> list[str]:
        """The stages one model's predict job scores, dataset-major."""
        return [s for d in self.predicted_datasets for s in self.predicted_stages_of(d)]

    def prediction_files(self, name: str = "predictions", models: list[str] | None = None) -> list[str]:
        """Every scored network's predictions (or, with name prediction_embedding, its embedding of the same
        images), in one order; only ``models``' if given (["{model}"] for rule predict's outputs)."""
        return [
            path(name, model=m, stage=s)
            for d in self.predicted_datasets
            for m in (models or self.models)
            for s in self.predicted_stages_of(d)
        ]

    def pretrained_test_embeddings(self, models: list[str] | None = None) -> list[str]:
        """The pretrained network's embedding of each predicted dataset's test split (rule predict writes it beside
        the trained networks' predictions: the baseline of their embedding leakage), dataset-major; only
        ``models``' if given."""
        return [
            path("pretrained_test_embedding", model=m, dataset=d)
            for d in self.predicted_datasets
            for m in (models or self.models)
        ]

    def evaluation_disjoint(self) -> dict[str, list[str]]:
        """{evaluation split: the training splits it must share no image with}: train and val, but for a
        COCO evaluation split without a hold-out, which is its model-selection split."""
        datasets = self.config["datasets"]
        return {
            path("split", dataset=d, split="test"): [
                path("split", dataset=d, split=s)
                for s in (("train",) if cfg.evaluation_is_val(datasets[self.source_of(d)]) else ("train", "val"))
            ]
            for d in self.predicted_datasets
        }

    def planted_associations(self) -> dict[str, str]:
        """{object: figure} of the co-occurrences planted in the models' synthetic pretraining data
        (P(person_a) above 0.5: person_a, below: person_b), whose terms the findings read out."""
        planted = {}
        for model in self.config["models"].values():
            data = self.config["datasets"].get(model.get("pretrain", {}).get("dataset"), {})
            for obj, p in data.get("cooccurrence", {}).items() if data.get("kind") == "synthetic" else ():
                if p != 0.5:
                    planted[obj] = "person_a" if p > 0.5 else "person_b"
        return dict(sorted(planted.items()))

    # ---- word lists -------------------------------------------------------------------------------------
    def word_list_file(self, gender_words: Mapping) -> str:
        """The file of a gender_words block (``file``; not set: the shipped list in the workflow's folder)."""
        return gender_words.get("file", os.path.join(self.basedir, "resources", "gender_words.yaml"))

    def cka_tables(self) -> list[str]:
        """The CKA tables (written by the BTS jobs) of every analysis set, model and finetuning dataset."""
        return [
            path("cka", analysis_set=a, model=m, dataset=d) for a, m in self.all_pairs() for d in self.finetune_datasets
        ]

    def attribution_link(self) -> list[str]:
        """The link summary when a comparison across networks measures prediction contrasts (else none)."""
        specs = self.config["analysis"]["attribution"]["comparisons"]
        return self.summaries("link") if any(spec["measure"] == "contrast" for spec in specs) else []

    # ---- summaries and targets --------------------------------------------------------------------------
    @staticmethod
    def summary(name: str) -> str:
        """The path of one summary table (``SUMMARIES``)."""
        if name not in SUMMARIES:
            raise KeyError(f"no summary {name!r}; the summaries are {', '.join(SUMMARIES)}")
        return path("summary", summary=name)

    def summaries(self, *names: str) -> list[str]:
        """The summaries among ``names`` that this run writes (none of an analysis that is off)."""
        return [self.summary(n) for n in names if n in self.written_summaries]

    @cached_property
    def written_summaries(self) -> tuple[str, ...]:
        on = {
            "ieat_scratch": bool(self.scratch_stages),
            "attribution": bool(self.config["analysis"]["attribution"]["comparisons"]),
            "amplification": bool(self.predicted_datasets),
            "amplification_terms": bool(self.predicted_datasets),
            "link": bool(self.predicted_datasets),
            "link_correlation": bool(self.predicted_datasets),
            "intervention": bool(self.compared_interventions),
            "comparison": bool(self.comparisons),
            "layer_profile": self.layers_on,
            "trajectory": self.trajectory_on,
            "claims": self.claims_on,
            "claim_values": self.claims_on,
            "factors": self.factors_on,
            "factor_values": self.factors_on,
            "covariates": self.factors_on,
        }
        return tuple(n for n in SUMMARIES if on.get(n, True))

    def analysis_targets(self) -> list[str]:
        """Every summary this run writes, the findings, the filled config, and each model's analyses marker."""
        return [
            *self.summaries(*SUMMARIES),
            "results/summary/findings.html",
            "results/summary/config.yaml",
            *(path("analyses_done", model=m) for m in self.models),
        ]

    def model_analysis_tables(self, model: str) -> list[str]:
        """Every per-model analysis table of one model (the jobs of its stats group)."""
        sets, datasets = self.analysis_sets, self.finetune_datasets
        tables = [
            path("stage_table", kind=kind, analysis_set=a, model=model, stage=s)
            for kind in ("similarity", "ieat")
            for a in sets
            for s in self.stages
        ]
        tables += [
            path(kind, analysis_set=a, model=model, dataset=d)
            for kind in ("bts", "cka")
            for a in sets
            for d in datasets
        ]
        tables += [path("change", analysis_set=a, model=model, dataset=d, kind="ieat") for a in sets for d in datasets]
        tables += [
            path("trajectory_table", analysis_set=a, model=model, dataset=d)
            for a in sets
            for d in self.trajectory_datasets
        ]
        if self.layers_on:
            tables += [path("layer_profile", analysis_set=a, model=model) for a in sets]
        tables += [
            path("comparison_change", arm=arm, against=against, analysis_set=a, model=model)
            for arm, against in self.comparisons
            for a in sets
        ]
        return tables
