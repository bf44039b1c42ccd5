"""Findings about the networks rather than one network's embeddings: whether training converged, how the
BTS compares with the scratch reference, how much finetuning changed the representation (linear CKA), and what
the between-network comparisons attribute."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from biastransfer.report.findings.prose import interval


def training_runs(curves: Sequence[str] = (), scratch: Sequence[str] = ()) -> dict[str, pd.DataFrame]:
    """``{label: training curve}`` of the finetuning runs (results/finetune/{dataset}/{model}/seed{n}/curve.csv)
    and of the scratch reference networks (their metrics.json's history)."""
    runs = {}
    for path in curves:
        seed, model, dataset = Path(path).parts[-2:-5:-1]
        runs[f"{model} finetuned on {dataset}, {seed.replace('seed', 'seed ')}"] = pd.read_csv(path)
    for path in scratch:
        m = json.loads(Path(path).read_text())
        label = f"{m['model']} trained from scratch on {m['dataset']} (reference), seed {m['seed']}"
        runs[label] = pd.DataFrame(m["history"])
    return runs


def _title(text: str) -> list[str]:
    return [f"{text}\n{'-' * len(text)}\n"]


def convergence(curve: pd.DataFrame) -> dict:
    """Best epoch (by the validation metric), last epoch, and whether the run converged: not when its
    best epoch is the last one and the validation loss reached a new minimum in that epoch, nor when it
    ran a single epoch (nothing to judge by)."""
    missing = {"epoch", "val_loss", "metric"} - set(curve.columns)
    if missing:
        raise ValueError(f"training curve: missing column(s) {', '.join(sorted(missing))}")
    curve = curve.sort_values("epoch")
    best = int(curve.loc[curve["metric"].idxmax(), "epoch"])
    last = int(curve["epoch"].iloc[-1])
    loss = curve["val_loss"].to_numpy()
    falling = len(loss) > 1 and loss[-1] < loss[:-1].min()
    gain = float(curve["metric"].iloc[-1] - curve["metric"].iloc[-2]) if len(curve) > 1 else math.nan
    return {
        "best_epoch": best,
        "last_epoch": last,
        "val_loss_falling": bool(falling),
        "last_gain": gain,
        "converged": len(curve) > 1 and not (best == last and falling),
    }


def describe_convergence(curves: Mapping[str, pd.DataFrame]) -> list[str]:
    """One line per training run (``{label: curve}``), and a verdict over all of them."""
    if not curves:
        return []
    lines = _title("Did training converge?")
    stalled = []
    for label, curve in curves.items():
        c = convergence(curve)
        state = "converged" if c["converged"] else "NOT converged"
        if len(curve) < 2:
            lines.append(f"- {label}: a single epoch, so convergence cannot be judged: {state}.")
        else:
            lines.append(
                f"- {label}: best epoch {c['best_epoch']} of {c['last_epoch']}; validation loss "
                f"{'still falling' if c['val_loss_falling'] else 'no longer falling'} in the last epoch "
                f"(metric change in it {c['last_gain']:+.4f}): {state}."
            )
        if not c["converged"]:
            stalled.append(label)
    lines.append("")
    if stalled:
        lines.append(
            f"{len(stalled)} of {len(curves)} runs had not converged (a single epoch, or best epoch = last "
            "epoch with the validation loss still falling): finetuning was cut short, so a high BTS may only mean that finetuning was "
            "light. Train for more epochs before reading the BTS as retention."
        )
    else:
        lines.append(
            "Every run passed its best epoch or stopped improving its validation loss, so the finetuned "
            "networks are not merely lightly trained copies of the pretrained ones."
        )
    return lines + [""]


def describe_reference(bts: pd.DataFrame) -> list[str]:
    """rho(pretrained, finetuned) beside rho(scratch, finetuned), pooled over seeds, when the BTS table
    has the scratch reference's columns."""
    if "scratch_statistic" not in bts.columns:
        return []
    pooled = bts[(bts["seed"].astype(str) == "pooled") & bts["scratch_statistic"].notna()]
    if pooled.empty:
        return []
    lines = _title("The BTS against a network trained only on the target data")
    lines.append(
        "rho(pretrained, finetuned) is the BTS; rho(scratch, finetuned) is the same rank correlation with a "
        "network of the same architecture trained from random initialisation on the finetuning data with the "
        "finetuning recipe (seed " + ", ".join(sorted(set(pooled["scratch_seeds"].astype(str)))) + "). "
        "Retention is what the pretrained network explains beyond what the target data alone gives.\n"
    )
    for r in pooled.itertuples():
        diff = r.statistic - r.scratch_statistic
        difference = f"{diff:.2f}, {interval(r.retention_ci_low, r.retention_ci_high, r.ci_level)}"
        if r.retention_verdict == "retained":
            reading = f"the finetuned ranking is closer to the pretrained one than to the scratch one (by {difference})"
        else:
            closer = "closer" if r.retention_verdict == "target data alone" else "about as close"
            reading = (
                f"the target data alone give a ranking {closer} (difference {difference}), so this BTS does not "
                "show that pretrained biases were retained"
            )
        lines.append(
            f"- **{r.model}** on {r.analysis_set}, finetuned on {r.finetune_dataset}, {r.kind}: "
            f"rho(pretrained, finetuned) = {r.statistic:.2f}, rho(scratch, finetuned) = {r.scratch_statistic:.2f}, "
            f"rho(pretrained, scratch) = {r.pretrained_vs_scratch:.2f}: {reading}."
        )
    lines += [
        "",
        "Each verdict follows the paired interval of rho(pretrained, finetuned) - rho(scratch, finetuned), the "
        "ranked classes or pairs resampled jointly for both; with a handful of them it is wide.",
    ]
    return lines + [""]


def _bts_words(bts: pd.DataFrame | None, analysis_set: str, model: str, dataset: str) -> str:
    """``BTS intra rho = 0.93, inter rho = 0.88`` (seeds pooled), or "" without those rows."""
    if bts is None or bts.empty:
        return ""
    rows = bts[
        (bts["analysis_set"] == analysis_set)
        & (bts["model"] == model)
        & (bts["finetune_dataset"] == dataset)
        & (bts["seed"].astype(str) == "pooled")
    ]
    return ", ".join(f"{r.kind} rho = {r.statistic:.2f}" for r in rows.itertuples())


def describe_representation(cka: pd.DataFrame | None, bts: pd.DataFrame | None = None) -> list[str]:
    """How much of the pretrained representation each finetuned network kept (its linear CKA, seeds averaged),
    against what a network trained from scratch on the target data shares with it, beside the BTS: associations
    kept in a kept representation, or a representation replaced."""
    if cka is None or cka.empty:
        return []
    pooled = cka[(cka["seed"].astype(str) == "pooled") & (cka["network"] == "finetuned")]
    if pooled.empty:
        return []
    lines = _title("How much did finetuning change the representation? (linear CKA)")
    lines.append(
        "Linear CKA (Kornblith et al., 2019) compares the pretrained and the finetuned embeddings of the same "
        "analysis images: 1 when finetuning changed them by no more than a rotation and a scale, lower the more "
        "of their linear structure changed (interval: the delete-one jackknife's over images). The BTS says "
        "whether the ranking of the associations was kept; the CKA says whether the representation that carries "
        "them was. A network trained from scratch on the target data gives its floor: what any network of the "
        "architecture shares with the pretrained one without having been it.\n"
    )
    for r in pooled.itertuples():
        single = cka[
            (cka["analysis_set"] == r.analysis_set)
            & (cka["model"] == r.model)
            & (cka["finetune_dataset"] == r.finetune_dataset)
        ]
        seeds = int(((single["network"] == "finetuned") & (single["seed"].astype(str) != "pooled")).sum())
        scratch = single[(single["network"] == "scratch") & (single["seed"].astype(str) == "pooled")]
        kept = f"{r.cka:.2f} {interval(r.ci_low, r.ci_high)}"
        text = (
            f"- **{r.model}** on {r.analysis_set}, finetuned on {r.finetune_dataset} "
            f"({seeds} seed{'s' if seeds != 1 else ''} averaged): the representation kept {kept} of the pretrained "
            "one's linear structure"
        )
        if scratch.empty:
            text += (
                "; with no network trained from scratch to compare with (analysis.bts.reference: scratch), it cannot "
                "tell a kept representation from what any network of the architecture shares with it"
            )
        else:
            s = scratch.iloc[0]
            difference = f"{r.scratch_difference:.2f} {interval(r.scratch_difference_low, r.scratch_difference_high)}"
            text += f"; the network trained from scratch shares {s['cka']:.2f} {interval(s['ci_low'], s['ci_high'])}"
            if r.representation == "kept":
                text += f", so finetuning kept the representation (difference {difference})"
            else:
                text += (
                    f", and the finetuned network does not share more (difference {difference}, not above 0): as far "
                    "as linear CKA tells, finetuning replaced the representation, and a BTS here shows what the "
                    "target data give rather than associations kept"
                )
        bts_words = _bts_words(bts, r.analysis_set, r.model, r.finetune_dataset)
        lines.append(text + (f". Beside it, the BTS (seeds pooled): {bts_words}." if bts_words else "."))
    return lines + [""]


def _p(row) -> str:
    if row.pvalue <= row.min_pvalue * (1 + 1e-9):
        return f"p = {row.pvalue:.2g}, the smallest this design allows"
    return f"p = {row.pvalue:.2g}"


#: What a between-network comparison's value is, in words: {measure: (its name, its symbol)}.
ATTRIBUTION_MEASURES = {
    "d": ("its iEAT effect size d", "d"),
    "contrast": (
        "its prediction contrast (the prediction level's primary measure: the test's two objects' shifts towards "
        "its first attribute, contrasted, seeds pooled), so that the comparison asks whether the training data make "
        "networks amplify",
        "contrast",
    ),
}


def describe_attribution(table: pd.DataFrame | None) -> list[str]:
    """What each between-network comparison attributes to the training data, with its power."""
    if table is None or table.empty:
        return []
    table = table if "measure" in table else table.assign(measure="d")
    lines = _title("Attribution across networks")
    measures = list(dict.fromkeys(table["measure"]))
    lines.append(
        "Each network contributes one value: "
        + "; or ".join(ATTRIBUTION_MEASURES[m][0] for m in measures)
        + ". Groups of networks that differ only in their training data are compared by the difference of their "
        "means, with a permutation test over networks (its null: the training data make no difference to the "
        "value) and Welch's interval; p-values are Holm-adjusted over the pairs of one comparison.\n"
    )
    for (name, test, stage, measure), rows in table.groupby(["name", "test", "stage", "measure"], sort=False):
        first, symbol = rows.iloc[0], ATTRIBUTION_MEASURES[measure][1]
        lines.append(
            f"**{name}** ({test}, {stage} networks, {symbol}; {first['alternative']}, alpha = {first['alpha']:g}):\n"
        )
        for r in rows.itertuples():
            verdict = (
                "differ: the difference is attributable to their training data"
                if r.pvalue_holm < r.alpha
                else "no difference detected"
            )
            power = (
                f"{r.n_a} vs {r.n_b} networks detect a true difference of {r.detectable_shift:.2f} "
                f"between-network SDs (about {r.detectable_difference:.2f} in {symbol}) with {r.power:.0%} power"
                if math.isfinite(r.detectable_shift)
                else f"{r.n_a} vs {r.n_b} networks cannot reach p < {r.alpha:g} at all"
            )
            lines.append(
                f"- {r.group_a} vs {r.group_b}: mean {symbol} {r.mean_a:.2f} vs {r.mean_b:.2f}, difference "
                f"{r.difference:.2f} ({interval(r.ci_low, r.ci_high, r.level)}), {_p(r)} "
                f"({r.method}, {r.permutations} relabellings; Holm {r.pvalue_holm:.2g}; Welch {r.pvalue_welch:.2g}): "
                f"{verdict}. {power}."
            )
        lines.append("")
    return lines
