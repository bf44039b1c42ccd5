"""The run's findings in words (reStructuredText), one module per part of the run, all written with the
numbers' wording of :mod:`~biastransfer.report.findings.prose`: the iEATs and BTS (:mod:`.ieat`), the
layer profiles (:mod:`.layers`), the networks' convergence, the scratch reference, the change of the
representation (linear CKA) and the attribution across networks (:mod:`.networks`), the trajectories
(:mod:`.trajectory`), the networks' predictions (:mod:`.amplification`) and their link to the embeddings
(:mod:`.link`), the interventions on the finetuning data (:mod:`.intervention`), the comparisons between
finetuning arms (:mod:`.comparison`), the model zoo (:mod:`.zoo`),
the claims about groups of models (:mod:`.claims`) and the factors questions across models (:mod:`.factors`)."""

from biastransfer.report.findings.amplification import describe_amplification
from biastransfer.report.findings.claims import claims_sentence, describe_claims
from biastransfer.report.findings.comparison import describe_comparisons
from biastransfer.report.findings.factors import describe_factors
from biastransfer.report.findings.ieat import describe_findings
from biastransfer.report.findings.intervention import describe_interventions
from biastransfer.report.findings.layers import describe_layers
from biastransfer.report.findings.link import describe_link
from biastransfer.report.findings.networks import (
    describe_attribution,
    describe_convergence,
    describe_reference,
    describe_representation,
)
from biastransfer.report.findings.trajectory import describe_trajectories
from biastransfer.report.findings.zoo import describe_zoo

__all__ = [
    "describe_amplification",
    "describe_findings",
    "describe_interventions",
    "describe_comparisons",
    "describe_layers",
    "describe_attribution",
    "describe_convergence",
    "describe_reference",
    "describe_representation",
    "describe_trajectories",
    "describe_zoo",
    "describe_claims",
    "claims_sentence",
    "describe_factors",
    "describe_link",
]
