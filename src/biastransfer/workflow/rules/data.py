"""Settings of the rules around the images: the analysis sets' leakage checks and summary
(rules/analysis_sets.smk), a synthetic dataset's evaluation split (rules/synthetic.smk) and the finetuning
splits' decoded cache (rules/cache.smk). The rules whose rerun would download data again or retrain (directly
or through the files they write) keep flat params: see the first line of their rule files."""

from __future__ import annotations

from dataclasses import dataclass

from biastransfer.paths import path
from biastransfer.workflow.settings import Settings

#: Dataset kinds whose images are also compared by file hash in the leakage check; COCO and Open Images are
#: compared by their own image ids (hashing all of COCO train2017 would read 18 GB).
HASHED_KINDS = ("synthetic", "table")


@dataclass(frozen=True)
class SyntheticTestSplitSettings(Settings):
    """The entry of the synthetic dataset whose evaluation split is drawn (``n_test`` fresh scenes)."""

    rule = "synthetic_test_split"
    spec: dict

    @classmethod
    def build(cls, plan, synthetic: str) -> SyntheticTestSplitSettings:
        return cls(spec=plan.config["datasets"][synthetic])


@dataclass(frozen=True)
class LeakageSettings(Settings):
    """The splits whose images are compared by file hash as well as by id (``HASHED_KINDS``' training
    splits and evaluation splits), and each evaluation split (``test``) with the training splits it must not
    share an image with (``training``; ``Plan.evaluation_disjoint``), in the plan's order: the ok file's."""

    rule = "check_leakage"
    hash_files: list
    evaluation: list

    @classmethod
    def build(cls, plan) -> LeakageSettings:
        hashed = [d for d in plan.training_datasets if plan.config["datasets"][d]["kind"] in HASHED_KINDS]
        tested = [d for d in plan.predicted_datasets if plan.config["datasets"][d]["kind"] in HASHED_KINDS]
        return cls(
            hash_files=[
                *(path("split", dataset=d, split=s) for d in hashed for s in ("train", "val")),
                *(path("split", dataset=d, split="test") for d in tested),
            ],
            evaluation=[{"test": t, "training": s} for t, s in plan.evaluation_disjoint().items()],
        )


@dataclass(frozen=True)
class AnalysisSetSummarySettings(Settings):
    """Every analysis set (``name``) and where its images come from (``dataset``: its dataset, else its
    source), in the config's order: the order of the rule's manifests."""

    rule = "analysis_set_summary"
    analysis_sets: list

    @classmethod
    def build(cls, plan) -> AnalysisSetSummarySettings:
        sets = plan.config["analysis_sets"].items()
        return cls(analysis_sets=[{"name": a, "dataset": s.get("dataset") or s["source"]} for a, s in sets])


@dataclass(frozen=True)
class ImageCacheSettings(Settings):
    """The cache's format version: a cache of an older format is rebuilt ("params changed")."""

    rule = "image_cache"
    cache_format: str

    @classmethod
    def build(cls, plan) -> ImageCacheSettings:
        return cls(cache_format=plan.cache_format)
