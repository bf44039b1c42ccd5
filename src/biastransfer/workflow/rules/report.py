"""Settings of the findings and the report (rules/analysis.smk's findings, rules/report.smk)."""

from __future__ import annotations

from dataclasses import dataclass

from biastransfer.workflow.settings import Settings


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
