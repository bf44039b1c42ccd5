"""Settings of the prediction level (rules/predictions.smk) and of its link to the embedding level
(rules/link.smk)."""

from __future__ import annotations

from dataclasses import dataclass

from biastransfer.workflow.rules.analysis import Resampling


@dataclass(frozen=True)
class AmplificationSettings(Resampling):
    """``analysis.predictions``: the threshold, the bootstrap, the attacker's folds and the principal components
    the embedding attacker reads (0: the whole embedding)."""

    rule = "amplification"
    threshold: float
    folds: int
    embedding_components: int

    @classmethod
    def build(cls, plan) -> AmplificationSettings:
        return cls.pick(plan.config["analysis"]["predictions"])


@dataclass(frozen=True)
class LinkSettings(Resampling):
    """Every analysis set's iEATs (those linked to a prediction task are read) and the prediction level's
    threshold and bootstrap (``analysis.predictions``)."""

    rule = "link"
    tests: dict
    threshold: float

    @classmethod
    def build(cls, plan) -> LinkSettings:
        return cls.pick(plan.config["analysis"]["predictions"], tests=plan.ieat_tests)
