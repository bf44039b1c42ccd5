"""Similarity figures of one model on one analysis set, laid out like the paper's Figures 2-3.

Each ``*_figure`` function takes summary tables (see ``docs/formats.md``) and returns a matplotlib
``Figure`` sized for a paper (report/style.py); :func:`save_figure` writes it as PNG and PDF.

The intra- and inter-class figures show the quantities compared and their change: the top panel the
similarity of every class or pair before finetuning (95% interval from its standard error) and after
(each seed a point, their mean a bar across them); the bottom panel what finetuning changed, each
seed's paired change with its bootstrap interval (``similarity_change.csv``), so changes of 0.01 are
as visible as their uncertainty allows.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from scipy.stats import rankdata

from biastransfer.report.formatting import (
    BTS_COLUMNS,
    Significance,
    model_label,
    ordered_groups,
    p_text,
    require_columns,
    stage_group,
)
from biastransfer.report.style import STAGE_COLOURS, STAGE_MARKERS, paper_figure, paper_style, save_figure, stage_words  # noqa: F401
from biastransfer.stats.results import pair_key

SIMILARITY_LABEL = "mean cosine similarity"
SIMILARITY_COLUMNS = ("analysis_set", "model", "stage", "finetune_dataset", "seed", "kind", "key", "value", "se")
SIMILARITY_CHANGE_COLUMNS = (
    "analysis_set",
    "model",
    "finetune_dataset",
    "seed",
    "kind",
    "key",
    "delta",
    "ci_low",
    "ci_high",
    "ci_level",
)
#: Height (inches) of a line of 7-8 pt text: what a title line or a legend row adds to a figure.
LINE_HEIGHT = 0.15
#: Normal quantile of the 95% interval drawn from a standard error.
Z95 = 1.959963984540054


def similarity_by_stage(
    similarity: pd.DataFrame, *, analysis_set: str, model: str, kind: str, items: Sequence | None = None
) -> pd.DataFrame:
    """Per (key, stage group): ``mean``, ``low``, ``high`` (min/max over seeds), ``n_seeds`` and ``se``
    (the seeds' mean standard error).

    ``items``: only these classes (intra) or pairs (inter, either orientation, keyed as given), in
    this order, as the BTS ranks them; default: every key in its order of first appearance.
    ValueError when the analysis set, model or kind has no rows, an item is missing, or a stage lacks
    or repeats a key.
    """
    require_columns(similarity, SIMILARITY_COLUMNS, where="similarity summary")
    if kind not in ("intra", "inter"):
        raise ValueError(f"kind must be 'intra' or 'inter', not {kind!r}")
    rows = similarity[
        (similarity["analysis_set"] == analysis_set) & (similarity["model"] == model) & (similarity["kind"] == kind)
    ]
    if rows.empty:
        raise ValueError(f"similarity summary: no {kind} rows for analysis set {analysis_set!r} and model {model!r}")
    if items:
        rows = _select_items(rows, kind, items, where=f"{analysis_set!r}/{model!r}")
    rows = rows.assign(group=[stage_group(s, f) for s, f in zip(rows["stage"], rows["finetune_dataset"])])
    if "pretrained" not in set(rows["group"]):
        raise ValueError(f"similarity summary: no pretrained {kind} rows for {analysis_set!r}/{model!r}")
    keys = list(dict.fromkeys(rows["key"]))
    for stage, part in rows.groupby("stage", sort=False):
        lacking = [k for k in keys if k not in set(part["key"])]
        if lacking or part["key"].duplicated().any():
            problem = f"lacks {kind} key(s) {lacking}" if lacking else f"repeats {kind} key(s)"
            raise ValueError(f"similarity summary: {analysis_set!r}/{model!r} stage {stage} {problem}")
    out = rows.groupby(["key", "group"], sort=False).agg(
        mean=("value", "mean"),
        low=("value", "min"),
        high=("value", "max"),
        n_seeds=("value", "size"),
        se=("se", "mean"),
    )
    out = out.reset_index()
    out["key"] = pd.Categorical(out["key"], categories=keys, ordered=True)
    out["group"] = pd.Categorical(out["group"], categories=ordered_groups(rows["group"]), ordered=True)
    return out.sort_values(["group", "key"]).reset_index(drop=True)


def _select_items(rows: pd.DataFrame, kind: str, items: Sequence, *, where: str) -> pd.DataFrame:
    """``rows`` of the listed classes or pairs, in the listed order; pairs re-keyed as listed."""
    present = set(rows["key"])
    rename = {}
    for item in items:
        wanted = [str(item)] if kind == "intra" else [pair_key(*item), pair_key(*reversed(item))]
        found = [k for k in wanted if k in present]
        if not found:
            raise ValueError(f"similarity summary: {where} has no {kind}-class similarity for {item!r}")
        rename[found[0]] = wanted[0]
    selected = rows[rows["key"].isin(list(rename))].copy()
    selected["key"] = selected["key"].map(rename)
    order = {key: i for i, key in enumerate(rename.values())}
    return selected.sort_values("key", key=lambda keys: keys.map(order), kind="stable")


def pooled_bts(bts: pd.DataFrame, *, analysis_set: str, model: str, kind: str) -> pd.DataFrame:
    """The pooled-seed BTS rows (one per finetuning dataset) for one analysis set, model and kind."""
    require_columns(bts, BTS_COLUMNS, where="BTS summary")
    rows = bts[
        (bts["analysis_set"] == analysis_set)
        & (bts["model"] == model)
        & (bts["kind"] == kind)
        & (bts["seed"] == "pooled")
    ]
    return rows.set_index("finetune_dataset")


def _bts_text(bts_rows: pd.DataFrame, groups: Sequence[str], rule: Significance) -> str:
    """Each finetuning dataset's pooled BTS with its p, marked by the run's rule, and the rule's legend."""
    parts = []
    for group in groups:
        if group == "pretrained":
            continue
        dataset = group.removeprefix("ft-")
        if dataset not in bts_rows.index:
            raise ValueError(f"BTS summary: no pooled row for finetune dataset {dataset!r}")
        r = bts_rows.loc[dataset]
        floor = float(r["pvalue_floor"]) if "pvalue_floor" in r else None
        parts.append(
            f"{dataset}: BTS ρ = {r['statistic']:.3f}{rule.stars(r[rule.column])} "
            f"({p_text(float(r['pvalue']), floor)}, {'' if rule.significant(r[rule.column]) else 'not '}significant)"
        )
    # a line each: two datasets' lines side by side are wider than a page once their names are long
    return "\n".join(parts) + (f"\n{rule.legend()}" if parts else "")


def key_label(key: str) -> str:
    """A class, or a pair ``p|q`` as ``p vs q``."""
    return key.replace("|", " vs ")


def change_by_seed(
    change: pd.DataFrame | None, *, analysis_set: str, model: str, kind: str, keys: Sequence[str]
) -> pd.DataFrame:
    """The rows of ``similarity_change.csv`` for these keys (either pair orientation, keyed as given).

    Empty when ``change`` is None or empty (the analysis ran no bootstrap). ValueError when a key is
    missing for a finetune dataset that has rows.
    """
    if change is None or change.empty:
        return pd.DataFrame(columns=SIMILARITY_CHANGE_COLUMNS)
    require_columns(change, SIMILARITY_CHANGE_COLUMNS, where="similarity change summary")
    rows = change[(change["analysis_set"] == analysis_set) & (change["model"] == model) & (change["kind"] == kind)]
    if rows.empty:
        return pd.DataFrame(columns=SIMILARITY_CHANGE_COLUMNS)
    items = list(keys) if kind == "intra" else [k.split("|") for k in keys]
    return _select_items(rows, kind, items, where=f"similarity change summary {analysis_set!r}/{model!r}")


def _offsets(n: int, width: float = 0.7) -> np.ndarray:
    return (np.arange(n) - (n - 1) / 2) * (width / max(n, 1))


def se_errorbar(ax, x, mean, se, *, marker: str, colour: str, **options):
    """Points at ``mean`` with their 95% interval from the standard error ``se``, as the similarity figures draw
    the pretrained network's; ``options`` go to ``ax.errorbar`` (a label)."""
    return ax.errorbar(
        x,
        mean,
        yerr=Z95 * se,
        fmt=marker,
        color=colour,
        ms=4,
        capsize=2,
        elinewidth=0.8,
        markeredgecolor="black",
        markeredgewidth=0.4,
        **options,
    )


def _similarity_figure(similarity, bts, change, *, analysis_set, model, kind, control_class, rule, lists) -> Figure:
    table = similarity_by_stage(
        similarity, analysis_set=analysis_set, model=model, kind=kind, items=(lists or {}).get(kind)
    )
    groups = list(table["group"].cat.categories)
    keys = list(table["key"].cat.categories)
    bts_line = _bts_text(pooled_bts(bts, analysis_set=analysis_set, model=model, kind=kind), groups, rule)
    deltas = change_by_seed(change, analysis_set=analysis_set, model=model, kind=kind, keys=keys)
    rows = similarity[
        (similarity["analysis_set"] == analysis_set) & (similarity["model"] == model) & (similarity["kind"] == kind)
    ]
    rows = _select_items(
        rows, kind, keys if kind == "intra" else [k.split("|") for k in keys], where=f"{analysis_set!r}/{model!r}"
    )
    x = np.arange(len(keys))
    shift = _offsets(len(groups))
    with paper_style():
        # a title line and a legend row for every finetuning dataset beyond the first
        extra = 2 * LINE_HEIGHT * max(0, len(groups) - 2)
        fig, (top, bottom) = paper_figure("double", 4.4 + extra, nrows=2, sharex=True, height_ratios=[1.1, 1])
        for i, group in enumerate(groups):
            colour, marker = STAGE_COLOURS[i % len(STAGE_COLOURS)], STAGE_MARKERS[i % len(STAGE_MARKERS)]
            part = table[table["group"] == group].set_index("key").loc[keys]
            n_seeds = int(part["n_seeds"].max())
            label = stage_words(group, None if group == "pretrained" else n_seeds)
            if group == "pretrained":
                se_errorbar(
                    top,
                    x + shift[i],
                    part["mean"],
                    part["se"],
                    marker=marker,
                    colour=colour,
                    label=f"{label} (95% interval from SE)",
                )
                continue
            dataset = group.removeprefix("ft-")
            seeds = rows[rows["finetune_dataset"] == dataset]
            seed_x = x[[keys.index(k) for k in seeds["key"]]] + shift[i]
            top.scatter(seed_x, seeds["value"], s=9, facecolor="none", edgecolor=colour, linewidth=0.7, zorder=3)
            top.hlines(
                part["mean"],
                x + shift[i] - 0.4 / len(groups),
                x + shift[i] + 0.4 / len(groups),
                color=colour,
                linewidth=1.6,
                label=f"{label}; circles: seeds",
            )
            mine = deltas[deltas["finetune_dataset"] == dataset]
            if not mine.empty:
                spread = np.linspace(-0.25, 0.25, int(mine["seed"].nunique()) + 2)[1:-1] / len(groups)
                seed_pos = {s: spread[j] for j, s in enumerate(dict.fromkeys(mine["seed"]))}
                dx = x[[keys.index(k) for k in mine["key"]]] + shift[i] + mine["seed"].map(seed_pos).to_numpy()
                bottom.errorbar(
                    dx,
                    mine["delta"],
                    yerr=[mine["delta"] - mine["ci_low"], mine["ci_high"] - mine["delta"]],
                    fmt=marker,
                    color=colour,
                    ms=3,
                    capsize=1.5,
                    elinewidth=0.8,
                    markeredgecolor="black",
                    markeredgewidth=0.3,
                    label=f"{dataset}: each seed, {float(mine['ci_level'].iloc[0]):.0%} paired bootstrap interval",
                )
                mean_delta = mine.groupby("key", sort=False)["delta"].mean().reindex(keys)
                bottom.hlines(
                    mean_delta,
                    x + shift[i] - 0.4 / len(groups),
                    x + shift[i] + 0.4 / len(groups),
                    color=colour,
                    linewidth=1.6,
                )
            else:
                pre = table[table["group"] == "pretrained"].set_index("key").loc[keys]
                bottom.scatter(
                    seed_x,
                    seeds["value"].to_numpy() - pre.loc[seeds["key"], "mean"].to_numpy(),
                    s=9,
                    facecolor="none",
                    edgecolor=colour,
                    linewidth=0.7,
                    label=f"{dataset}: each seed (no bootstrap intervals computed)",
                )
        for k, key in enumerate(keys):
            if control_class and control_class in key.split("|"):
                for ax in (top, bottom):
                    ax.axvspan(k - 0.45, k + 0.45, color="0.92", zorder=0, linewidth=0)
        bottom.axhline(0, color="black", linewidth=0.6)
        top.set_ylabel(SIMILARITY_LABEL)
        bottom.set_ylabel("change after finetuning")
        bottom.set_xticks(
            x,
            [key_label(k) for k in keys],
            rotation=35 if kind == "inter" or len(keys) > 8 else 0,
            ha="right" if kind == "inter" or len(keys) > 8 else "center",
        )
        bottom.set_xlim(-0.6, len(keys) - 0.4)
        # two columns fit a page for the pretrained network and one finetuning dataset of any name's length
        top.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncols=2 if len(groups) <= 2 else 1, borderaxespad=0.2)
        bottom.legend(loc="best", ncols=1)
        shaded = (
            f"; shaded: the {control_class} control"
            if control_class and any(control_class in k.split("|") for k in keys)
            else ""
        )
        words = "class" if kind == "intra" else "class pair"
        fig.suptitle(
            f"{model_label(model)}, analysis set {analysis_set}: {kind}-class similarity per {words}{shaded}"
            + (f"\n{bts_line}" if bts_line else "")
        )
    return fig


def _kind_figure(kind: str, doc: str) -> Callable[..., Figure]:
    """The public figure function of one similarity ``kind`` ("intra" or "inter"), documented by ``doc``."""

    def figure(
        similarity: pd.DataFrame,
        bts: pd.DataFrame,
        change: pd.DataFrame | None = None,
        *,
        analysis_set: str,
        model: str,
        alpha: float,
        adjust: str = "holm",
        control_class: str = "random",
        lists: Mapping[str, Sequence] | None = None,
    ) -> Figure:
        return _similarity_figure(
            similarity,
            bts,
            change,
            analysis_set=analysis_set,
            model=model,
            kind=kind,
            control_class=control_class,
            rule=Significance(alpha, adjust),
            lists=lists,
        )

    figure.__name__ = figure.__qualname__ = f"{kind}_figure"
    figure.__doc__ = doc
    return figure


intra_figure = _kind_figure(
    "intra",
    """Intra-class similarity per class before and after finetuning, and its change (paper Fig. 2); BTS in the
    title, marked by the run's significance rule (``alpha``, ``adjust``).""",
)
inter_figure = _kind_figure(
    "inter",
    "Inter-class similarity per configured pair before and after finetuning, and its change (paper Fig. 3).",
)


def rank_figure(
    similarity: pd.DataFrame,
    bts: pd.DataFrame,
    *,
    analysis_set: str,
    model: str,
    lists: Mapping[str, Sequence] | None = None,
) -> Figure:
    """Pretrained rank vs finetuned rank of each class (left) and pair (right): what BTS measures.

    BTS is Spearman's rho, i.e. the Pearson correlation of these ranks (average ranks for ties) with the
    finetuned similarity averaged over seeds; points on the diagonal keep their rank after finetuning.
    One point per (key, finetuning dataset), labelled inside the axes.
    """
    with paper_style():
        fig, axes = paper_figure("double", 3.9, ncols=2)
        for ax, kind in zip(axes, ("intra", "inter")):
            table = similarity_by_stage(
                similarity, analysis_set=analysis_set, model=model, kind=kind, items=(lists or {}).get(kind)
            )
            keys = list(table["key"].cat.categories)
            groups = list(table["group"].cat.categories)
            bts_rows = pooled_bts(bts, analysis_set=analysis_set, model=model, kind=kind)
            pre_rank = rankdata(table[table["group"] == "pretrained"].set_index("key").loc[keys, "mean"])
            n = len(keys)
            rhos = []
            for i, group in enumerate(groups[1:], start=1):
                ft_rank = rankdata(table[table["group"] == group].set_index("key").loc[keys, "mean"])
                dataset = group.removeprefix("ft-")
                if dataset in bts_rows.index:
                    rhos.append(
                        f"ρ = {bts_rows.loc[dataset, 'statistic']:.3f}" + (f" ({dataset})" if len(groups) > 2 else "")
                    )
                ax.scatter(
                    pre_rank,
                    ft_rank,
                    s=22,
                    color=STAGE_COLOURS[i % len(STAGE_COLOURS)],
                    marker=STAGE_MARKERS[i % len(STAGE_MARKERS)],
                    edgecolor="black",
                    linewidth=0.4,
                    label=f"finetuned on {dataset}",
                    zorder=3,
                )
                if i == 1:
                    for key, px, py in zip(keys, pre_rank, ft_rank):
                        right = px > (n + 1) / 2
                        ax.annotate(
                            key_label(key),
                            (px, py),
                            textcoords="offset points",
                            xytext=(-4 if right else 4, 0),
                            ha="right" if right else "left",
                            va="center",
                            fontsize=7,
                            annotation_clip=True,
                        )
            ax.plot([1, n], [1, n], color="black", linewidth=0.6, linestyle="--", label="same rank")
            ticks = np.arange(1, n + 1, max(1, n // 7))
            ax.set_xticks(ticks)
            ax.set_yticks(ticks)
            ax.set_xlim(0.5, n + 0.5)
            ax.set_ylim(0.5, n + 0.5)
            ax.set_xlabel("rank before finetuning (1 = least similar)")
            ax.set_ylabel("rank after finetuning (mean of seeds)")
            ax.set_title(
                "\n".join(
                    textwrap.wrap(
                        f"{kind}-class ({n} {'classes' if kind == 'intra' else 'pairs'}); BTS {', '.join(rhos)}", 48
                    )
                )
            )
            ax.set_aspect("equal")
            ax.grid(True, axis="both", alpha=0.3)
        # one row for up to two finetuning datasets; more (a mitigation overlay's arms) in two columns
        ncols = len(groups) if len(groups) <= 3 else 2
        fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=ncols)
        fig.suptitle(f"{model_label(model)}, analysis set {analysis_set}: similarity ranks before and after finetuning")
    return fig
