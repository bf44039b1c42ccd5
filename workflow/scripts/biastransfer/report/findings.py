"""The run's findings in words (reStructuredText): what each configured iEAT and the pooled BTS say."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

ROLE_TEXT = {
    "planted": "a planted association (the synthetic data's known answer)",
    "control": "a control pair with no planted association",
    "exploratory": "an association under test",
}


IEAT_SCOPE = (
    "An iEAT tests one network's embeddings: a significant result says that in this network X is closer to A, "
    "relative to B, than Y is; not where that association came from. Networks trained from other random "
    "initialisations, or on data without the association, can show one too; compare networks trained with "
    "and without it (config/controls.yaml does this for the demo)."
)


def _p(p: float) -> str:
    return "p < 0.0001" if p < 1e-4 else f"p = {p:.2g}"


def _verdict(d: float, p: float, alpha: float) -> str:
    return f"{'significant' if p < alpha else 'not significant'} (d = {d:.2f}, {_p(p)})"


def describe_ieat(ieat: pd.DataFrame, tests: Mapping[str, Sequence[Mapping]], alpha: float) -> list[str]:
    """One paragraph per (analysis set, test): pretrained and finetuned results of every model."""
    lines = []
    for analysis_set, specs in tests.items():
        for spec in specs:
            sel = ieat[(ieat["analysis_set"] == analysis_set) & (ieat["test"] == spec["name"])]
            if sel.empty:
                continue
            role = spec.get("role", "exploratory")
            title = f"{analysis_set}: {spec['name']} — {ROLE_TEXT[role]}"
            lines.append(
                f"{title}\n{'-' * len(title)}\n\n"
                f"X = {spec['X']}, Y = {spec['Y']}, A = {spec['A']}, B = {spec['B']}; "
                f"significant means p < {alpha} ({sel['alternative'].iloc[0]} alternative, uncorrected).\n"
            )
            for model, rows in sel.groupby("model", sort=False):
                pre = rows[rows["stage"] == "pretrained"]
                ft = rows[rows["stage"] != "pretrained"]
                text = f"- **{model}** pretrained: {_verdict(pre['effect_size'].iloc[0], pre['pvalue'].iloc[0], alpha)}" if not pre.empty else f"- **{model}**"
                for dataset, runs in ft.groupby("finetune_dataset", sort=False):
                    hits = int((runs["pvalue"] < alpha).sum())
                    text += (
                        f"; finetuned on {dataset}: mean d = {runs['effect_size'].mean():.2f} "
                        f"(range {runs['effect_size'].min():.3f} to {runs['effect_size'].max():.3f}), "
                        f"significant in {hits} of {len(runs)} seeds"
                    )
                lines.append(text + ".")
            lines.append("")
    return lines


def describe_bts(bts: pd.DataFrame) -> list[str]:
    """The pooled BTS of every model, intra and inter."""
    pooled = bts[bts["seed"].astype(str) == "pooled"]
    if pooled.empty:
        return []
    title = "Bias Transfer Scores (finetuned similarities averaged over seeds)"
    lines = [f"{title}\n{'-' * len(title)}\n"]
    for (analysis_set, model, dataset), rows in pooled.groupby(["analysis_set", "model", "finetune_dataset"], sort=False):
        parts = [
            f"{r.kind} rho = {r.statistic:.2f} ({_p(r.pvalue)}, n = {int(r.n)})" for r in rows.itertuples()
        ]
        lines.append(f"- **{model}** on {analysis_set}, finetuned on {dataset}: " + "; ".join(parts) + ".")
    lines += ["", "A high rho means the ranking of similarities survived finetuning: the pretrained biases were retained."]
    return lines


def describe_findings(
    ieat: pd.DataFrame, bts: pd.DataFrame, tests: Mapping[str, Sequence[Mapping]], alpha: float
) -> str:
    """reStructuredText summary of the run's iEATs and BTSs."""
    if not np.isfinite(alpha) or not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    body = ["========\nFindings\n========", "", IEAT_SCOPE, "", *describe_ieat(ieat, tests, alpha), *describe_bts(bts)]
    return "\n".join(body) + "\n"


def to_html(rst: str) -> str:
    """A standalone HTML page of the findings (docutils, which Snakemake itself depends on)."""
    from docutils.core import publish_string

    return publish_string(rst, writer="html5", settings_overrides={"report_level": 2, "halt_level": 2}).decode()
