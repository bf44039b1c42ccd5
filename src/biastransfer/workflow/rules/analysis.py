"""Settings of the statistics on embeddings: similarities, iEATs, BTS and what finetuning changed in them
(rules/analysis.smk), at every layer (rules/layers.smk), every epoch (rules/trajectory.smk) and between two
finetuning arms (rules/comparisons.smk)."""

from __future__ import annotations

from dataclasses import dataclass

from biastransfer.workflow.settings import Settings


@dataclass(frozen=True)
class SimilarityOptions(Settings):
    """``analysis.similarity``: how the intra- and inter-class similarities are computed."""

    method: str
    iterations: int
    seed: int


@dataclass(frozen=True)
class SimilaritySettings(SimilarityOptions):
    rule = "similarity"

    @classmethod
    def build(cls, plan) -> SimilaritySettings:
        return cls.pick(plan.config["analysis"]["similarity"])


@dataclass(frozen=True)
class Resampling(Settings):
    """A bootstrap: replicates (0: none), interval level and seed."""

    bootstrap: int
    ci_level: float
    seed: int


@dataclass(frozen=True)
class IEATRun(Resampling):
    """How an iEAT is run: the permutation test and the bootstrap interval of d (``analysis.ieat`` less alpha)."""

    permutations: int
    alternative: str
    method: str


@dataclass(frozen=True)
class IEATOptions(IEATRun):
    """``analysis.ieat``: the iEAT run and the significance level of its verdict."""

    alpha: float


@dataclass(frozen=True)
class BTSRun(Resampling):
    """How a BTS is run (``analysis.bts``): its p-value and the bootstrap of its interval."""

    pvalue: str


@dataclass(frozen=True)
class IEATSettings(Settings):
    """One analysis set's iEAT tests and how they are run."""

    rule = "ieat"
    tests: list
    options: IEATOptions

    @classmethod
    def build(cls, plan, analysis_set: str) -> IEATSettings:
        return cls(
            tests=plan.config["analysis_sets"][analysis_set]["ieat"],
            options=IEATOptions.pick(plan.config["analysis"]["ieat"]),
        )


@dataclass(frozen=True)
class BTSSettings(BTSRun):
    """One analysis set's BTS lists and how the BTS is run."""

    rule = "bts"
    lists: dict

    @classmethod
    def build(cls, plan, analysis_set: str) -> BTSSettings:
        return cls.pick(plan.config["analysis"]["bts"], lists=plan.config["analysis_sets"][analysis_set]["bts"])


@dataclass(frozen=True)
class ChangeSettings(Settings):
    """What finetuning changed on one analysis set: its iEATs and BTS lists, each with its resampling."""

    rule = "change"
    tests: list
    lists: dict
    ieat: IEATRun
    bts: Resampling

    @classmethod
    def build(cls, plan, analysis_set: str) -> ChangeSettings:
        aset, analysis = plan.config["analysis_sets"][analysis_set], plan.config["analysis"]
        return cls(
            tests=aset["ieat"],
            lists=aset["bts"],
            ieat=IEATRun.pick(analysis["ieat"]),
            bts=Resampling.pick(analysis["bts"]),
        )


@dataclass(frozen=True)
class Measures(Settings):
    """Every statistic on one analysis set's embeddings: its iEATs and BTS lists, each with how it is run."""

    tests: list
    lists: dict
    similarity: SimilarityOptions
    ieat: IEATRun
    bts: BTSRun

    @staticmethod
    def of(plan, analysis_set: str, **replaced) -> dict:
        """Measures' fields for ``analysis_set`` from the config; ``replaced`` (permutations, bootstrap)
        replaces the config's values where the iEAT run or the BTS run has that key."""
        aset, analysis = plan.config["analysis_sets"][analysis_set], plan.config["analysis"]
        return {
            "tests": aset["ieat"],
            "lists": aset["bts"],
            "similarity": SimilarityOptions.pick(analysis["similarity"]),
            "ieat": IEATRun.pick(analysis["ieat"], **replaced),
            "bts": BTSRun.pick(analysis["bts"], **replaced),
        }


@dataclass(frozen=True)
class LayerProfileSettings(Measures):
    """The statistics at every profiled layer of one analysis set."""

    rule = "layer_profile"

    @classmethod
    def build(cls, plan, analysis_set: str) -> LayerProfileSettings:
        return cls(**Measures.of(plan, analysis_set))


@dataclass(frozen=True)
class TrajectorySettings(Measures):
    """The statistics at every saved epoch of a model finetuned on a dataset (``analysis.trajectory`` sets the
    permutations and bootstrap replicates: one test per epoch)."""

    rule = "trajectory"
    epochs: list

    @classmethod
    def build(cls, plan, analysis_set: str, model: str, dataset: str) -> TrajectorySettings:
        trajectory = plan.config["analysis"]["trajectory"]
        resampling = {"permutations": trajectory["permutations"], "bootstrap": trajectory["bootstrap"]}
        return cls(**Measures.of(plan, analysis_set, **resampling), epochs=plan.trajectory_epochs(model, dataset))


@dataclass(frozen=True)
class ComparisonChangeSettings(Resampling):
    """The paired change of d between two finetuning arms' networks (``analysis.ieat``; ``subject``: how the
    verdicts name the arm)."""

    rule = "comparison_change"
    tests: list
    permutations: int
    alpha: float
    subject: str

    @classmethod
    def build(cls, plan, analysis_set: str, arm: str, against: str) -> ComparisonChangeSettings:
        return cls.pick(
            plan.config["analysis"]["ieat"],
            tests=plan.config["analysis_sets"][analysis_set]["ieat"],
            subject=plan.comparison_subject(arm, against),
        )


@dataclass(frozen=True)
class SummaryTable(Settings):
    """Which summary (``biastransfer.workflow.plan.SUMMARIES``) a summarise job gathers its tables into."""

    summary: str


@dataclass(frozen=True)
class SummariseSettings(SummaryTable):
    rule = "summarise"

    @classmethod
    def build(cls, plan, summary: str) -> SummariseSettings:
        return cls(summary=summary)


@dataclass(frozen=True)
class LayerSummarySettings(SummaryTable):
    rule = "summarise_layers"

    @classmethod
    def build(cls, plan) -> LayerSummarySettings:
        return cls(summary="layer_profile")


@dataclass(frozen=True)
class TrajectorySummarySettings(SummaryTable):
    rule = "summarise_trajectory"

    @classmethod
    def build(cls, plan) -> TrajectorySummarySettings:
        return cls(summary="trajectory")


@dataclass(frozen=True)
class AttributionDesign(Settings):
    """``analysis.attribution`` less its comparisons: the fields of ``biastransfer.stats.attribution.Design``."""

    alternative: str
    permutations: int
    level: float
    alpha: float
    power: float
    simulations: int
    seed: int


@dataclass(frozen=True)
class AttributionSettings(Settings):
    """The comparisons across networks (``analysis.attribution.comparisons``) and how each is tested."""

    rule = "attribution"
    comparisons: list
    design: AttributionDesign

    @classmethod
    def build(cls, plan) -> AttributionSettings:
        """ValueError naming a comparison of prediction contrasts on a dataset that has no evaluation split."""
        attribution = plan.config["analysis"]["attribution"]
        for spec in attribution["comparisons"]:
            if spec["measure"] == "contrast" and spec["stage"][len("ft-") :] not in plan.predicted_datasets:
                raise ValueError(
                    f"analysis.attribution.comparisons.{spec['name']}: measure contrast needs predictions, but "
                    f"{spec['stage'][len('ft-') :]!r} has no evaluation split (datasets with one: "
                    f"{', '.join(plan.predicted_datasets) or 'none'})"
                )
        return cls(comparisons=attribution["comparisons"], design=AttributionDesign.pick(attribution))


@dataclass(frozen=True)
class InterventionSummarySettings(Settings):
    """Each compared intervention with the dataset it rebalances (``[intervention, source]``, in the plan's
    order: the order of the summary's prediction rows)."""

    rule = "intervention_summary"
    sources: list

    @classmethod
    def build(cls, plan) -> InterventionSummarySettings:
        return cls(sources=[[d, plan.source_of(d)] for d in plan.compared_interventions])


@dataclass(frozen=True)
class ComparisonSummarySettings(Settings):
    """Every compared pair of finetuning arms (``[arm, against]``, in the plan's order) and how their
    measures are compared over seeds (``analysis.ieat``'s level, alpha, permutations and seed)."""

    rule = "comparison_summary"
    pairs: list
    ci_level: float
    alpha: float
    permutations: int
    seed: int

    @classmethod
    def build(cls, plan) -> ComparisonSummarySettings:
        return cls.pick(plan.config["analysis"]["ieat"], pairs=[list(p) for p in plan.comparisons])


@dataclass(frozen=True)
class ClaimsSettings(Settings):
    """The claims about groups of models (the ``claims`` section), the finetuning datasets whose changes they
    read and the adjustment of their p-values (``report.p_adjust``)."""

    rule = "claims"
    claims: dict
    datasets: list
    adjust: str

    @classmethod
    def build(cls, plan) -> ClaimsSettings:
        return cls(
            claims=plan.config["claims"], datasets=plan.finetune_datasets, adjust=plan.config["report"]["p_adjust"]
        )


@dataclass(frozen=True)
class FactorsSettings(Settings):
    """The factors questions (the ``factors`` section), each question's models and finetuning datasets, the
    covariates of those models with their sources (``{model: {covariate: {value, source}}}``; a library
    model's resolution only when a question asks for it), and what
    words a new association (``analysis.ieat.alpha``, ``report.p_adjust``)."""

    rule = "factors"
    factors: dict
    models: dict
    datasets: dict
    covariates: dict
    alpha: float
    adjust: str

    @classmethod
    def build(cls, plan) -> FactorsSettings:
        from biastransfer.factors import config_covariates, question_datasets, question_models

        questions = plan.config["factors"]["questions"]
        models = {q["name"]: question_models(q, plan.config) for q in questions}
        used = list(dict.fromkeys(m for names in models.values() for m in names))
        return cls(
            factors=plan.config["factors"],
            models=models,
            datasets={q["name"]: question_datasets(q, plan.config) for q in questions},
            covariates=config_covariates(plan.config, used, plan.input_resolutions),
            alpha=plan.config["analysis"]["ieat"]["alpha"],
            adjust=plan.config["report"]["p_adjust"],
        )
