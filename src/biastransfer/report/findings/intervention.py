"""Findings about interventions on the finetuning data: what rebalancing did to the training split (and
whether it changed it at all), did it move the association, in which direction, with which interval
(results/summary/intervention.csv)?

The embedding-level verdicts are the summary's own (over seeds where there are at least two, else per seed);
the prediction-level measures are read side by side, the bias amplification at the model's threshold."""

from __future__ import annotations

import pandas as pd


def describe_interventions(summary: pd.DataFrame | None) -> list[str]:
    """reStructuredText lines of the interventions' section (none without a summary)."""
    if summary is None or summary.empty:
        return []
    lines = ["", "Interventions on the finetuning data", "-------------------------------------", ""]
    for (intervention, source), rows in summary.groupby(["intervention", "from"], sort=False):
        lines.append(
            f"Intervention **{intervention}** against the untouched finetuning on **{source}** "
            "(the same pretrained weights, seeds and images):"
        )
        lines.append("")
        lines += [f"- Training split: {v.verdict}." for v in rows[rows["level"] == "data"].itertuples()]
        embedding = rows[rows["level"] == "embedding"]
        for (analysis_set, model, test), r in embedding.groupby(["analysis_set", "model", "name"], sort=False):
            over = r[(r["unit"] == "seeds") & (r["n"] >= 2)]
            chosen = over if not over.empty else r[r["unit"] == "images"]
            role = f" ({chosen['role'].iloc[0]})" if str(chosen["role"].iloc[0]) not in ("", "nan") else ""
            for v in chosen.itertuples():
                lines.append(
                    f"- {model}, iEAT {test}{role} on {analysis_set}: d {v.untouched:.3f} untouched, "
                    f"{v.intervened:.3f} intervened; {v.verdict}."
                )
        prediction = rows[(rows["level"] == "prediction") & (rows["name"] == "directional")]
        pooled = prediction[prediction["seed"].astype(str) == "pooled"]
        prediction = pooled if not pooled.empty else prediction
        for v in prediction[prediction["threshold"].astype(str) != "base_rate"].itertuples():
            seeds = "seeds pooled" if str(v.seed) == "pooled" else f"seed {v.seed}"
            lines.append(
                f"- {v.model}, BiasAmp A->T at threshold {v.threshold} ({seeds}): {v.untouched:.3f} "
                f"[{v.untouched_low:.3f}, {v.untouched_high:.3f}] untouched, {v.intervened:.3f} "
                f"[{v.intervened_low:.3f}, {v.intervened_high:.3f}] intervened: {v.verdict}."
            )
        lines.append("")
    return lines
