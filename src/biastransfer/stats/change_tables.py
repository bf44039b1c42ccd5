"""Tables of what finetuning changed, from the embeddings of the same images before and after (docs/formats.md).

``stages`` maps ``"pretrained"`` and each finetuning seed (an int) to that network's
:class:`~biastransfer.embeddings.EmbeddingTable` of one analysis set. Every table pairs the networks by
image id, so each bootstrap replicate resamples the same images in every network.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from biastransfer.embeddings import EmbeddingTable
from biastransfer.stages import PRETRAINED
from biastransfer.stats.bootstrap import BOOTSTRAP, ChangeResult, IEATBlocks, ieat_changes
from biastransfer.stats.ieat import association_scores, effect_size_parts
from biastransfer.stats.resampled_similarity import SimilarityReplicates, similarity_changes, similarity_replicates
from biastransfer.stats.results import ieat_test_row, pair_key
from biastransfer.stats.seeds import combined_ieat


def aligned_classes(stages: Mapping[object, EmbeddingTable]) -> dict[object, dict[str, np.ndarray]]:
    """``{stage: {class: rows}}`` with every stage's rows in the image order of the first stage.

    ValueError names the stage and class whose image ids differ from the first stage's.
    """
    first_stage, first = next(iter(stages.items()))
    out = {}
    for stage, table in stages.items():
        position = {image: i for i, image in enumerate(table.image_ids)}
        groups = {}
        for cls in first.class_names:
            ids = first.image_ids[first.classes == cls]
            other = table.image_ids[table.classes == cls]
            if len(ids) != len(other) or set(ids) != set(other):
                raise ValueError(
                    f"stage {stage!r} class {cls!r}: its {len(other)} images are not the {len(ids)} images "
                    f"of stage {first_stage!r}; paired statistics need the same images in every network"
                )
            groups[cls] = table.embeddings[[position[i] for i in ids]]
        out[stage] = groups
    return out


def ieat_change_table(
    stages: Mapping[object, EmbeddingTable],
    tests: Sequence[Mapping],
    *,
    bootstrap: int = BOOTSTRAP,
    ci_level: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """``delta_d = d_finetuned - d_pretrained`` of every test and finetuning seed, with a paired
    bootstrap interval and two-sided p-value (the same resampled images in every network;
    :func:`~biastransfer.stats.bootstrap.ieat_changes`), beside the change of d's numerator
    (``delta_mean_difference``) and denominator (``delta_pooled_sd``) and the share of the change of
    log |d| that the denominator accounts for (``spread_share``; :func:`change_from_spread`)."""
    groups = aligned_classes(stages)
    seeds = [s for s in stages if s != PRETRAINED]
    rows = []
    for test in tests:
        sets = {s: [groups[s][test[r]] for r in "XYAB"] for s in [PRETRAINED, *seeds]}
        parts = {s: effect_size_parts(association_scores(*v), len(v[0])) for s, v in sets.items()}
        blocks = [IEATBlocks(*v) for v in sets.values()]
        for ft, r in zip(seeds, ieat_changes(blocks, bootstrap, ci_level, seed)):
            (num_0, sd_0), (num_1, sd_1) = parts[PRETRAINED], parts[ft]
            rows.append(
                {
                    "seed": ft,
                    **ieat_test_row(test),
                    "d_pretrained": r.before,
                    "d_finetuned": r.after,
                    "delta_d": r.delta,
                    **_interval(r),
                    "mean_difference_pretrained": num_0,
                    "mean_difference_finetuned": num_1,
                    "delta_mean_difference": num_1 - num_0,
                    "pooled_sd_pretrained": sd_0,
                    "pooled_sd_finetuned": sd_1,
                    "delta_pooled_sd": sd_1 - sd_0,
                    "spread_share": spread_share(num_0, sd_0, num_1, sd_1),
                }
            )
    return pd.DataFrame(rows)


SPREAD_SHARE = 0.75  # a change of d counts as one of spread when the SD accounts for this much of it


def spread_share(num_before: float, sd_before: float, num_after: float, sd_after: float) -> float:
    """The share of the change of log |d| that the change of the pooled SD accounts for.

    ``log |d| = log |numerator| - log SD``, so the change of log |d| splits exactly into the numerator's
    part and the SD's part ``-(log sd_after - log sd_before)``; the share is the SD's part over the
    whole. NaN when d does not change, a numerator is 0 or the numerator changes sign (then the
    association itself changed, not only its scale).
    """
    if num_before * num_after <= 0 or min(sd_before, sd_after) <= 0:
        return float("nan")
    log_sd = np.log(sd_after / sd_before)
    total = np.log(abs(num_after / num_before)) - log_sd
    return float(-log_sd / total) if total != 0 else float("nan")


def change_from_spread(
    num_before: float, sd_before: float, num_after: float, sd_after: float, share: float = SPREAD_SHARE
) -> bool:
    """Whether a change of d comes (at least ``share`` of it, on the log scale) from a change of the
    pooled SD rather than of the raw association: the numerator keeps its sign and the SD's part of the
    change of log |d| is at least ``share``."""
    value = spread_share(num_before, sd_before, num_after, sd_after)
    return bool(np.isfinite(value) and value >= share)


def _interval(r: ChangeResult) -> dict:
    """The interval and p-value columns of a change table row."""
    return {
        "se": r.se,
        "ci_low": r.ci_low,
        "ci_high": r.ci_high,
        "pvalue": r.pvalue,
        "pvalue_floor": r.pvalue_floor,
        "ci_method": r.method,
        "ci_level": r.level,
        "bootstrap": r.replicates,
        "bootstrap_seed": r.seed,
    }


def stage_replicates(
    stages: Mapping[object, EmbeddingTable], lists: Mapping[str, Sequence], *, bootstrap: int = BOOTSTRAP, seed: int = 0
) -> SimilarityReplicates:
    """Bootstrap replicates of the listed similarities (``lists["intra"]``: classes, ``lists["inter"]``:
    pairs; default all classes and all unordered pairs) in every stage, paired by image."""
    groups = aligned_classes(stages)
    classes = list(next(iter(groups.values())))
    intra = [str(c) for c in (lists.get("intra") or classes)]
    inter = [
        tuple(p) for p in (lists.get("inter") or [(p, q) for i, p in enumerate(classes) for q in classes[i + 1 :]])
    ]
    return similarity_replicates(groups, intra, inter, replicates=bootstrap, seed=seed)


def similarity_change_table(reps: SimilarityReplicates, *, ci_level: float = 0.95) -> pd.DataFrame:
    """Change of every listed intra- and inter-class similarity from the pretrained network to each seed."""
    rows = []
    for ft in [s for s in reps.observed if s != PRETRAINED]:
        for key, r in similarity_changes(reps, PRETRAINED, ft, level=ci_level).items():
            inter = isinstance(key, tuple)
            rows.append(
                {
                    "seed": ft,
                    "kind": "inter" if inter else "intra",
                    "key": pair_key(*key) if inter else key,
                    "class_p": key[0] if inter else key,
                    "class_q": key[1] if inter else "",
                    "value_pretrained": r.before,
                    "value_finetuned": r.after,
                    "delta": r.delta,
                    **_interval(r),
                }
            )
    return pd.DataFrame(rows)


def ieat_seeds_table(
    stages: Mapping[object, EmbeddingTable],
    tests: Sequence[Mapping],
    *,
    permutations: int = 100_000,
    alternative: str = "greater",
    method: str = "auto",
    seed: int = 0,
) -> pd.DataFrame:
    """One row per test: d over the finetuning seeds (mean, SD, range) and the combined test that
    re-partitions the images once for all seeds (:func:`~biastransfer.stats.seeds.combined_ieat`)."""
    groups = aligned_classes(stages)
    seeds = [s for s in stages if s != PRETRAINED]
    if not seeds:
        raise ValueError("ieat_seeds_table needs at least one finetuned stage")
    rows = []
    for test in tests:
        strata = [tuple(groups[s][test[r]] for r in "XYAB") for s in seeds]
        r = combined_ieat(
            strata, paired=True, permutations=permutations, alternative=alternative, method=method, seed=seed
        )
        rows.append(
            {
                **ieat_test_row(test),
                "seeds": " ".join(str(s) for s in seeds),
                **r.as_dict(),
            }
        )
    return pd.DataFrame(rows).rename(columns={"seed": "permutation_seed"})
