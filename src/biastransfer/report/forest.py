"""The iEAT forest plot: every test's effect size d with its bootstrap interval, one row per network (the
pretrained network, each finetuned seed and the network trained from scratch on the target data alone).

Colour names the kind of network (and its dataset), the marker its seed; a filled marker is significant by
the run's significance rule (:class:`~biastransfer.report.formatting.Significance`), a hollow one is not.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from biastransfer.report.formatting import ADJUSTMENT_NAMES, Significance, model_label, require_columns
from biastransfer.report.style import (
    OKABE_ITO,
    PRETRAINED_MARKER,
    network_colour,
    paper_figure,
    paper_style,
    seed_marker,
    stage_words,
)
from biastransfer.report.tables import IEAT_COLUMNS
from biastransfer.stages import PRETRAINED, parse_stage, stage_kind

#: Colours of the networks trained from scratch, by the position of their dataset.
SCRATCH_COLOURS = (OKABE_ITO["vermillion"], OKABE_ITO["reddish_purple"], OKABE_ITO["sky_blue"], OKABE_ITO["black"])

FOREST_COLUMNS = (*IEAT_COLUMNS, "ci_level")
#: Characters per line of a test's heading (longer ones wrap, to keep the figure a page wide).
HEADING_WIDTH = 48


def _networks(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per network (``stage``): its ``colour``, ``marker``, legend ``words`` and ``short`` row label, in
    plot order (pretrained, then finetuned by dataset and seed, then scratch by dataset and seed)."""
    stages = list(dict.fromkeys(rows["stage"]))
    parsed = {s: parse_stage(s) for s in stages}
    kinds = {s: stage_kind(s) for s in stages}
    rank = {PRETRAINED: 0, "finetuned": 1, "scratch": 2}
    stages.sort(key=lambda s: (rank[kinds[s]], parsed[s][0] or "", parsed[s][1] or 0))
    finetuned = list(dict.fromkeys(parsed[s][0] for s in stages if kinds[s] == "finetuned"))
    scratch = list(dict.fromkeys(parsed[s][0] for s in stages if kinds[s] == "scratch"))
    seeds = sorted({parsed[s][1] for s in stages if kinds[s] != PRETRAINED})
    named = {d: f" ({d})" for d in {*finetuned, *scratch}} if len({*finetuned, *scratch}) > 1 else {}
    table = []
    for s in stages:
        dataset, seed = parsed[s]
        if kinds[s] == PRETRAINED:
            colour, marker = network_colour(None, finetuned), PRETRAINED_MARKER
        elif kinds[s] == "finetuned":
            colour, marker = network_colour(dataset, finetuned), seed_marker(seed, seeds)
        else:
            colour = SCRATCH_COLOURS[scratch.index(dataset) % len(SCRATCH_COLOURS)]
            marker = seed_marker(seed, seeds)
        short = kinds[s] if seed is None else f"{kinds[s]}{named.get(dataset, '')}, seed {seed}"
        table.append({"stage": s, "colour": colour, "marker": marker, "words": stage_words(s), "short": short})
    return pd.DataFrame(table)


def _block_title(block: pd.Series, several_sets: bool, several_models: bool) -> str:
    title = f"{block['A']} vs {block['B']} ({block['X']}/{block['Y']})"
    if several_sets:
        title = f"{block['analysis_set']}: {title}"
    if several_models:
        title = f"{title}, {model_label(block['model'])}"
    return title


def forest_figure(
    ieat: pd.DataFrame, scratch: pd.DataFrame | None = None, *, alpha: float, adjust: str = "holm"
) -> Figure:
    """d with its bootstrap interval for every iEAT (analysis set, test, model) and network, each test's
    networks under a bold heading row: the pretrained network, each finetuned seed and, given ``scratch``
    (``results/summary/ieat_scratch.csv``), each network trained from scratch.

    Colour: the kind of network and its dataset; marker: its seed (the legend names each network); filled:
    adjusted p < ``alpha`` (significant), hollow: not significant. A vertical line marks d = 0; a network
    whose interval could not be estimated has its point alone, one whose d could not, the words instead.
    """
    rule = Significance(alpha, adjust)
    require_columns(ieat, FOREST_COLUMNS, where="iEAT summary")
    if scratch is not None:
        require_columns(scratch, FOREST_COLUMNS, where="scratch iEAT summary")
    rows = pd.concat([ieat, scratch], ignore_index=True) if scratch is not None else ieat.reset_index(drop=True)
    if rows.empty:
        raise ValueError("iEAT summary: no rows")
    networks = _networks(rows).set_index("stage")
    order = {s: i for i, s in enumerate(networks.index)}
    keys = ["analysis_set", "test", "model"]
    blocks = rows.drop_duplicates(keys)[[*keys, "A", "B", "X", "Y"]]
    first = {k: {v: i for i, v in enumerate(dict.fromkeys(rows[k]))} for k in keys}
    blocks = blocks.sort_values(
        keys, key=lambda col: col.map(first[col.name]), kind="stable"
    )  # a test's models together
    several_sets, several_models = rows["analysis_set"].nunique() > 1, rows["model"].nunique() > 1
    labels, y = [], 0
    placed = []  # (y, row) of every point
    for block in blocks.itertuples(index=False):
        block = pd.Series(block._asdict())
        title = textwrap.wrap(_block_title(block, several_sets, several_models), HEADING_WIDTH, break_long_words=False)
        labels.append((y + (len(title) - 1) / 2, "\n".join(title), True))  # a long heading takes a row per line
        y += len(title)
        members = rows[(rows[keys] == block[keys]).all(axis=1)]
        for _, row in members.sort_values("stage", key=lambda s: s.map(order), kind="stable").iterrows():
            labels.append((y, networks.loc[row["stage"], "short"], False))
            placed.append((y, row))
            y += 1
    with paper_style(**{"axes.grid.axis": "x"}):
        legend_rows = -(-(len(networks) + 2) // 2)
        fig, ax = paper_figure("double", 0.9 + 0.13 * y + 0.15 * legend_rows)
        ax.axvline(0, color="0.4", lw=0.8, zorder=1)
        for yi, row in placed:
            net = networks.loc[row["stage"]]
            gid = f"{row['analysis_set']}/{row['test']}/{row['model']}/{row['stage']}"
            d, low, high = (float(row[c]) for c in ("effect_size", "ci_low", "ci_high"))
            if np.isfinite(low) and np.isfinite(high):  # drawn apart from the point: d may lie outside it
                ax.plot([low, high], [yi, yi], color=net["colour"], marker="|", ms=4, zorder=2, gid=f"{gid}/interval")
            if not np.isfinite(d):  # sets too small for d (the summary's not_estimable says why)
                ax.annotate("d not estimable", (0, yi), xytext=(4, 0), textcoords="offset points", va="center")
            significant = rule.significant(float(row[rule.column]))
            ax.plot(
                [d],
                [yi],
                ls="none",
                marker=net["marker"],
                ms=4,
                mew=0.9,
                color=net["colour"],
                mfc=net["colour"] if significant else "white",
                zorder=3,
                gid=gid,
            )
        ax.set_yticks([t[0] for t in labels], [t[1] for t in labels])
        for tick, (_, _, heading) in zip(ax.get_yticklabels(), labels):
            tick.set_fontweight("bold" if heading else "normal")
        ax.set_ylim(y - 0.5, -0.5)  # first test on top
        ax.tick_params(axis="y", length=0)
        level = float(rows["ci_level"].dropna().iloc[0]) if rows["ci_level"].notna().any() else float("nan")
        ax.set_xlabel(f"iEAT effect size d, {level:.0%} bootstrap interval")
        words = ADJUSTMENT_NAMES[rule.adjust].replace("--", "-")
        handles = [
            Line2D([], [], ls="none", marker=net.marker, color=net.colour, mfc=net.colour, ms=4, label=net.words)
            for net in networks.itertuples()
        ]
        handles += [
            Line2D(
                [],
                [],
                ls="none",
                marker="o",
                color="0.3",
                mfc="0.3",
                ms=4,
                label=f"filled: significant ({words}-adjusted p < {alpha:g})",
            ),
            Line2D([], [], ls="none", marker="o", color="0.3", mfc="white", ms=4, label="hollow: not significant"),
        ]
        fig.legend(handles=handles, loc="outside lower center", ncols=2)
        named = [] if several_models else [model_label(rows["model"].iloc[0])]
        named += [] if several_sets else [f"analysis set {rows['analysis_set'].iloc[0]}"]
        fig.suptitle(
            "\n".join(
                textwrap.wrap(
                    f"{', '.join(named) + ': ' if named else ''}iEAT effect sizes d of every network with their "
                    "bootstrap intervals; line: d = 0",
                    100,
                )
            )
        )
    return fig
