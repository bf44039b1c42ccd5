"""LaTeX tables (booktabs) of a run's results, laid out like the paper's Tables 2-9.

Every ``*_latex`` function returns a document (``article`` + ``booktabs``) that compiles alone with ``pdflatex``;
:func:`~biastransfer.report.latex.tabular_of` pulls its ``tabular`` out. The per-stage helpers (:func:`read_summary`, :func:`stage_group`,
:func:`ieat_by_stage`) serve ``figures``, ``headline`` and ``compare`` too.

Seeds: finetuned rows are grouped by finetuning dataset (``ft-{dataset}``), the scratch reference's by
its training dataset (``scratch-{dataset}``: the target data alone). An iEAT effect size is the mean over
seeds; its p-values are the largest over seeds, so a mark means "significant in every seed", and over
several seeds its "interval" is the range of the seeds' intervals (never called a CI). Beside d: its numerator (the raw association, the mean difference of
the scores s) and denominator (their pooled SD), and where it is not significant the smallest |d| the
test detects with 80% power at its set sizes. BTS rows use the ``pooled`` seed (finetuned similarities
averaged over seeds first, as the paper does). Each table is one family of the multiple-comparison
adjustment (rules/analysis.smk, summarise); marks follow the run's one rule (formatting.Significance).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from biastransfer.report.formatting import (
    ADJUSTMENT_NAMES,
    ADJUSTMENTS,
    OPPOSITE_EFFECT,
    Significance,
    adjusted_floor,
    format_interval,
    format_number,
    format_p,
    format_spread,
    latex_escape,
    model_label,
    opposite_direction,
    ordered_groups,
    require_columns,
    stage_group,
)
from biastransfer.report.latex import standalone_document, table_rows, tabular

IEAT_COLUMNS = (
    "analysis_set",
    "model",
    "stage",
    "finetune_dataset",
    "seed",
    "test",
    "X",
    "Y",
    "A",
    "B",
    "effect_size",
    "ci_low",
    "ci_high",
    "pvalue",
    "pvalue_two_sided",
    "pvalue_floor",
    "alternative",
    "pvalue_holm",
    "pvalue_bh",
)
#: What the iEAT tables show beside d (results/ieat/*.csv carry them): its numerator and denominator, and the
#: smallest |d| the test detects at its set sizes with this power.
IEAT_PARTS = ("mean_difference", "pooled_sd", "detectable_d", "detectable_power")
#: How ieat_by_stage combines each part over seeds.
_PART_AGGREGATES = {"mean_difference": "mean", "pooled_sd": "mean", "detectable_d": "max", "detectable_power": "first"}


def ieat_by_stage(ieat: pd.DataFrame, significance: Significance | None = None) -> pd.DataFrame:
    """One row per (analysis set, model, stage group, test): mean effect size, largest p over seeds.

    Columns: the keys, ``X, Y, A, B``, ``alternative``, ``effect_size`` (mean), ``effect_min``,
    ``effect_max``, ``ci_low`` (lowest), ``ci_high`` (highest), ``pvalue``, ``pvalue_two_sided``,
    ``pvalue_floor``, ``pvalue_holm``, ``pvalue_bh`` (largest over seeds), ``n_seeds`` and, where the
    summary has them, the :data:`IEAT_PARTS` (numerator and SD: means over seeds; detectable |d|: the
    largest); with a ``significance`` rule, ``n_significant`` (seeds significant by it). In input order.
    """
    require_columns(ieat, IEAT_COLUMNS, where="iEAT summary")
    if ieat.empty:
        raise ValueError("iEAT summary: no rows")
    frame = ieat.copy()
    frame["group"] = [stage_group(s, f) for s, f in zip(frame["stage"], frame["finetune_dataset"])]
    keys = ["analysis_set", "model", "group", "test", "X", "Y", "A", "B", "alternative"]
    if significance is not None:
        frame["_significant"] = frame[significance.column].map(significance.significant)
    out = frame.groupby(keys, sort=False).agg(
        effect_size=("effect_size", "mean"),
        effect_min=("effect_size", "min"),
        effect_max=("effect_size", "max"),
        ci_low=("ci_low", "min"),
        ci_high=("ci_high", "max"),
        pvalue=("pvalue", "max"),
        pvalue_two_sided=("pvalue_two_sided", "max"),
        pvalue_floor=("pvalue_floor", "max"),
        pvalue_holm=("pvalue_holm", "max"),
        pvalue_bh=("pvalue_bh", "max"),
        n_seeds=("seed", "size"),
        **{part: (part, how) for part, how in _PART_AGGREGATES.items() if part in frame},
        **({"n_significant": ("_significant", "sum")} if significance is not None else {}),
    )
    return out.reset_index()


def _subset(frame: pd.DataFrame, where: str, **equal: str) -> pd.DataFrame:
    mask = np.ones(len(frame), dtype=bool)
    for col, value in equal.items():
        mask &= (frame[col] == value).to_numpy()
    out = frame[mask]
    if out.empty:
        found = ", ".join(f"{c}={sorted(frame[c].unique().tolist())}" for c in equal)
        wanted = ", ".join(f"{c}={v!r}" for c, v in equal.items())
        raise ValueError(f"{where}: no rows with {wanted} (present: {found})")
    return out


def analysis_set_latex(stats: pd.DataFrame, analysis_set: str) -> str:
    """Classes and image counts of one analysis set (paper Tables 5/6)."""
    require_columns(stats, ("analysis_set", "class", "n"), where="analysis-set statistics")
    rows = _subset(stats, "analysis-set statistics", analysis_set=analysis_set)
    if rows["class"].duplicated().any():
        dup = rows.loc[rows["class"].duplicated(), "class"].iloc[0]
        raise ValueError(f"analysis-set statistics: class {dup!r} listed twice for {analysis_set!r}")
    body = "\\begin{tabular}{lr}\n\\toprule\nClass & $n$ \\\\\n\\midrule\n"
    body += table_rows((latex_escape(c), f"{int(n)}") for c, n in zip(rows["class"], rows["n"]))
    body += f"\\midrule\nTotal & {int(rows['n'].sum())} \\\\\n\\bottomrule\n\\end{{tabular}}\n"
    caption = f"Analysis set \\texttt{{{latex_escape(analysis_set)}}}: classes and number of images $n$."
    return standalone_document(body, caption)


ALTERNATIVE_WORDS = {"greater": "one-sided", "less": "one-sided (less)", "two-sided": "two-sided"}
METHOD_WORDS = {
    "permutation": "Monte Carlo permutation",
    "exact": "exact permutation",
    "normal": "normal-approximation",
}


def ieat_pvalue_words(rows: pd.DataFrame) -> str:
    """How the table's iEAT p-values were computed, from its ``alternative`` and ``method`` columns."""
    require_columns(rows, ("alternative", "method"), where="iEAT summary")
    alternatives = "/".join(ALTERNATIVE_WORDS.get(v, v) for v in sorted(set(rows["alternative"])))
    methods = "/".join(METHOD_WORDS.get(v, v) for v in sorted(set(rows["method"])))
    return f"{alternatives} {methods} p-value"


def ci_words(rows: pd.DataFrame) -> str:
    """``95\\%`` (or the levels found) from a table's ``ci_level`` column."""
    levels = sorted(set(rows["ci_level"].dropna())) if "ci_level" in rows else []
    return "/".join(f"{100 * level:g}\\%" for level in levels) or "a"


def with_scratch(ieat: pd.DataFrame, scratch: pd.DataFrame | None) -> pd.DataFrame:
    """The iEAT summary with the scratch reference's rows (``results/summary/ieat_scratch.csv``) appended."""
    if scratch is None or scratch.empty:
        return ieat
    require_columns(scratch, IEAT_COLUMNS + IEAT_PARTS, where="scratch iEAT summary")
    return pd.concat([ieat, scratch], ignore_index=True)


def _several(agg: pd.DataFrame, group: str) -> bool:
    """Whether any row of a stage group has more than one seed (its interval is then a range over seeds)."""
    return bool((agg.loc[agg["group"] == group, "n_seeds"] > 1).any())


def _sig(x: float) -> str:
    """A number with three significant digits as LaTeX math (``--`` for NaN)."""
    return "--" if x is None or math.isnan(x) else f"${x:.3g}$"


def _detectable(d: float) -> str:
    return "$\\infty$" if math.isinf(d) else _sig(d)


IEAT_CELLS = 8  # columns per stage group: d, CI, numerator, SD, p, p two-sided, adjusted p, detectable |d|


def ieat_latex(
    ieat: pd.DataFrame, analysis_set: str, *, alpha: float, adjust: str = "holm", scratch: pd.DataFrame | None = None
) -> str:
    """iEAT effect sizes and p-values, pretrained vs each finetuning dataset (paper Tables 2/9), and the
    scratch reference network (the target data alone) where ``scratch`` has its rows."""
    rule = Significance(alpha, adjust)
    subset = _subset(with_scratch(ieat, scratch), "iEAT summary", analysis_set=analysis_set)
    require_columns(subset, IEAT_PARTS, where="iEAT summary")
    p_words = ieat_pvalue_words(subset)
    agg = ieat_by_stage(subset)
    groups = ordered_groups(agg["group"])
    k, adj = IEAT_CELLS, ADJUSTMENT_NAMES[adjust][:4]
    header1 = ["", "", ""] + [f"\\multicolumn{{{k}}}{{c}}{{{_group_title(g)}}}" for g in groups]
    rules = "".join(f"\\cmidrule(lr){{{4 + k * i}-{3 + k * (i + 1)}}}" for i in range(len(groups)))
    header2 = ["Model", "Concept A", "Concept B"]
    for group in groups:
        header2 += [
            "$d$",
            "CI range" if _several(agg, group) else "CI",
            "$\\Delta\\bar{s}$",
            "SD",
            "$p$",
            "$p_{2}$",
            f"$p_{{\\mathrm{{{adj}}}}}$",
            "$|d|_{80}$",
        ]
    body = f"\\begin{{tabular}}{{lll{'r' * k * len(groups)}}}\n\\toprule\n"
    body += table_rows([header1]).rstrip("\n") + f"\n{rules}\n" + table_rows([header2]) + "\\midrule\n"
    index = agg.set_index(["model", "X", "Y", "A", "B", "group"])
    tests = agg[["model", "X", "Y", "A", "B"]].drop_duplicates()
    previous_model = None
    cells = []
    for model, x, y, a, b in tests.itertuples(index=False):
        if previous_model is not None and model != previous_model:
            cells.append(None)
        row = [latex_escape(model_label(model)) if model != previous_model else "", latex_escape(a), latex_escape(b)]
        for group in groups:
            key = (model, x, y, a, b, group)
            if key in index.index:
                r = index.loc[key]
                mark = rule.stars(r[rule.column]) + (
                    "\\dagger" if opposite_direction(r["effect_size"], r["alternative"]) else ""
                )
                spread = format_spread(r["effect_min"], r["effect_max"]) if r["n_seeds"] > 1 else ""
                detectable = "" if rule.significant(r[rule.column]) else _detectable(r["detectable_d"])
                row += [
                    format_number(r["effect_size"], mark=mark) + spread,
                    format_interval(r["ci_low"], r["ci_high"]),
                    _sig(r["mean_difference"]),
                    _sig(r["pooled_sd"]),
                    format_p(r["pvalue"], r["pvalue_floor"]),
                    format_p(r["pvalue_two_sided"], r["pvalue_floor"]),
                    format_p(r[rule.column], adjusted_floor(r["pvalue"], r["pvalue_floor"], r[rule.column])),
                    detectable,
                ]
            else:
                row += ["--"] * k
        cells.append(row)
        previous_model = model
    body += "".join("\\addlinespace\n" if r is None else table_rows([r]) for r in cells)
    body += "\\bottomrule\n\\end{tabular}\n"
    targets = ", ".join(
        sorted({f"$X$={latex_escape(x)}, $Y$={latex_escape(y)}" for x, y in zip(tests["X"], tests["Y"])})
    )
    n_seeds = int(agg.loc[agg["group"] != "pretrained", "n_seeds"].max()) if len(groups) > 1 else 1
    power = float(agg["detectable_power"].iloc[0])
    scratch_words = (
        "Trained on a dataset alone: the scratch reference network (the architecture trained from random "
        "initialisation on the target data with the finetuning recipe), its p adjusted across its own rows. "
        if any(g.startswith("scratch-") for g in groups)
        else ""
    )
    caption = (
        f"iEAT on analysis set \\texttt{{{latex_escape(analysis_set)}}} ({targets}; attributes $A$, $B$ = concepts A, B). "
        f"$d$: effect size, $\\Delta\\bar{{s}}/\\mathrm{{SD}}$: the raw association $\\Delta\\bar{{s}}$ (mean $s$ over $X$ "
        f"minus over $Y$) over the pooled SD of $s$, so a change of $d$ can come from either; $p$: {p_words}; "
        f"$p_{{\\mathrm{{{adj}}}}}$: {ADJUSTMENT_NAMES[adjust]}-adjusted across the table. "
        f"Marks from the adjusted p: {rule.legend(latex=True)}. "
        f"CI: {ci_words(subset)} bootstrap interval of $d$ (images resampled within $X$, $Y$, $A$, $B$); "
        f"$p_{{2}}$: two-sided p-value. $|d|_{{80}}$, beside a result that is not significant: the smallest $|d|$ the "
        f"test detects with {100 * power:.0f}\\% power at these set sizes ($\\infty$: none), so not significant is not "
        f"no association. "
        f"$\\dagger$: $|d| \\geq {OPPOSITE_EFFECT:g}$ in the direction opposite to the one tested, which the "
        f"one-sided $p$ cannot detect (read $p_{{2}}$). A $p$ written $\\leq$ is at its method's floor (and its adjusted $p$ an upper bound). "
        f"{scratch_words}"
        f"Columns of several seeds: $d$, $\\Delta\\bar{{s}}$ and SD are means over up to {n_seeds} seed(s) (small: "
        f"the smallest to the largest $d$ of the seeds), p-values and $|d|_{{80}}$ the largest over seeds; CI range: "
        f"from the lowest to the highest bound of the seeds' intervals, a range over seeds, not a confidence interval."
    )
    return standalone_document(body, caption, landscape=len(groups) > 1)


BTS_PVALUE_WORDS = {
    "permutation": "permutation p-value (exact over all $n!$ orderings for $n \\leq 8$)",
    "asymptotic": "Student-t approximation (scipy), as in the paper",
}


CKA_REQUIRED = ("analysis_set", "model", "finetune_dataset", "network", "seed", "cka", "ci_low", "ci_high")


def pooled_cka(cka: pd.DataFrame | None, analysis_set: str, dataset: str) -> pd.DataFrame:
    """``model`` -> the pooled linear CKA of its finetuned networks (``cka``, ``cka_low``, ``cka_high``), of its
    scratch ones (``cka_scratch*``, where run) and the reading (``representation``) on one analysis set and
    finetuning dataset; empty without a CKA summary."""
    if cka is None:
        return pd.DataFrame()
    require_columns(cka, CKA_REQUIRED, where="CKA summary")
    rows = cka[
        (cka["analysis_set"] == analysis_set)
        & (cka["finetune_dataset"] == dataset)
        & (cka["seed"].astype(str) == "pooled")
    ]
    values = ["cka", "ci_low", "ci_high"]
    names = {"cka": "cka", "ci_low": "cka_low", "ci_high": "cka_high"}
    out = rows[rows["network"] == "finetuned"].set_index("model")[values].rename(columns=names)
    if "representation" in rows:
        out["representation"] = rows[rows["network"] == "finetuned"].set_index("model")["representation"]
    scratch = rows[rows["network"] == "scratch"].set_index("model")[values]
    if not scratch.empty:
        out = out.join(scratch.rename(columns={k: f"{v.replace('cka', 'cka_scratch')}" for k, v in names.items()}))
    return out


def bts_latex(
    bts: pd.DataFrame,
    analysis_set: str,
    dataset: str,
    *,
    alpha: float,
    adjust: str = "holm",
    cka: pd.DataFrame | None = None,
) -> str:
    """Bias transfer scores (Spearman rho) for intra- and inter-class similarities (Tables 3/4), with the linear
    CKA of the finetuned (and scratch) networks against the pretrained one beside them when ``cka`` (the CKA
    summary) is given."""
    rule = Significance(alpha, adjust)
    adj_col = rule.column
    require_columns(
        bts,
        (
            "analysis_set",
            "model",
            "finetune_dataset",
            "seed",
            "kind",
            "statistic",
            "ci_low",
            "ci_high",
            "ci_level",
            "pvalue",
            "pvalue_floor",
            "pvalue_method",
            "n",
            adj_col,
        ),
        where="BTS summary",
    )
    rows = _subset(bts, "BTS summary", analysis_set=analysis_set, finetune_dataset=dataset, seed="pooled")
    spread = _seed_spread(bts, analysis_set, dataset)
    kinds = [k for k in ("intra", "inter") if k in set(rows["kind"])]
    similarity = pooled_cka(cka, analysis_set, dataset)
    extra = [] if similarity.empty else ["CKA", "CI"] + (["scratch", "CI"] if "cka_scratch" in similarity else [])
    adj = ADJUSTMENT_NAMES[adjust][:4]
    header1 = [""] + [f"\\multicolumn{{5}}{{c}}{{{k.capitalize()}-class}}" for k in kinds]
    header1 += [f"\\multicolumn{{{len(extra)}}}{{c}}{{Linear CKA}}"] if extra else []
    rules = "".join(f"\\cmidrule(lr){{{2 + 5 * i}-{6 + 5 * i}}}" for i in range(len(kinds)))
    rules += f"\\cmidrule(lr){{{2 + 5 * len(kinds)}-{1 + 5 * len(kinds) + len(extra)}}}" if extra else ""
    header2 = ["Model"] + ["$r_{\\mathrm{BTS}}$", "CI", "$p$", f"$p_{{\\mathrm{{{adj}}}}}$", "$n$"] * len(kinds) + extra
    body = f"\\begin{{tabular}}{{l{'r' * (5 * len(kinds) + len(extra))}}}\n\\toprule\n"
    body += table_rows([header1]).rstrip("\n") + f"\n{rules}\n" + table_rows([header2]) + "\\midrule\n"
    index = rows.set_index(["model", "kind"])
    if index.index.duplicated().any():
        model, kind = index.index[index.index.duplicated()][0]
        raise ValueError(f"BTS summary: more than one pooled {kind} row for model {model!r}")
    cells = []
    for model in dict.fromkeys(rows["model"]):
        row = [latex_escape(model_label(model))]
        for kind in kinds:
            if (model, kind) in index.index:
                r = index.loc[(model, kind)]
                row += [
                    format_number(r["statistic"], mark=rule.stars(r[adj_col])) + spread.get((model, kind), ""),
                    format_interval(r["ci_low"], r["ci_high"]),
                    format_p(r["pvalue"], r["pvalue_floor"]),
                    format_p(r[adj_col], adjusted_floor(r["pvalue"], r["pvalue_floor"], r[adj_col])),
                    f"{int(r['n'])}",
                ]
            else:
                row += ["--"] * 5
        for prefix in ("cka", "cka_scratch")[: len(extra) // 2]:
            if model in similarity.index and np.isfinite(similarity.loc[model, prefix]):
                r = similarity.loc[model]
                row += [format_number(r[prefix]), format_interval(r[f"{prefix}_low"], r[f"{prefix}_high"])]
            else:
                row += ["--"] * 2
        cells.append(row)
    body += table_rows(cells) + "\\bottomrule\n\\end{tabular}\n"
    caption = (
        f"Bias transfer scores on analysis set \\texttt{{{latex_escape(analysis_set)}}} for models finetuned on "
        f"\\texttt{{{latex_escape(dataset)}}}: Spearman $r_{{\\mathrm{{BTS}}}}$ between pretrained and finetuned "
        f"similarities (finetuned similarities averaged over seeds first) over $n$ classes (intra) or pairs (inter), "
        f"small: the smallest to the largest $r_{{\\mathrm{{BTS}}}}$ of the single seeds (where there are several); "
        f"CI: {ci_words(rows)} bootstrap interval of $r_{{\\mathrm{{BTS}}}}$ (images resampled within classes, both "
        f"rankings recomputed on the same images); $p$: {BTS_PVALUE_WORDS.get(rows['pvalue_method'].iloc[0], rows['pvalue_method'].iloc[0])}, "
        f"two-sided; a $p$ written $\\leq$ is at its method's floor; "
        f"$p_{{\\mathrm{{{adj}}}}}$: {ADJUSTMENT_NAMES[adjust]}-adjusted across the table. Marks from the adjusted p: {rule.legend(latex=True)}."
    )
    if extra:
        caption += (
            " Linear CKA (Kornblith et al., 2019): how much of the pretrained embedding's linear structure the "
            "finetuned one keeps on the same images (1: all of it, up to a rotation and a scale; seeds averaged), "
            "with its jackknife interval over images"
            + (
                "; scratch: the same for the network trained on the target data alone, what any network of this "
                "architecture shares with the pretrained one. A high BTS with a CKA no higher than the scratch "
                "network's reads as a replaced representation, not as kept associations."
                if "cka_scratch" in similarity
                else "."
            )
        )
    return standalone_document(body, caption)


def _seed_spread(bts: pd.DataFrame, analysis_set: str, finetune_dataset: str) -> dict[tuple[str, str], str]:
    """``{(model, kind): range over the single seeds' BTS}`` where a model has two or more seeds."""
    single = bts[
        (bts["analysis_set"] == analysis_set)
        & (bts["finetune_dataset"] == finetune_dataset)
        & (bts["seed"] != "pooled")
    ]
    out = {}
    for (model, kind), part in single.groupby(["model", "kind"], sort=False):
        if len(part) > 1:
            out[(model, kind)] = format_spread(part["statistic"].min(), part["statistic"].max())
    return out


FINETUNE_COLUMNS = (
    "dataset",
    "model",
    "seed",
    "epoch_best",
    "metric_name",
    "metric_value",
    "epochs",
    "lr",
    "batch_size",
    "optimizer",
    "scheduler",
)


def finetune_summary(metrics: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, model, metric): mean, sample SD (ddof=1; NaN for one seed), seeds, and the settings.

    ValueError when the seeds of one dataset and model were finetuned with different settings.
    """
    require_columns(metrics, FINETUNE_COLUMNS, where="finetune metrics")
    if metrics.empty:
        raise ValueError("finetune metrics: no rows")
    bad = sorted(set(metrics["metric_name"]) - {"mAP", "micro_f1"})
    if bad:
        raise ValueError(f"finetune metrics: unknown metric_name {bad} (expected 'mAP' or 'micro_f1')")

    settings = ["epochs", "lr", "batch_size", "optimizer", "scheduler"]
    for (dataset, model), part in metrics.groupby(["dataset", "model"], sort=False):
        for col in settings:
            if part[col].nunique() > 1:
                raise ValueError(
                    f"finetune metrics: {dataset!r}/{model!r} seeds differ in {col}: {sorted(map(str, part[col].unique()))}"
                )
    out = metrics.groupby(["dataset", "model", "metric_name"], sort=False).agg(
        mean=("metric_value", "mean"),
        sd=("metric_value", lambda v: v.std(ddof=1) if len(v) > 1 else np.nan),
        n_seeds=("seed", "nunique"),
        **{col: (col, "first") for col in settings},
    )
    return out.reset_index()


def finetune_latex(metrics: pd.DataFrame, dataset: str) -> str:
    """Finetuning settings and validation metric, mean +- SD over seeds (paper Tables 7/8)."""
    summary = finetune_summary(_subset(metrics, "finetune metrics", dataset=dataset))
    metric_names = {"mAP": "mAP", "micro_f1": "Micro F1"}
    cells = []
    for r in summary.itertuples(index=False):
        value = f"${r.mean:.3f}$" if math.isnan(r.sd) else f"${r.mean:.3f} \\pm {r.sd:.3f}$"
        cells.append(
            [
                latex_escape(model_label(r.model)),
                f"{r.epochs:g}",
                f"{r.lr:g}",
                f"{r.batch_size:g}",
                latex_escape(r.optimizer),
                latex_escape(r.scheduler),
                latex_escape(metric_names[r.metric_name]),
                value,
                f"{r.n_seeds}",
            ]
        )
    head = ["Model", "Epochs", "Learning rate", "Batch", "Optimizer", "Scheduler", "Metric", "Value", "Seeds"]
    body = tabular("lrrrllllr", head, cells)
    caption = (
        f"Finetuning on \\texttt{{{latex_escape(dataset)}}}: settings and the validation metric at the best epoch, "
        "mean $\\pm$ sample standard deviation over seeds (no $\\pm$ for a single seed)."
    )
    return standalone_document(body, caption, landscape=True)


def _adjust_column(adjust: str) -> str:
    if adjust not in ADJUSTMENTS:
        raise ValueError(f"adjust must be one of {sorted(ADJUSTMENTS)}, not {adjust!r}")
    return ADJUSTMENTS[adjust]


def _group_title(group: str) -> str:
    if group == "pretrained":
        return "Pretrained"
    if group.startswith("scratch-"):
        return f"Trained on \\texttt{{{latex_escape(group.removeprefix('scratch-'))}}} alone (scratch)"
    return f"Finetuned on \\texttt{{{latex_escape(group.removeprefix('ft-'))}}}"


# The same tables as CSV (numbers, not LaTeX) for the HTML report and for downloads; columns follow
# report.html's conventions (X_low/X_high: an interval, X_min/X_max: the range over seeds).


def ieat_frame(
    ieat: pd.DataFrame, analysis_set: str, *, alpha: float, adjust: str = "holm", scratch: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The iEAT table's rows: per model, test and stage group (the scratch reference's too, where ``scratch``
    has its rows), mean d with its range over seeds; its numerator (``mean_difference``) and denominator
    (``pooled_sd``); the interval of one network (``ci_low``/``ci_high``) or, over several seeds, the range of
    the seeds' intervals (``ci_seeds_min``/``ci_seeds_max``); the verdict by the run's rule and, where not
    significant, the smallest detectable |d| (``detectable_d``)."""
    rule = Significance(alpha, adjust)
    subset = _subset(with_scratch(ieat, scratch), "iEAT summary", analysis_set=analysis_set)
    require_columns(subset, IEAT_PARTS, where="iEAT summary")
    agg = ieat_by_stage(subset, rule)
    several = agg["n_seeds"] > 1
    significant = agg[rule.column].map(rule.significant)  # in every seed
    return pd.DataFrame(
        {
            "model": agg["model"],
            "stage": agg["group"],
            "test": agg["test"],
            "X": agg["X"],
            "Y": agg["Y"],
            "A": agg["A"],
            "B": agg["B"],
            "alternative": agg["alternative"],
            "seeds": agg["n_seeds"],
            "d": agg["effect_size"],
            "d_min": agg["effect_min"].where(several),
            "d_max": agg["effect_max"].where(several),
            "mean_difference": agg["mean_difference"],
            "pooled_sd": agg["pooled_sd"],
            "ci_low": agg["ci_low"].mask(several),
            "ci_high": agg["ci_high"].mask(several),
            "ci_seeds_min": agg["ci_low"].where(several),
            "ci_seeds_max": agg["ci_high"].where(several),
            "p": agg["pvalue"],
            "p_two_sided": agg["pvalue_two_sided"],
            "p_floor": agg["pvalue_floor"],
            f"p_{adjust}": agg[rule.column],
            "verdict": [
                f"significant in {k} of {n} seeds" if n > 1 else ("significant" if hit else "not significant")
                for hit, k, n in zip(significant, agg["n_significant"], agg["n_seeds"])
            ],
            "detectable_d": agg["detectable_d"].mask(significant),
        }
    )


def bts_frame(
    bts: pd.DataFrame, analysis_set: str, dataset: str, *, adjust: str = "holm", cka: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The BTS table's rows (pooled over seeds) with the range of the single seeds' BTS, and each model's linear
    CKA (:func:`pooled_cka`) when ``cka`` is given."""
    rows = _subset(bts, "BTS summary", analysis_set=analysis_set, finetune_dataset=dataset, seed="pooled")
    single = bts[
        (bts["analysis_set"] == analysis_set) & (bts["finetune_dataset"] == dataset) & (bts["seed"] != "pooled")
    ]
    spread = single.groupby(["model", "kind"])["statistic"].agg(["min", "max", "size"])
    keys = list(zip(rows["model"], rows["kind"]))
    several = [k in spread.index and spread.loc[k, "size"] > 1 for k in keys]
    out = pd.DataFrame(
        {
            "model": rows["model"].to_numpy(),
            "kind": rows["kind"].to_numpy(),
            "rho": rows["statistic"].to_numpy(),
            "rho_min": [spread.loc[k, "min"] if s else np.nan for k, s in zip(keys, several)],
            "rho_max": [spread.loc[k, "max"] if s else np.nan for k, s in zip(keys, several)],
            "ci_low": rows["ci_low"].to_numpy(),
            "ci_high": rows["ci_high"].to_numpy(),
            "p": rows["pvalue"].to_numpy(),
            "p_floor": rows["pvalue_floor"].to_numpy(),
            f"p_{adjust}": rows[_adjust_column(adjust)].to_numpy(),
            "n": rows["n"].to_numpy(),
        }
    )
    if "scratch_statistic" in rows:
        out["rho_scratch_finetuned"] = rows["scratch_statistic"].to_numpy()
        for column in ("retention_difference", "retention_ci_low", "retention_ci_high", "retention_verdict"):
            out[column] = rows[column].to_numpy()
    similarity = pooled_cka(cka, analysis_set, dataset)
    for column in similarity.columns:
        out[column] = out["model"].map(similarity[column]).to_numpy()
    return out


def finetune_frame(metrics: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """The finetuning table's rows: settings, and the metric's mean, SD and range over seeds."""
    part = _subset(metrics, "finetune metrics", dataset=dataset)
    summary = finetune_summary(part)
    spread = part.groupby(["model", "metric_name"])["metric_value"].agg(["min", "max"])
    keys = list(zip(summary["model"], summary["metric_name"]))
    return summary.assign(
        min=[spread.loc[k, "min"] if n > 1 else np.nan for k, n in zip(keys, summary["n_seeds"])],
        max=[spread.loc[k, "max"] if n > 1 else np.nan for k, n in zip(keys, summary["n_seeds"])],
    ).rename(columns={"min": "metric_min", "max": "metric_max", "mean": "metric_mean", "sd": "metric_sd"})


def analysis_set_frame(stats: pd.DataFrame, analysis_set: str) -> pd.DataFrame:
    """The analysis-set table's rows: class and number of images."""
    return _subset(stats, "analysis-set statistics", analysis_set=analysis_set)[["class", "n"]].reset_index(drop=True)


# How each table shows on the report's tables page (report.site): a table too wide for an 800 px screen or a
# printed page is split into parts, each with the columns that name its rows; a table too long to read (the
# trajectory table) shows a summary, with every row in its CSV. The CSV and LaTeX files stay whole.


@dataclass(frozen=True)
class PagePart:
    """One part of a table on the page: ``columns`` (a name, or a prefix ending in ``*``) beside ``keys`` (the
    columns that name a row), duplicate rows dropped; with ``split_by``, one part per value of that column,
    titled ``title`` with the value's words (:data:`VALUE_WORDS`) in place of ``{}``."""

    title: str
    keys: tuple[str, ...]
    columns: tuple[str, ...]
    split_by: str = ""


#: Words for a value that titles a part.
VALUE_WORDS = {"ieat": "iEAT d", "bts": "BTS rho"}


@dataclass(frozen=True)
class PageLayout:
    """The page's parts of the table whose CSV has every column of ``marks``, its columns renamed by
    ``rename`` first (an interval named for what it is the interval of)."""

    table: str
    marks: tuple[str, ...]
    parts: tuple[PagePart, ...]
    rename: Mapping[str, str] = field(default_factory=dict)


#: Columns of a trajectory table that the page shows one row of per series: at the first epoch and at the
#: chosen checkpoint (``final``; the last epoch for the pooled seed, which has no checkpoint of its own).
TRAJECTORY_SERIES = ("measure", "kind", "key", "seed")
#: The trajectory measure that only the CSV shows: the similarity of every class and pair after every epoch.
TRAJECTORY_CSV_ONLY = "similarity"

PAGE_LAYOUTS = (
    PageLayout(
        "iEAT",
        ("mean_difference", "pooled_sd", "verdict", "detectable_d"),
        (
            PagePart(
                "Effect size d and verdict",
                ("model", "stage", "test"),
                ("seeds", "d", "d_min", "d_max", "ci_low", "ci_high", "ci_seeds_min", "ci_seeds_max", "verdict"),
            ),
            PagePart(
                "p-values and the smallest detectable |d|",
                ("model", "stage", "test"),
                ("alternative", "p", "p_*", "detectable_d"),
            ),
            PagePart(
                "The parts of d: raw association and pooled SD",
                ("model", "stage", "test"),
                ("mean_difference", "pooled_sd"),
            ),
            PagePart("The sets of each test", ("test",), ("X", "Y", "A", "B")),
        ),
    ),
    PageLayout(
        "link",
        ("d_pretrained", "shift_first", "shift_second", "contrast"),
        (
            PagePart(
                "Embedding: d before and after finetuning",
                ("test", "network", "model", "seed"),
                ("d_pretrained", "d_pretrained_low", "d_pretrained_high", "d", "d_low", "d_high", "delta_d*"),
            ),
            PagePart(
                "Predictions: the shift of each class",
                ("test", "network", "model", "seed"),
                ("shift_first*", "shift_second*"),
            ),
            PagePart(
                "Predictions: the contrast and its verdict (the primary rows, p adjusted within the network family)",
                ("test", "network", "model", "seed"),
                ("contrast*", "p", "p_floor", "p_adjusted", "family_size", "verdict"),
            ),
            PagePart(
                "Setting of each test",
                ("test",),
                ("analysis_set", "role", "dataset", "attribute", "first", "second", "threshold", "level", "n_images"),
            ),
        ),
        rename={"delta_low": "delta_d_low", "delta_high": "delta_d_high"},
    ),
    PageLayout(
        "prediction-level bias",
        ("measure", "threshold", "estimate", "replicates", "images_per_attribute"),
        (
            PagePart(
                "Estimates (pretrained: the pretrained network's embedding leakage, beside the finetuned network's)",
                ("network", "model", "seed", "measure", "threshold"),
                ("estimate", "ci_low", "ci_high", "pretrained*"),
            ),
            PagePart(
                "Images and bootstrap of each network",
                ("network", "model", "seed"),
                ("dataset", "level", "replicates", "n_images", "n_excluded", "images_per_attribute"),
            ),
        ),
    ),
    PageLayout(
        "BTS",
        ("kind", "rho", "ci_low", "ci_high", "n"),
        (
            PagePart(
                "Bias transfer scores",
                ("model", "kind"),
                ("rho", "rho_min", "rho_max", "ci_low", "ci_high", "p", "p_*", "n"),
            ),
            PagePart(
                "Retention: beside the network trained on the target data alone",
                ("model", "kind"),
                ("rho_scratch_finetuned", "retention_*"),
            ),
            PagePart(
                "The representation: linear CKA with the pretrained network",
                ("model",),
                ("cka", "cka_low", "cka_high", "cka_scratch*", "representation"),
            ),
        ),
    ),
    PageLayout(
        "finetuning",
        ("metric_name", "metric_mean", "optimizer"),
        (
            PagePart(
                "Validation metric",
                ("dataset", "model", "metric_name"),
                ("metric_mean", "metric_sd", "metric_min", "metric_max", "n_seeds"),
            ),
            PagePart("Settings", ("dataset", "model"), ("epochs", "lr", "batch_size", "optimizer", "scheduler")),
        ),
    ),
    PageLayout(
        "layers",
        ("layer", "depth", "measure", "item", "estimate"),
        (
            PagePart("{} by layer", ("layer", "stage", "item"), ("estimate", "ci_low", "ci_high"), split_by="measure"),
            PagePart("Layers and networks", ("model", "layer"), ("depth",)),
            PagePart("Stages", ("stage",), ("finetune_dataset", "seed")),
        ),
    ),
)


def _matching(patterns: tuple[str, ...], columns: list[str]) -> list[str]:
    """The columns named by ``patterns`` (a prefix ending in ``*`` matches in the table's order), in order."""
    out = []
    for pattern in patterns:
        found = [c for c in columns if c.startswith(pattern[:-1])] if pattern.endswith("*") else [pattern]
        out += [c for c in found if c in columns and c not in out]
    return out


def trajectory_page_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Of a trajectory table (trajectory_frame's columns), one row per series (but the similarities) at its first
    epoch and one at its chosen checkpoint, with the series' range over epochs; ``checkpoint`` names which."""
    require_columns(
        frame, ("epoch", *TRAJECTORY_SERIES, "value", "ci_low", "ci_high", "final"), where="trajectory table"
    )
    shown = frame[frame["measure"] != TRAJECTORY_CSV_ONLY]
    rows = []
    for _, series in shown.groupby(list(TRAJECTORY_SERIES), sort=False, dropna=False):
        series = series.sort_values("epoch", kind="stable")
        final = series[series["final"].astype(str).str.lower() == "true"]
        chosen = final.iloc[-1] if len(final) else series.iloc[-1]
        first = series.iloc[0]
        span = {"value_min": series["value"].min(), "value_max": series["value"].max()}
        rows.append({**first.to_dict(), "checkpoint": "first epoch", **span})
        word = "chosen checkpoint" if len(final) else "last epoch"
        rows.append({**chosen.to_dict(), "checkpoint": word, **span})
    columns = [*TRAJECTORY_SERIES, "checkpoint", "epoch", "value", "ci_low", "ci_high", "value_min", "value_max"]
    return pd.DataFrame(rows, columns=columns)


def page_parts(frame: pd.DataFrame) -> tuple[list[tuple[str, pd.DataFrame]], str]:
    """How a table shows on the report page: ``(title, rows)`` parts, and a note when the page shows a summary
    of the table's rows (empty when it shows them all). A column that no part of its layout names is shown in
    a last part beside the first part's keys, so that no column of the CSV is left off the page."""
    columns = list(frame.columns)
    if {"epoch", "final", *TRAJECTORY_SERIES} <= set(columns):
        rows = trajectory_page_rows(frame)
        note = (
            f"{len(rows)} of the table's {len(frame)} rows: each series at its first epoch and at its chosen "
            "checkpoint (the last epoch for the pooled seed), with its range over epochs; the similarity of "
            "every class and pair after every epoch is in the CSV."
        )
        return [("", rows)], note
    layout = next((lay for lay in PAGE_LAYOUTS if set(lay.marks) <= set(columns)), None)
    if layout is None:
        return [("", frame)], ""
    frame = frame.rename(columns=layout.rename)
    columns = list(frame.columns)
    parts, placed = [], set()
    for part in layout.parts:
        keys, shown = _matching(part.keys, columns), _matching(part.columns, columns)
        placed |= {*keys, *shown, part.split_by}
        if not shown:
            continue
        groups = frame.groupby(part.split_by, sort=False) if part.split_by else [("", frame)]
        for value, rows in groups:
            title = part.title.format(VALUE_WORDS.get(value, value))
            parts.append((title, rows[keys + shown].drop_duplicates().reset_index(drop=True)))
    rest = [c for c in columns if c not in placed]
    if rest:
        keys = _matching(layout.parts[0].keys, columns)
        title = f"More columns of the {layout.table} table"
        parts.append((title, frame[keys + rest].drop_duplicates().reset_index(drop=True)))
    return parts, ""
