"""Settings of the findings, the provenance and the report: rules/analysis.smk's findings, provenance and
effective config, rules/report.smk's figures, comparison and static report, rules/tables.smk's tables."""

from __future__ import annotations

from dataclasses import dataclass

from biastransfer.hashing import config_hash
from biastransfer.report.compare import PAPER_TARGETS
from biastransfer.workflow.settings import Settings

#: The kinds of table make_tables.py makes (its KINDS), and those that mark significance (read the significance rule).
TABLE_KINDS = (
    "analysis_set",
    "ieat",
    "bts",
    "finetune",
    "layers",
    "trajectory",
    "claims",
    "factors",
    "amplification",
    "link",
    "intervention",
    "arm_comparison",
)
MARKED_TABLES = ("ieat", "bts", "link")


@dataclass(frozen=True)
class Significance(Settings):
    """The run's one significance rule: ``analysis.ieat.alpha`` on p-values adjusted by ``report.p_adjust``
    within each table (biastransfer.report.formatting.Significance)."""

    alpha: float
    adjust: str

    @staticmethod
    def of(plan) -> dict:
        return {"alpha": plan.config["analysis"]["ieat"]["alpha"], "adjust": plan.config["report"]["p_adjust"]}


@dataclass(frozen=True)
class FindingsSettings(Significance):
    """The findings in words: every analysis set's iEATs, the significance rule and the associations planted in
    the models' synthetic pretraining data ({object: figure}; none for real data)."""

    rule = "findings"
    tests: dict
    planted: dict

    @classmethod
    def build(cls, plan) -> FindingsSettings:
        return cls(**Significance.of(plan), tests=plan.ieat_tests, planted=plan.planted_associations())


@dataclass(frozen=True)
class SignificanceSettings(Significance):
    """A figure whose stars and legend read the significance rule alone."""

    rule = "plot_ieat"

    @classmethod
    def build(cls, plan) -> SignificanceSettings:
        return cls(**Significance.of(plan))


class ForestSettings(SignificanceSettings):
    """The iEAT forest plot: its filled markers read the significance rule alone."""

    rule = "plot_forest"


@dataclass(frozen=True)
class SimilarityFigures(Significance):
    """One analysis set's similarity figures for one model: the significance rule, the class the BTS
    figures hold as control (``report.control_class``) and the classes and pairs the BTS ranks (all of them
    when the analysis set lists none)."""

    rule = "plot_similarity"
    control_class: str | None
    lists: dict

    @classmethod
    def build(cls, plan, analysis_set: str) -> SimilarityFigures:
        return cls(
            **Significance.of(plan),
            control_class=plan.config["report"]["control_class"],
            lists=plan.config["analysis_sets"][analysis_set]["bts"],
        )


@dataclass(frozen=True)
class HtmlReportSettings(Significance):
    """The static report: the significance rule, the filled config it summarises (captions, what was run), the
    iEAT tests, and the facts of the run its results model records (biastransfer.report.results.results_model):
    models, seeds per finetuning dataset, the co-occurrences planted in the models' synthetic pretraining data
    ({dataset: {object: P(person_a)}}; none for real data), the statistics settings and the config's hash."""

    rule = "html_report"
    config: dict
    tests: dict
    facts: dict

    @classmethod
    def build(cls, plan) -> HtmlReportSettings:
        config = plan.config
        return cls(**Significance.of(plan), config=config, tests=plan.ieat_tests, facts=run_facts(plan))


def run_facts(plan) -> dict:
    """What the results model records of a run, from its plan: models, analysis sets, seeds and scratch seeds
    per finetuning dataset, the finetuning recipe, the co-occurrences planted in the models' synthetic pretraining
    data ({dataset: {object: P(person_a)}}; none for real data), the statistics settings and the config's hash."""
    config = plan.config
    datasets, analysis, finetune = config["datasets"], config["analysis"], config["finetune"]
    pretraining = {m.get("pretrain", {}).get("dataset") for m in config["models"].values()} - {None}
    planted = {  # every synthetic dataset the networks learn from, with its co-occurrences (none: {})
        d: dict(datasets[d].get("cooccurrence", {}))
        for d in sorted(pretraining | set(finetune["datasets"]))
        if datasets.get(d, {}).get("kind") == "synthetic"
    }
    return {
        "models": list(config["models"]),
        "analysis_sets": list(config["analysis_sets"]),
        "seeds": {d: plan.finetune_seeds(d) for d in finetune["datasets"]},
        "scratch_seeds": {d: plan.reference_seeds(d) for d in finetune["datasets"]},
        "finetune": {k: finetune["defaults"][k] for k in ("epochs", "lr", "optimizer")},
        "planted": planted,
        "statistics": {
            "ieat": {k: analysis["ieat"][k] for k in ("alternative", "permutations", "seed", "bootstrap", "ci_level")},
            "bts": {k: analysis["bts"][k] for k in ("reference", "pvalue", "bootstrap", "ci_level", "seed")},
        },
        "config_hash": config_hash(config),
    }


@dataclass(frozen=True)
class ComparisonSettings(Settings):
    """The comparison with the paper's numbers (``report``): its own significance level, the tolerances and
    the (X, Y) of the iEATs compared (the paper's when the config names none)."""

    rule = "compare_paper"
    alpha: float
    tolerances: dict
    targets: list

    @classmethod
    def build(cls, plan) -> ComparisonSettings:
        report = plan.config["report"]
        targets = report["ieat_targets"] or list(PAPER_TARGETS)
        return cls(alpha=report["alpha"], tolerances=report["tolerances"], targets=targets)


@dataclass(frozen=True)
class TableSettings(Settings):
    """One make_tables.py table (rules/tables.smk: one rule per table artefact, ``table_<kind>``): its kind
    and, for the tables with significance marks (``MARKED_TABLES``), the significance rule."""

    rule = "table"
    kind: str
    significance: Significance | None

    @classmethod
    def build(cls, plan, kind: str) -> TableSettings:
        if kind not in TABLE_KINDS:
            raise ValueError(f"table kind {kind!r}: make_tables.py makes {', '.join(TABLE_KINDS)}")
        marked = Significance(**Significance.of(plan)) if kind in MARKED_TABLES else None
        return cls(kind=kind, significance=marked)


@dataclass(frozen=True)
class ProvenanceSettings(Settings):
    """The models, in the order of the rule's weights origins."""

    rule = "provenance"
    models: list

    @classmethod
    def build(cls, plan) -> ProvenanceSettings:
        return cls(models=plan.models)


@dataclass(frozen=True)
class EffectiveConfigSettings(Settings):
    """The filled config, every default shown."""

    rule = "effective_config"
    config: dict

    @classmethod
    def build(cls, plan) -> EffectiveConfigSettings:
        return cls(config=plan.config)


@dataclass(frozen=True)
class ContactSheetSettings(Settings):
    """How many images of each class an analysis set's contact sheet shows."""

    rule = "plot_contact_sheet"
    per_class: int

    @classmethod
    def build(cls, plan) -> ContactSheetSettings:
        return cls(per_class=4)


@dataclass(frozen=True)
class CurvesFigure(Settings):
    """A training-curves figure (loss and validation metric per epoch and seed): of the finetuned networks, or of
    the scratch reference networks (``scratch``: their curves are in their metrics.json)."""

    scratch: bool


@dataclass(frozen=True)
class CurvesSettings(CurvesFigure):
    rule = "plot_curves"

    @classmethod
    def build(cls, plan) -> CurvesSettings:
        return cls(scratch=False)


@dataclass(frozen=True)
class ScratchCurvesSettings(CurvesFigure):
    rule = "plot_scratch_curves"

    @classmethod
    def build(cls, plan) -> ScratchCurvesSettings:
        return cls(scratch=True)
