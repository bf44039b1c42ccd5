"""Settings of the model zoo's summaries (rules/zoo.smk): its ranked table, forest figure and findings."""

from __future__ import annotations

from dataclasses import dataclass

from biastransfer.workflow.settings import Settings


@dataclass(frozen=True)
class RankBy(Settings):
    """``zoo.rank_by``: the iEAT whose effect size orders the table and leads the figure and findings."""

    analysis_set: str
    test: str


@dataclass(frozen=True)
class ZooRanking(Settings):
    """The iEAT that ranks the zoo's models (none while the zoo is off: its rules are then unused)."""

    rank_by: RankBy | None

    @staticmethod
    def of(plan) -> dict:
        return {"rank_by": RankBy.pick(plan.config["zoo"]["rank_by"]) if plan.zoo else None}

    def ranked_by(self) -> dict:
        """The ranking iEAT's ``analysis_set`` and ``test`` as keyword arguments (the zoo off: an error)."""
        if self.rank_by is None:
            raise ValueError(f"{type(self).__name__}: no rank_by, the zoo is off (config zoo: null)")
        return {"analysis_set": self.rank_by.analysis_set, "test": self.rank_by.test}


@dataclass(frozen=True)
class ZooTableSettings(ZooRanking):
    """The ranked table: each model's ``about`` entry (none: an empty one) and the adjustment of the
    p-values (``report.p_adjust``)."""

    rule = "zoo_table"
    about: dict
    adjust: str

    @classmethod
    def build(cls, plan) -> ZooTableSettings:
        about = {m: e.get("about", {}) for m, e in plan.config["models"].items()}
        return cls(**ZooRanking.of(plan), about=about, adjust=plan.config["report"]["p_adjust"])


@dataclass(frozen=True)
class ZooForestSettings(ZooRanking):
    rule = "zoo_forest"

    @classmethod
    def build(cls, plan) -> ZooForestSettings:
        return cls(**ZooRanking.of(plan))


@dataclass(frozen=True)
class ZooFindingsSettings(ZooRanking):
    """The zoo's findings in words: the ranking iEAT and the significance level (``analysis.ieat.alpha``)."""

    rule = "zoo_findings"
    alpha: float

    @classmethod
    def build(cls, plan) -> ZooFindingsSettings:
        return cls(**ZooRanking.of(plan), alpha=plan.config["analysis"]["ieat"]["alpha"])
