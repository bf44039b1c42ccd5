"""Settings of the statistics on embeddings (rules/analysis.smk, rules/trajectory.smk)."""

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
        return cls.from_mapping(plan.config["analysis"]["similarity"])


@dataclass(frozen=True)
class Resampling(Settings):
    """A bootstrap: replicates (0: none), interval level and seed."""

    bootstrap: int
    ci_level: float
    seed: int


@dataclass(frozen=True)
class IEATOptions(Settings):
    """``analysis.ieat``: the permutation test, its bootstrap interval and the significance level."""

    permutations: int
    alternative: str
    method: str
    seed: int
    alpha: float
    bootstrap: int
    ci_level: float


@dataclass(frozen=True)
class IEATSettings(Settings):
    """One analysis set's iEAT tests and how they are run."""

    rule = "ieat"
    tests: list
    options: IEATOptions

    @classmethod
    def build(cls, plan, analysis_set: str) -> IEATSettings:
        return cls.from_mapping(
            {"tests": plan.config["analysis_sets"][analysis_set]["ieat"], "options": plan.config["analysis"]["ieat"]}
        )


@dataclass(frozen=True)
class BTSSettings(Resampling):
    """One analysis set's BTS lists, the BTS p-value and the bootstrap of its interval."""

    rule = "bts"
    lists: dict
    pvalue: str

    @classmethod
    def build(cls, plan, analysis_set: str) -> BTSSettings:
        bts = plan.config["analysis"]["bts"]
        return cls(
            lists=plan.config["analysis_sets"][analysis_set]["bts"],
            pvalue=bts["pvalue"],
            bootstrap=bts["bootstrap"],
            ci_level=bts["ci_level"],
            seed=bts["seed"],
        )


@dataclass(frozen=True)
class ChangeTest(Resampling):
    """The iEAT of a change: the paired bootstrap of d and the combined test over seeds."""

    permutations: int
    alternative: str
    method: str


@dataclass(frozen=True)
class ChangeSettings(Settings):
    """What finetuning changed on one analysis set: its iEATs and BTS lists, each with its resampling."""

    rule = "change"
    tests: list
    lists: dict
    ieat: ChangeTest
    bts: Resampling

    @classmethod
    def build(cls, plan, analysis_set: str) -> ChangeSettings:
        ieat, bts = plan.config["analysis"]["ieat"], plan.config["analysis"]["bts"]
        return cls(
            tests=plan.config["analysis_sets"][analysis_set]["ieat"],
            lists=plan.config["analysis_sets"][analysis_set]["bts"],
            ieat=ChangeTest(
                **{k: ieat[k] for k in ("bootstrap", "ci_level", "seed", "permutations", "alternative", "method")}
            ),
            bts=Resampling(**{k: bts[k] for k in ("bootstrap", "ci_level", "seed")}),
        )
