"""Result tables from embeddings: similarities, Bias Transfer Scores, iEATs and linear CKA (docs/formats.md).

These functions turn the statistics of ``similarity``, ``bts`` and ``ieat`` into the workflow's CSV
rows; the workflow's scripts and the ``biastransfer`` command line both call them.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from biastransfer.embeddings import EmbeddingTable
from biastransfer.stages import parse_stage, stage_kind
from biastransfer.stats._validation import ieat_role_problems
from biastransfer.stats.bootstrap import BOOTSTRAP
from biastransfer.stats.bts import bias_transfer_score, retention_difference
from biastransfer.stats.cka import CKAGrams, jackknife_interval
from biastransfer.stats.ieat import ieat
from biastransfer.stats.multitest import adjust_pvalues
from biastransfer.stats.resampled_similarity import SimilarityReplicates, rank_correlation_ci
from biastransfer.stats.similarity import inter_class_similarity, intra_class_similarity

PAIR_SEP = "|"


def pair_key(p: str, q: str) -> str:
    """Key of an inter-class pair in the similarity tables."""
    return f"{p}{PAIR_SEP}{q}"


def ieat_test_row(test: Mapping) -> dict:
    """A configured iEAT test's columns in a table's row: its ``test`` name and its classes ``X, Y, A, B``."""
    return {"test": test["name"], **{role: test[role] for role in "XYAB"}}


def similarity_table(
    table: EmbeddingTable, *, method: str = "exact", iterations: int = 50, seed: int = 0
) -> pd.DataFrame:
    """Intra-class similarity of every class and inter-class similarity of every unordered pair."""
    groups = table.by_class()
    rows = []
    for cls, Z in groups.items():
        r = intra_class_similarity(Z, method=method, iterations=iterations, seed=seed)
        rows.append(
            {
                "kind": "intra",
                "key": cls,
                "class_p": cls,
                "class_q": "",
                "value": r.value,
                "se": r.se,
                "n": r.n,
                "method": r.method,
            }
        )
    for p, q in itertools.combinations(groups, 2):
        r = inter_class_similarity(groups[p], groups[q], method=method, iterations=iterations, seed=seed)
        rows.append(
            {
                "kind": "inter",
                "key": pair_key(p, q),
                "class_p": p,
                "class_q": q,
                "value": r.value,
                "se": r.se,
                "n": r.n,
                "method": r.method,
            }
        )
    return pd.DataFrame(rows)


def _lookup(sim: pd.DataFrame, kind: str, items: Sequence) -> dict[str, float]:
    """``{key: value}`` for the listed classes (intra) or pairs (inter, either orientation)."""
    values = dict(zip(sim.loc[sim["kind"] == kind, "key"], sim.loc[sim["kind"] == kind, "value"]))
    out = {}
    for item in items:
        if kind == "intra":
            key = str(item)
            if key not in values:
                raise KeyError(f"class {key!r} has no intra-class similarity (classes: {', '.join(values)})")
            out[key] = values[key]
        else:
            p, q = item
            for key in (pair_key(p, q), pair_key(q, p)):
                if key in values:
                    out[pair_key(p, q)] = values[key]
                    break
            else:
                raise KeyError(f"pair ({p}, {q}) has no inter-class similarity")
    return out


def _default_items(sim: pd.DataFrame, kind: str) -> list:
    sel = sim[sim["kind"] == kind]
    return sel["key"].tolist() if kind == "intra" else list(zip(sel["class_p"], sel["class_q"]))


def bts_table(
    pretrained: pd.DataFrame,
    finetuned: Mapping[int, pd.DataFrame],
    lists: Mapping[str, Sequence] | None = None,
    *,
    pvalue: str = "permutation",
    replicates: SimilarityReplicates | None = None,
    ci_level: float = 0.95,
) -> pd.DataFrame:
    """BTS per seed and pooled (finetuned similarities averaged over seeds first, as the paper does).

    ``lists`` may name the classes (``intra``) and pairs (``inter``) to rank; default: all of them.
    ``pvalue`` picks the verdict's ``pvalue`` (permutation: exact for n <= 8); ``pvalue_t`` is always
    scipy's t approximation, the paper's. With bootstrap ``replicates`` of the same similarities
    (:func:`biastransfer.stats.change_tables.stage_replicates`), rows get a ``ci_level`` interval of rho.
    """
    lists = lists or {}
    rows = []
    for kind in ("intra", "inter"):
        items = lists.get(kind) or _default_items(pretrained, kind)
        before = _lookup(pretrained, kind, items)
        per_seed = {seed: _lookup(sim, kind, items) for seed, sim in finetuned.items()}
        pooled = {k: float(np.mean([s[k] for s in per_seed.values()])) for k in before}
        keys = [str(i) if kind == "intra" else tuple(i) for i in items]
        for seed, after in [*per_seed.items(), ("pooled", pooled)]:
            r = bias_transfer_score(before, after, pvalue=pvalue)
            t = bias_transfer_score(before, after, pvalue="asymptotic")
            row = {
                "seed": seed,
                "kind": kind,
                "statistic": r.statistic,
                "pvalue": r.pvalue,
                "n": r.n,
                "pvalue_method": pvalue,
                "pvalue_floor": r.pvalue_floor,
                "pvalue_t": t.pvalue,
                "ci_low": np.nan,
                "ci_high": np.nan,
                "ci_level": ci_level,
                "bootstrap": 0,
            }
            if replicates is not None:
                after_stages = list(per_seed) if seed == "pooled" else [seed]
                ci = rank_correlation_ci(replicates, "pretrained", after_stages, keys, level=ci_level)
                row.update(ci_low=ci.ci_low, ci_high=ci.ci_high, bootstrap=ci.replicates)
            rows.append(row)
    return pd.DataFrame(rows)


def mean_similarity(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """One similarity table whose values are the mean over ``frames`` (the same classes and pairs)."""
    keys = ["kind", "key", "class_p", "class_q"]
    stacked = pd.concat(frames, ignore_index=True)
    return stacked.groupby(keys, sort=False, as_index=False)["value"].mean()


def scratch_columns(
    pretrained: pd.DataFrame,
    finetuned: Mapping[int, pd.DataFrame],
    reference: Sequence[pd.DataFrame],
    lists: Mapping[str, Sequence] | None = None,
    *,
    pvalue: str = "permutation",
    bootstrap: int = BOOTSTRAP,
    ci_level: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Per row of :func:`bts_table` (seed, kind): rho(scratch, finetuned) and its p-value, rho(pretrained,
    scratch), and the retention verdict from the paired interval of rho(pretrained, finetuned) -
    rho(scratch, finetuned) (:func:`~biastransfer.stats.bts.retention_difference`; the scratch similarities
    of ``reference``, one table per scratch seed, averaged into one ranking)."""
    stages = [frame["stage"].iloc[0] for frame in reference]
    bad = [stage for stage in stages if stage_kind(stage) != "scratch"]
    if bad:
        raise ValueError(f"reference similarity tables must be scratch stages, got {', '.join(bad)}")
    scratch = mean_similarity(reference)
    vs_finetuned = bts_table(scratch, finetuned, lists, pvalue=pvalue)
    vs_pretrained = bts_table(pretrained, {"scratch": scratch}, lists, pvalue=pvalue)
    vs_pretrained = vs_pretrained[vs_pretrained["seed"] == "scratch"].set_index("kind")["statistic"]
    retention = []
    for kind in ("intra", "inter"):
        items = (lists or {}).get(kind) or _default_items(pretrained, kind)
        before, ref = _lookup(pretrained, kind, items), _lookup(scratch, kind, items)
        per_seed = {s: _lookup(sim, kind, items) for s, sim in finetuned.items()}
        pooled = {k: float(np.mean([v[k] for v in per_seed.values()])) for k in before}
        for after in [*per_seed.values(), pooled]:
            r = retention_difference(before, ref, after, replicates=bootstrap, level=ci_level, seed=seed)
            retention.append(
                {
                    "retention_difference": r.difference,
                    "retention_ci_low": r.ci_low,
                    "retention_ci_high": r.ci_high,
                    "retention_verdict": r.verdict,
                }
            )
    return pd.DataFrame(
        {
            "scratch_statistic": vs_finetuned["statistic"],
            "scratch_pvalue": vs_finetuned["pvalue"],
            "pretrained_vs_scratch": vs_finetuned["kind"].map(vs_pretrained),
            "scratch_seeds": " ".join(str(parse_stage(stage)[1]) for stage in stages),
            **pd.DataFrame(retention, index=vs_finetuned.index),
        }
    )


CKA_COLUMNS = (
    "stage",
    "network",
    "finetune_dataset",
    "seed",
    "cka",
    "ci_low",
    "ci_high",
    "se",
    "ci_level",
    "method",
    "n_images",
    "dims",
    "dims_pretrained",
    "scratch_difference",
    "scratch_difference_low",
    "scratch_difference_high",
    "representation",
)


def aligned_rows(reference: EmbeddingTable, other: EmbeddingTable, name: str) -> np.ndarray:
    """``other``'s embeddings in the row order of ``reference``'s images; ValueError naming ``name`` when the two
    do not embed the same images."""
    position = {image: i for i, image in enumerate(other.image_ids.tolist())}
    missing = [image for image in reference.image_ids.tolist() if image not in position]
    if missing or len(position) != len(reference.image_ids):
        extra = sorted(set(position) - set(reference.image_ids.tolist()))
        raise ValueError(
            f"{name} does not embed the pretrained network's images: missing {missing[:3]}, extra {extra[:3]}"
        )
    return other.embeddings[[position[image] for image in reference.image_ids.tolist()]]


def cka_table(pretrained: EmbeddingTable, networks: Mapping[str, EmbeddingTable], *, ci_level: float = 0.95):
    """Linear CKA between the pretrained embedding and each network's (``{stage: embeddings}`` of the same images,
    finetuned or scratch), one row per stage, and per family (the seeds finetuned on, or trained from scratch on,
    one dataset) a ``pooled`` row: the mean over its seeds. Every interval is the delete-one jackknife's, each
    network leaving out the same image (:func:`~biastransfer.stats.cka.jackknife_interval`), so a finetuned row's
    ``scratch_difference`` (its CKA minus the scratch family's of the same dataset, where there is one) has a paired
    interval; ``representation`` reads it: ``kept`` when it lies above 0 (the finetuned network shares more of the
    pretrained representation than one trained on the target data alone), else ``replaced``."""
    aligned = {}
    for stage, table in networks.items():
        if stage_kind(stage) not in ("finetuned", "scratch"):
            raise ValueError(f"CKA against the pretrained network: stage {stage!r} is neither finetuned nor scratch")
        aligned[stage] = aligned_rows(pretrained, table, stage)
    grams = CKAGrams(pretrained.embeddings, aligned, "pretrained")
    estimates, left_out = grams.estimates(), dict(zip(grams.names, grams.left_out()))
    families: dict[tuple, list[str]] = {}
    for stage in aligned:
        families.setdefault((stage_kind(stage), parse_stage(stage)[0]), []).append(stage)
    pooled = {
        family: (float(np.mean([estimates[s] for s in stages])), np.mean([left_out[s] for s in stages], axis=0))
        for family, stages in families.items()
    }
    rows = []
    for (kind, dataset), stages in families.items():
        name = f"{'ft' if kind == 'finetuned' else 'scratch'}-{dataset}"
        values = [(s, parse_stage(s)[1], estimates[s], left_out[s]) for s in stages]
        for stage, seed, estimate, out in [*values, (name, "pooled", *pooled[(kind, dataset)])]:
            r = jackknife_interval(estimate, out, ci_level)
            row = {
                "stage": stage,
                "network": kind,
                "finetune_dataset": dataset,
                "seed": seed,
                "cka": r.estimate,
                "ci_low": r.ci_low,
                "ci_high": r.ci_high,
                "se": r.se,
                "ci_level": r.level,
                "method": r.method,
                "n_images": r.n,
                "dims": aligned[stages[0] if seed == "pooled" else stage].shape[1],
                "dims_pretrained": pretrained.embeddings.shape[1],
                "scratch_difference": np.nan,
                "scratch_difference_low": np.nan,
                "scratch_difference_high": np.nan,
                "representation": "",
            }
            if kind == "finetuned" and ("scratch", dataset) in pooled:
                scratch, scratch_out = pooled[("scratch", dataset)]
                d = jackknife_interval(estimate - scratch, out - scratch_out, ci_level, bounds=(-1.0, 1.0))
                row.update(
                    scratch_difference=d.estimate,
                    scratch_difference_low=d.ci_low,
                    scratch_difference_high=d.ci_high,
                    representation="kept" if d.ci_low > 0 else "replaced",
                )
            rows.append(row)
    return pd.DataFrame(rows, columns=list(CKA_COLUMNS))


def ieat_table(table: EmbeddingTable, tests: Sequence[Mapping], **options) -> pd.DataFrame:
    """One iEAT per configured test ``{name, X, Y, A, B}``, with a bootstrap interval of d, both
    the ``alternative``'s and the two-sided p-value, the |d| detectable with 80% power at ``alpha``, and why d
    is not estimable (``not_estimable``: a set of fewer than 2 images; d is then NaN) or empty;
    ``options`` are :func:`~biastransfer.stats.ieat.ieat`'s keywords (``analysis.ieat`` of the config).
    ValueError for a class in two roles of one test."""
    for test in tests:
        if ieat_role_problems(test):
            raise ValueError(f"iEAT {test['name']}: " + "; ".join(ieat_role_problems(test)))
    rows = []
    for test in tests:
        r = ieat(*(table.of_class(test[role]) for role in "XYAB"), **options)
        rows.append(
            {
                **ieat_test_row(test),
                "effect_size": r.effect_size,
                "mean_difference": r.mean_difference,
                "pooled_sd": r.pooled_sd,
                "ci_low": r.ci_low,
                "ci_high": r.ci_high,
                "ci_level": r.ci_level,
                "bootstrap": r.bootstrap,
                "statistic": r.statistic,
                "pvalue": r.pvalue,
                "pvalue_two_sided": r.pvalue_two_sided,
                "pvalue_floor": r.pvalue_floor,
                "pvalue_se": r.pvalue_se,
                "method": r.method,
                "alternative": r.alternative,
                "permutations": r.permutations,
                "seed": r.seed,
                "n_x": r.n_x,
                "n_y": r.n_y,
                "n_a": r.n_a,
                "n_b": r.n_b,
                "detectable_d": r.detectable_d,
                "detectable_alpha": r.detectable_alpha,
                "detectable_power": r.detectable_power,
                "not_estimable": r.not_estimable,
            }
        )
    return pd.DataFrame(rows)


def with_provenance(df: pd.DataFrame, *, analysis_set: str, model: str, stage: str) -> pd.DataFrame:
    """Prefix the common columns (analysis_set, model, stage, finetune_dataset, seed)."""
    dataset, seed = parse_stage(stage)
    front = pd.DataFrame(
        {
            "analysis_set": analysis_set,
            "model": model,
            "stage": stage,
            "finetune_dataset": dataset or "",
            "seed": "" if seed is None else seed,
        },
        index=df.index,
    )
    return pd.concat([front, df.drop(columns=[c for c in front.columns if c in df.columns])], axis=1)


def add_adjusted_pvalues(df: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Add ``pvalue_holm`` and ``pvalue_bh``, adjusting within each group of ``by`` columns."""
    out = df.copy()
    for column, method in (("pvalue_holm", "holm"), ("pvalue_bh", "bh")):
        out[column] = np.nan
        for idx in out.groupby(list(by), sort=False).indices.values():
            rows = out.index[idx]
            out.loc[rows, column] = adjust_pvalues(out.loc[rows, "pvalue"].to_numpy(dtype=float), method=method)
    return out
