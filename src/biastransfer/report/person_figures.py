"""The paper's Fig. 3 comparisons: how similar an object-with-a-person class is to the object alone,
for each person class, before and after finetuning (e.g. ``car_man vs car`` beside ``car_woman vs car``).

A composite class is named ``{object}_{person}`` where both ``object`` and ``person`` are classes of the
analysis set (``car_person_a`` = ``car`` + ``person_a``; ``car_man`` = ``car`` + ``man``).
"""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from biastransfer.report.figures import SIMILARITY_LABEL, se_errorbar, similarity_by_stage
from biastransfer.report.formatting import model_label
from biastransfer.report.style import OKABE_ITO, message_figure, paper_figure, paper_style, stage_words
from biastransfer.stats.results import pair_key

PERSON_COLOURS = (OKABE_ITO["blue"], OKABE_ITO["vermillion"], OKABE_ITO["bluish_green"], OKABE_ITO["reddish_purple"])
PERSON_MARKERS = ("o", "s", "^", "D")


def object_person_classes(classes) -> dict[str, list[tuple[str, str]]]:
    """``{object: [(composite class, person), ...]}`` for every object with at least two person classes."""
    names = list(dict.fromkeys(classes))
    found: dict[str, list[tuple[str, str]]] = {}
    for name in names:
        for obj in names:
            person = name.removeprefix(f"{obj}_") if name.startswith(f"{obj}_") else None
            if person and person in names and person != obj:
                found.setdefault(obj, []).append((name, person))
    return {obj: pairs for obj, pairs in found.items() if len(pairs) >= 2}


def person_pairs(similarity: pd.DataFrame, *, analysis_set: str, model: str) -> dict[str, list[tuple[str, str]]]:
    """The object+person comparisons of one analysis set and model: ``{object: [(composite, object), ...]}``."""
    rows = similarity[
        (similarity["analysis_set"] == analysis_set) & (similarity["model"] == model) & (similarity["kind"] == "intra")
    ]
    return {obj: [(c, obj) for c, _ in pairs] for obj, pairs in object_person_classes(rows["key"]).items()}


def _gap(part: pd.DataFrame, keys: list[str]) -> float:
    return float(part.loc[keys[0], "mean"] - part.loc[keys[1], "mean"])


def person_figure(similarity: pd.DataFrame, *, analysis_set: str, model: str) -> Figure:
    """One panel per object: the inter-class similarity of each ``{object}_{person}`` class with
    ``{object}``, pretrained (95% interval from its SE) and finetuned (seeds as circles, their mean a
    bar), lines joining each person's values across stages; the title gives the gap between the first
    two persons before and after. A figure that says so when the analysis set has no such classes."""
    comparisons = person_pairs(similarity, analysis_set=analysis_set, model=model)
    if not comparisons:
        return message_figure(f"Analysis set {analysis_set} has no\nobject+person classes ({{object}}_{{person}})")
    persons = list(dict.fromkeys(c.removeprefix(f"{obj}_") for obj, pairs in comparisons.items() for c, _ in pairs))
    handles = {}
    here = similarity[(similarity["analysis_set"] == analysis_set) & (similarity["model"] == model)]
    stages = 1 + here.loc[here["stage"] != "pretrained", "finetune_dataset"].nunique()
    many = stages > 4  # a mitigation overlay's arms: fewer panels per row, the stage names slanted
    ncols = min(3, len(comparisons), max(1, 9 // stages))
    nrows = -(-len(comparisons) // ncols)
    with paper_style():
        fig, axes = paper_figure("double", 0.4 + 2.3 * nrows, nrows=nrows, ncols=ncols, squeeze=False)
        for ax in axes.flat[len(comparisons) :]:
            ax.axis("off")
        for ax, (obj, pairs) in zip(axes.flat, comparisons.items()):
            table = similarity_by_stage(similarity, analysis_set=analysis_set, model=model, kind="inter", items=pairs)
            groups = list(table["group"].cat.categories)
            keys = [pair_key(*p) for p in pairs]
            offsets = (np.arange(len(keys)) - (len(keys) - 1) / 2) * 0.18
            gaps = []
            for j, key in enumerate(keys):
                person = pairs[j][0].removeprefix(f"{obj}_")
                k = persons.index(person)
                colour, marker = PERSON_COLOURS[k % len(PERSON_COLOURS)], PERSON_MARKERS[k % len(PERSON_MARKERS)]
                part = table[table["key"] == key].set_index("group").loc[groups]
                x = np.arange(len(groups)) + offsets[j]
                ax.plot(x, part["mean"], color=colour, linewidth=0.7, alpha=0.6)
                handles[person] = se_errorbar(
                    ax, x[:1], part["mean"].iloc[:1], part["se"].iloc[:1], marker=marker, colour=colour
                )
                ax.hlines(part["mean"].iloc[1:], x[1:] - 0.07, x[1:] + 0.07, color=colour, linewidth=1.6)
                seeds = similarity[
                    (similarity["analysis_set"] == analysis_set)
                    & (similarity["model"] == model)
                    & (similarity["kind"] == "inter")
                    & similarity["key"].isin([key, pair_key(*reversed(pairs[j]))])
                    & (similarity["stage"] != "pretrained")
                ]
                seed_x = [groups.index(f"ft-{d}") + offsets[j] for d in seeds["finetune_dataset"]]
                ax.scatter(seed_x, seeds["value"], s=9, facecolor="none", edgecolor=colour, linewidth=0.7, zorder=3)
            for group in groups:
                gaps.append(_gap(table[table["group"] == group].set_index("key"), keys))
            ax.set_xticks(
                range(len(groups)),
                ["\n".join(textwrap.wrap(stage_words(g), 16, break_long_words=False)) for g in groups],
                **({"rotation": 30, "ha": "right", "rotation_mode": "anchor"} if many else {}),
            )
            ax.set_xlim(-0.5, len(groups) - 0.5)
            ax.set_ylabel(f"similarity with {obj}")
            first, second = (k.split("|")[0].removeprefix(f"{obj}_") for k in keys[:2])
            ax.set_title(f"{obj}\ngap {first} − {second}:\n" + " → ".join(f"{g:+.3f}" for g in gaps))
        fig.legend(
            [handles[p] for p in persons],
            [f"the object with {p}" for p in persons],
            loc="outside lower center",
            ncols=len(persons),
        )
        fig.suptitle(
            f"{model_label(model)}, analysis set {analysis_set}: {SIMILARITY_LABEL} of each object+person class with the object\n"
            f"pretrained: 95% interval from SE; finetuned: circles are seeds, the bar their mean"
        )
    return fig
