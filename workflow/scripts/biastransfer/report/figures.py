"""Figures of a run's results in one style, laid out like the paper's Figures 2-3 and 6-17.

Each ``*_figure`` function takes summary tables (see ``docs/formats.md``) and returns a matplotlib
``Figure``; :func:`save_figure` writes it as PNG and PDF atomically. Colours are the Okabe-Ito
palette (distinguishable with the common colour-vision deficiencies); the heat map uses the
ColorBrewer ``PuOr`` diverging map, also colour-blind safe.

Bars: ``pretrained`` is one deterministic measurement; a finetuned bar is the mean over seeds and
its error bar spans the smallest to the largest seed (min-max, as in the paper's figures).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import TwoSlopeNorm  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from scipy.stats import rankdata  # noqa: E402

from biastransfer.stats.results import pair_key  # noqa: E402
from biastransfer.atomic import atomic_path  # noqa: E402
from biastransfer.report.formatting import ADJUSTMENTS, OPPOSITE_EFFECT, model_label, opposite_direction, ordered_groups, p_text, require_columns, stage_group, stars  # noqa: E402
from biastransfer.report.tables import ieat_by_stage  # noqa: E402
from biastransfer.report.style import OKABE_ITO, STAGE_COLOURS, STAGE_MARKERS  # noqa: E402,F401

STYLE = {
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.grid.axis": "y",
    "grid.alpha": 0.3,
    "legend.frameon": False,
    "pdf.fonttype": 42,
}
SIMILARITY_LABEL = "mean cosine similarity"
SIMILARITY_COLUMNS = ("analysis_set", "model", "stage", "finetune_dataset", "seed", "kind", "key", "value")
BTS_COLUMNS = ("analysis_set", "model", "finetune_dataset", "seed", "kind", "statistic", "pvalue")


def similarity_by_stage(
    similarity: pd.DataFrame, *, analysis_set: str, model: str, kind: str, items: Sequence | None = None
) -> pd.DataFrame:
    """Per (key, stage group): ``mean``, ``low``, ``high`` (min/max over seeds) and ``n_seeds``.

    ``items``: only these classes (intra) or pairs (inter, either orientation, keyed as given), in
    this order, as the BTS ranks them; default: every key in its order of first appearance.
    ValueError when the analysis set, model or kind has no rows, an item is missing, or a stage lacks
    or repeats a key.
    """
    require_columns(similarity, SIMILARITY_COLUMNS, where="similarity summary")
    if kind not in ("intra", "inter"):
        raise ValueError(f"kind must be 'intra' or 'inter', not {kind!r}")
    rows = similarity[(similarity["analysis_set"] == analysis_set) & (similarity["model"] == model) & (similarity["kind"] == kind)]
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
        mean=("value", "mean"), low=("value", "min"), high=("value", "max"), n_seeds=("value", "size")
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
    rows = bts[(bts["analysis_set"] == analysis_set) & (bts["model"] == model) & (bts["kind"] == kind) & (bts["seed"] == "pooled")]
    return rows.set_index("finetune_dataset")


def _bts_text(bts_rows: pd.DataFrame, groups: Sequence[str], adjust: str | None) -> str:
    parts = []
    for group in groups:
        if group == "pretrained":
            continue
        dataset = group.removeprefix("ft-")
        if dataset not in bts_rows.index:
            raise ValueError(f"BTS summary: no pooled row for finetune dataset {dataset!r}")
        r = bts_rows.loc[dataset]
        mark = stars(r[ADJUSTMENTS[adjust]]) if adjust else ""
        floor = float(r["pvalue_floor"]) if "pvalue_floor" in r else None
        parts.append(f"{group}: BTS ρ = {r['statistic']:.3f}{mark} ({p_text(float(r['pvalue']), floor)})")
    return "; ".join(parts)


def _is_control(key: str, control_class: str) -> bool:
    return control_class in key.split("|")


def _bar_figure(similarity, bts, *, analysis_set, model, kind, control_class, adjust, lists) -> Figure:
    items = (lists or {}).get(kind)
    table = similarity_by_stage(similarity, analysis_set=analysis_set, model=model, kind=kind, items=items)
    groups = list(table["group"].cat.categories)
    keys = list(table["key"].cat.categories)
    bts_line = _bts_text(pooled_bts(bts, analysis_set=analysis_set, model=model, kind=kind), groups, adjust)
    width = 0.8 / len(groups)
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(max(4.0, 0.45 * len(keys) * len(groups) + 1.5), 3.6), layout="constrained")
        x = np.arange(len(keys))
        for i, group in enumerate(groups):
            part = table[table["group"] == group].set_index("key").loc[keys]
            errors = None
            if group != "pretrained":
                errors = np.vstack([part["mean"] - part["low"], part["high"] - part["mean"]])
            bars = ax.bar(x + (i - (len(groups) - 1) / 2) * width, part["mean"], width, yerr=errors, capsize=2,
                          color=STAGE_COLOURS[i % len(STAGE_COLOURS)], edgecolor="black", linewidth=0.4,
                          error_kw={"elinewidth": 0.8}, label=group)  # fmt: skip
            for bar, key in zip(bars, keys):
                if _is_control(key, control_class):
                    bar.set_hatch("///")
        labels = [k.replace("|", " vs ") for k in keys]
        ax.set_xticks(x, labels, rotation=40, ha="right")
        ax.set_xlabel("class" if kind == "intra" else "class pair")
        ax.set_ylabel(SIMILARITY_LABEL)
        ax.axhline(0, color="black", linewidth=0.6)
        title = f"{model_label(model)} on analysis set {analysis_set}: {kind}-class similarity"
        ax.set_title(f"{title}\n{bts_line}" if bts_line else title)
        handles, names = ax.get_legend_handles_labels()
        if any(_is_control(k, control_class) for k in keys):
            handles.append(Patch(facecolor="white", edgecolor="black", hatch="///"))
            names.append(f"{control_class} control")
        ax.legend(handles, names, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8,
                  title="error bars: min-max over seeds", title_fontsize=7)  # fmt: skip
    return fig


def intra_figure(similarity: pd.DataFrame, bts: pd.DataFrame, *, analysis_set: str, model: str,
                 control_class: str = "random", adjust: str | None = "holm",
                 lists: Mapping[str, Sequence] | None = None) -> Figure:  # fmt: skip
    """Intra-class similarity per class, pretrained vs finetuned (paper Fig. 2); BTS in the title.

    One bar per (class, stage group); hatched bars are the random-image control.
    """
    return _bar_figure(similarity, bts, analysis_set=analysis_set, model=model, kind="intra", control_class=control_class, adjust=adjust, lists=lists)


def inter_figure(similarity: pd.DataFrame, bts: pd.DataFrame, *, analysis_set: str, model: str,
                 control_class: str = "random", adjust: str | None = "holm",
                 lists: Mapping[str, Sequence] | None = None) -> Figure:  # fmt: skip
    """Inter-class similarity per configured pair, pretrained vs finetuned (paper Fig. 3); BTS in the title.

    One bar per (pair, stage group); hatched bars are pairs with the random-image control class.
    """
    return _bar_figure(similarity, bts, analysis_set=analysis_set, model=model, kind="inter", control_class=control_class, adjust=adjust, lists=lists)


def rank_figure(similarity: pd.DataFrame, bts: pd.DataFrame, *, analysis_set: str, model: str,
                lists: Mapping[str, Sequence] | None = None) -> Figure:  # fmt: skip
    """Pretrained rank vs finetuned rank of each class (left) and pair (right): what BTS measures.

    BTS is Spearman's rho, i.e. the Pearson correlation of these ranks (average ranks for ties) with the
    finetuned similarity averaged over seeds; points on the diagonal keep their rank after finetuning.
    One point per (key, finetuning dataset).
    """
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(7.6, 3.8), layout="constrained")
        for ax, kind in zip(axes, ("intra", "inter")):
            table = similarity_by_stage(similarity, analysis_set=analysis_set, model=model, kind=kind, items=(lists or {}).get(kind))
            keys = list(table["key"].cat.categories)
            groups = list(table["group"].cat.categories)
            bts_rows = pooled_bts(bts, analysis_set=analysis_set, model=model, kind=kind)
            pre_rank = rankdata(table[table["group"] == "pretrained"].set_index("key").loc[keys, "mean"])
            for i, group in enumerate(groups[1:], start=1):
                ft_rank = rankdata(table[table["group"] == group].set_index("key").loc[keys, "mean"])
                dataset = group.removeprefix("ft-")
                label = group
                if dataset in bts_rows.index:
                    label += f" (BTS ρ = {bts_rows.loc[dataset, 'statistic']:.3f})"
                ax.scatter(pre_rank, ft_rank, s=28, color=STAGE_COLOURS[i % len(STAGE_COLOURS)],
                           marker=STAGE_MARKERS[i % len(STAGE_MARKERS)], edgecolor="black", linewidth=0.4,
                           label=label, zorder=3)  # fmt: skip
                for key, px, py in zip(keys, pre_rank, ft_rank):
                    ax.annotate(key.replace("|", " vs "), (px, py), textcoords="offset points", xytext=(3, 3), fontsize=6)
            ax.plot([1, len(keys)], [1, len(keys)], color="black", linewidth=0.6, linestyle="--", label="same rank")
            ax.set_xlabel("rank of pretrained similarity (1 = lowest)")
            ax.set_ylabel("rank of finetuned similarity (1 = lowest)")
            ax.set_title(f"{kind}-class ({len(keys)} {'classes' if kind == 'intra' else 'pairs'})")
            ax.set_aspect("equal", adjustable="datalim")
            ax.grid(True, axis="both", alpha=0.3)
            ax.legend(loc="upper left", fontsize=7)
        fig.suptitle(f"{model_label(model)} on analysis set {analysis_set}: ranks before vs after finetuning", fontsize=9)
    return fig


def ieat_columns(tests: pd.DataFrame) -> tuple[list[str], str]:
    """Column labels ("A vs B") of the heat map's tests and the title's words for their targets.

    Targets shared by every test go in the title; otherwise each label names its own X/Y. Labels are
    prefixed with the analysis set when there are several, and fall back to test names if they collide.
    """
    pairs = set(zip(tests["X"], tests["Y"]))
    shared = len(pairs) == 1
    several_sets = tests["analysis_set"].nunique() > 1
    columns = []
    for r in tests.itertuples(index=False):
        label = f"{r.A} vs {r.B}" if shared else f"{r.A} vs {r.B} ({r.X}/{r.Y})"
        columns.append(f"{r.analysis_set}: {label}" if several_sets else label)
    if len(set(columns)) < len(columns):
        columns = [f"{r.analysis_set}: {r.test}" if several_sets else r.test for r in tests.itertuples(index=False)]
    targets = "X vs Y = {} vs {}".format(*next(iter(pairs))) if shared else "X/Y as each column says"
    return columns, targets


def ieat_heatmap(ieat: pd.DataFrame, *, adjust: str = "holm") -> Figure:
    """iEAT effect sizes: one panel per stage group, rows = models, columns = concept pairs.

    A cell holds the effect size (mean over seeds for finetuned groups) with one star per level
    (0.05, 0.01, 0.001) that its adjusted p-value, the largest over seeds, is below, and a dagger
    when |d| >= 0.5 against a one-sided test's direction (which its p cannot detect). Blank cells:
    the test was not run for that model and stage.
    """
    if adjust not in ADJUSTMENTS:
        raise ValueError(f"adjust must be one of {sorted(ADJUSTMENTS)}, not {adjust!r}")
    agg = ieat_by_stage(ieat)
    groups = ordered_groups(agg["group"])
    models = list(dict.fromkeys(agg["model"]))
    tests = agg[["analysis_set", "test", "X", "Y", "A", "B"]].drop_duplicates(["analysis_set", "test"])
    columns, targets = ieat_columns(tests)
    limit = max(0.5, float(np.nanmax(np.abs(agg["effect_size"]))))
    norm = TwoSlopeNorm(vmin=-limit, vcenter=0.0, vmax=limit)
    cmap = matplotlib.colormaps["PuOr_r"].with_extremes(bad="#f0f0f0")
    index = agg.set_index(["analysis_set", "test", "model", "group"])
    with plt.rc_context({**STYLE, "axes.grid": False}):
        size = (1.5 + len(groups) * (0.75 * len(columns) + 0.8), 2.0 + 0.45 * len(models))
        fig, axes = plt.subplots(1, len(groups), figsize=size, squeeze=False, sharey=True, layout="constrained")
        for ax, group in zip(axes[0], groups):
            values = np.full((len(models), len(columns)), np.nan)
            for i, model in enumerate(models):
                for j, t in enumerate(tests.itertuples(index=False)):
                    key = (t.analysis_set, t.test, model, group)
                    if key in index.index:
                        r = index.loc[key]
                        values[i, j] = r["effect_size"]
                        flag = "†" if opposite_direction(r["effect_size"], r["alternative"]) else ""
                        ax.text(j, i, f"{r['effect_size']:.2f}{stars(r[ADJUSTMENTS[adjust]])}{flag}", ha="center", va="center", fontsize=7,
                                color="white" if abs(r["effect_size"]) > 0.6 * limit else "black")  # fmt: skip
            image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, norm=norm, aspect="auto")
            ax.set_xticks(range(len(columns)), columns, rotation=40, ha="right")
            ax.set_yticks(range(len(models)), [model_label(m) for m in models])
            ax.set_title(group)
        fig.colorbar(image, ax=axes[0].tolist(), label="iEAT effect size d (unitless)", shrink=0.9)
        fig.suptitle(f"iEAT effect sizes d, {targets}\n"
                     f"* / ** / ***: {adjust}-adjusted p < 0.05 / 0.01 / 0.001 (largest over seeds); "
                     f"†: |d| ≥ {OPPOSITE_EFFECT:g} opposite to the tested direction (see the two-sided p)", fontsize=8)  # fmt: skip
    return fig


CHANGE_COLUMNS = ("analysis_set", "model", "finetune_dataset", "seed", "test", "delta_d", "ci_low", "ci_high",
                  "pvalue", "pvalue_floor", "ci_level")  # fmt: skip


def change_figure(change: pd.DataFrame) -> Figure:
    """The change of every iEAT's d from pretrained to each finetuned seed, with paired bootstrap intervals.

    One row per (analysis set, model, finetune dataset, test, seed); the point is delta d, the bar its
    interval, and the label says the two-sided p (a bound at the bootstrap floor).
    """
    require_columns(change, CHANGE_COLUMNS, where="iEAT change summary")
    if change.empty:  # no iEATs configured, or analysis.ieat.bootstrap = 0
        with plt.rc_context(STYLE):
            fig, ax = plt.subplots(figsize=(5, 1.5), layout="constrained")
            ax.axis("off")
            ax.text(0.5, 0.5, "No iEAT changes: no iEATs configured, or analysis.ieat.bootstrap is 0", ha="center", va="center")
        return fig
    rows = change.reset_index(drop=True)
    labels = [f"{r.analysis_set}/{model_label(r.model)} ft-{r.finetune_dataset} seed {r.seed}: {r.test}" for r in rows.itertuples()]
    y = np.arange(len(rows))[::-1]
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7.5, 1.2 + 0.32 * len(rows)), layout="constrained")
        ax.axvline(0, color="0.5", lw=0.8)
        ax.errorbar(rows["delta_d"], y, xerr=[rows["delta_d"] - rows["ci_low"], rows["ci_high"] - rows["delta_d"]],
                    fmt="o", color="#5e3c99", ecolor="#b2abd2", capsize=2, ms=4)  # fmt: skip
        for yi, r in zip(y, rows.itertuples()):
            ax.annotate(p_text(float(r.pvalue), float(r.pvalue_floor)), (r.ci_high, yi), xytext=(4, 0),
                        textcoords="offset points", va="center", fontsize=6)  # fmt: skip
        ax.set_yticks(y, labels, fontsize=7)
        ax.set_xlabel("change of the iEAT effect size, d(finetuned) − d(pretrained) (unitless)")
        level = float(rows["ci_level"].iloc[0])
        ax.set_title(f"What finetuning changed: same images, paired bootstrap {level:.0%} intervals and two-sided p", fontsize=8)
    return fig


def save_figure(fig: Figure, stem: str | os.PathLike, *, dpi: int = 200) -> tuple[Path, Path]:
    """Write ``stem.png`` and ``stem.pdf`` atomically (no timestamps in the PDF); close the figure."""
    stem = Path(stem)
    paths = []
    for fmt, metadata in (("png", {"Software": None}), ("pdf", {"CreationDate": None, "Creator": None, "Producer": None})):
        path = stem.with_name(f"{stem.name}.{fmt}")
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=fmt, dpi=dpi, metadata=metadata, bbox_inches="tight")
        paths.append(path)
    plt.close(fig)
    return paths[0], paths[1]
