"""The link across levels in the report (results/summary/link.csv and link_correlation.csv, docs/formats.md): a
LaTeX table per finetuning dataset of each network's embedding d beside its predictions' bias, its rows for the
HTML report, and the figure of d against the predictions' contrast, one point per network with both intervals."""

from __future__ import annotations

import math
import textwrap

import pandas as pd

from biastransfer.report.formatting import (
    ADJUSTMENT_NAMES,
    Significance,
    adjusted_floor,
    estimate_cell,
    format_p,
    latex_escape,
    model_label,
    prediction_verdict,
    require_columns,
)
from biastransfer.report.latex import standalone_document, tabular
from biastransfer.report.style import STAGE_COLOURS, STAGE_MARKERS, paper_figure, paper_style
from biastransfer.stats.link import CORRELATION_COLUMNS, LINK_COLUMNS

#: The link table's columns the report shows: all but the directional and Zhao terms of the two objects.
LINK_REQUIRED = tuple(c for c in LINK_COLUMNS if not c.startswith(("directional_", "zhao_")))
#: The correlation table's columns the report reads.
CORRELATION_REQUIRED = tuple(c for c in CORRELATION_COLUMNS if c not in ("role", "prediction", "networks", "method"))


def _rows(table: pd.DataFrame, dataset: str) -> pd.DataFrame:
    require_columns(table, LINK_REQUIRED, where="link table")
    return table[table["dataset"].astype(str) == dataset].assign(seed=lambda f: f["seed"].astype(str))


def primary_verdicts(rows: pd.DataFrame, rule: Significance) -> pd.DataFrame:
    """Of link rows, the contrast's ``p`` and ``p_floor``, its ``p_adjusted`` within its network family and the
    ``verdict`` of the primary rows (the pooled contrast of each network family; "" for the exploratory rows)."""
    primary = rows["primary"].astype(bool)
    adjusted = rows[f"contrast_{rule.column}"].where(primary)
    verdicts = [
        prediction_verdict(float(c), float(p), rule) if keep else ""
        for c, p, keep in zip(rows["contrast"], adjusted, primary)
    ]
    return pd.DataFrame(
        {
            "p": rows["contrast_pvalue"],
            "p_floor": rows["contrast_pvalue_floor"],
            "p_adjusted": adjusted,
            "verdict": verdicts,
        },
        index=rows.index,
    )


def link_frame(table: pd.DataFrame, dataset: str, alpha: float, adjust: str) -> pd.DataFrame:
    """The table's rows: per linked iEAT and network, d (pretrained, its own, the change), the contrast, its p,
    its p adjusted within its network family (``adjust``) and the verdict at ``alpha`` of the primary rows (the
    other rows' verdict is empty: they are exploratory)."""
    rows = _rows(table, dataset)
    shown = [c for c in LINK_REQUIRED if not c.startswith("contrast_pvalue") and c != "primary"]
    return pd.concat([rows[shown], primary_verdicts(rows, Significance(alpha, adjust))], axis=1).reset_index(drop=True)


def _cell(row, name: str, low: str, high: str) -> str:
    return estimate_cell(row[name], row[low], row[high], 2)


def correlation_words(row, short: bool = False) -> str:
    """``Spearman rho = 0.32 [-0.93, 0.98] over 4 networks: too few networks to tell (...)`` (``short``: the
    verdict without its parenthesis)."""
    bounds = "" if math.isnan(float(row["ci_low"])) else f" [{row['ci_low']:.2f}, {row['ci_high']:.2f}]"
    rho = "undefined" if math.isnan(float(row["estimate"])) else f"{row['estimate']:.2f}"
    verdict = str(row["verdict"]).split(" (")[0] if short else row["verdict"]
    return f"Spearman rho = {rho}{bounds} over {int(row['n'])} networks: {verdict}"


def _correlation(correlation: pd.DataFrame, row, embedding: str = "d"):
    hit = correlation[
        (correlation["analysis_set"].astype(str) == str(row["analysis_set"]))
        & (correlation["test"].astype(str) == str(row["test"]))
        & (correlation["dataset"].astype(str) == str(row["dataset"]))
        & (correlation["embedding"] == embedding)
    ]
    return None if hit.empty else hit.iloc[0]


def link_latex(table: pd.DataFrame, correlation: pd.DataFrame, dataset: str, alpha: float, adjust: str) -> str:
    """A LaTeX document: per linked iEAT, each network's d (pretrained, its own, the change) and the shift of the
    two objects and its contrast, each with its interval, the contrast's adjusted p and the verdict of the
    primary rows; the rank correlations in the caption."""
    require_columns(correlation, CORRELATION_REQUIRED, where="link correlation")
    rows = _rows(table, dataset)
    rule = Significance(alpha, adjust)
    judged = primary_verdicts(rows, rule)
    header = [
        "iEAT",
        "Network",
        "Seed",
        "$d$ pretrained",
        "$d$",
        "$\\Delta d$",
        "shift first",
        "shift second",
        "contrast",
        "adj. $p$",
        "verdict",
    ]
    body, notes = [], []
    for (analysis_set, test), part in rows.groupby(["analysis_set", "test"], sort=False):
        first = part.iloc[0]
        for index, row in part.iterrows():
            body.append(
                [
                    f"{latex_escape(analysis_set)}/{latex_escape(test)}",
                    f"{latex_escape(row['network'])} {latex_escape(model_label(row['model']))}",
                    latex_escape(row["seed"]),
                    _cell(row, "d_pretrained", "d_pretrained_low", "d_pretrained_high"),
                    _cell(row, "d", "d_low", "d_high"),
                    _cell(row, "delta_d", "delta_low", "delta_high"),
                    _cell(row, "shift_first", "shift_first_low", "shift_first_high"),
                    _cell(row, "shift_second", "shift_second_low", "shift_second_high"),
                    _cell(row, "contrast", "contrast_low", "contrast_high"),
                    format_p(
                        judged.at[index, "p_adjusted"],
                        adjusted_floor(
                            row["contrast_pvalue"], row["contrast_pvalue_floor"], judged.at[index, "p_adjusted"]
                        ),
                    ),
                    judged.at[index, "verdict"],
                ]
            )
        found = _correlation(correlation, first)
        notes.append(
            f"{test}: {first['first']} and {first['second']} towards {first['attribute']}"
            + (f"; {correlation_words(found)}" if found is not None else "")
        )
    if not body:
        body.append(["\\multicolumn{11}{l}{no iEAT of this run has its objects among the dataset's tasks}"])
    table = tabular("lll" + "r" * 7 + "l", header, body)
    level = float(rows["level"].iloc[0]) if len(rows) else 0.95
    caption = (
        f"Each linked iEAT's effect size $d$ (pretrained, the network's own, and the change) beside its network's "
        f"predictions on the test split of {latex_escape(dataset)}: the shift of the first and second object "
        "towards the first attribute (how much more often, beyond the ground truth, the network predicts the object "
        "for that attribute's images than for the others) and their contrast (first minus second, positive: the "
        f"predictions act on the association $d > 0$ measures), each with its {level:.0%}".replace("%", "\\%")
        + " interval. The verdict reads the primary measure, the contrast pooled over seeds: amplifies (reduces) "
        f"when its bootstrap $p$, {ADJUSTMENT_NAMES[adjust]}-adjusted over the declared pairs of its network family, "
        f"is below $\\alpha={alpha:g}$ and the contrast above (below) 0; the per-seed rows are exploratory. "
        + latex_escape("; ".join(notes))
        + ". The correlation's interval is Fisher's z with Bonett and Wright's variance."
    )
    return standalone_document(table, caption)


def link_figure(table: pd.DataFrame, correlation: pd.DataFrame, dataset: str):
    """One panel per linked iEAT: each network's d against its predictions' contrast, both intervals as error
    bars, the rank correlation and its interval in the title."""
    require_columns(correlation, CORRELATION_REQUIRED, where="link correlation")
    rows = _rows(table, dataset)
    rows = rows[rows["seed"] != "pooled"]
    panels = list(rows.groupby(["analysis_set", "test"], sort=False))
    with paper_style():
        fig, axes = paper_figure(
            "double" if len(panels) > 1 else "single",
            2.6,
            ncols=max(1, min(len(panels), 2)),
            nrows=max(1, math.ceil(len(panels) / 2)),
            squeeze=False,
        )
        for ax, ((analysis_set, test), part) in zip(axes.flat, panels):
            for k, (network, net) in enumerate(part.groupby("network", sort=True)):
                ax.errorbar(
                    net["d"],
                    net["contrast"],
                    xerr=[net["d"] - net["d_low"], net["d_high"] - net["d"]],
                    yerr=[net["contrast"] - net["contrast_low"], net["contrast_high"] - net["contrast"]],
                    fmt=STAGE_MARKERS[k % len(STAGE_MARKERS)],
                    ms=3.5,
                    elinewidth=0.6,
                    capsize=1.5,
                    color=STAGE_COLOURS[(k + 1) % len(STAGE_COLOURS)],
                    label=network,
                )
            ax.axhline(0, color="grey", linewidth=0.5)
            ax.axvline(0, color="grey", linewidth=0.5)
            first = part.iloc[0]
            ax.set_xlabel("the network's iEAT d (embedding)")
            ax.set_ylabel(
                textwrap.fill(f"contrast: {first['first']} minus {first['second']} towards {first['attribute']}", 30)
            )
            found = _correlation(correlation, first)
            parts = [f"{analysis_set}/{test}", *([correlation_words(found, short=True)] if found is not None else [])]
            ax.set_title("\n".join(textwrap.fill(p, 46) for p in parts), fontsize=7)
            ax.legend(loc="best")
        if not panels:
            axes.flat[0].text(
                0.5,
                0.5,
                f"no iEAT has its objects among the tasks of {dataset}",
                ha="center",
                va="center",
                transform=axes.flat[0].transAxes,
                fontsize=7,
            )
        for ax in list(axes.flat)[max(len(panels), 1) :]:
            ax.axis("off")
        if not panels:
            axes.flat[0].axis("off")
    return fig
