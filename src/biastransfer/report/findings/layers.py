"""Findings in words about layer profiles: at which depth each iEAT association appears, before and
after finetuning, and at which depth finetuning keeps the similarity ranking (BTS).

An association "appears" at a layer when it is significant by the run's one rule
(report.formatting.Significance: its p, adjusted across the model's profiled layers, below alpha). Not
appearing is not absence: the test counts one direction, and the sentences give the interval of the
largest |d| and every interval that excludes 0 without a significant test.
"""

from __future__ import annotations

import pandas as pd

from biastransfer.report.findings.prose import estimate, interval, value_range
from biastransfer.report.formatting import ADJUSTMENT_NAMES, Significance, adjusted_floor, model_label, p_text


def _title(text: str) -> list[str]:
    return [f"{text}\n{'-' * len(text)}\n"]


def _significant(row, rule: Significance) -> bool:
    return rule.significant(float(row[rule.column]))


def _d_text(row, column: str) -> str:
    floor = row["pvalue_floor"] if pd.notna(row["pvalue_floor"]) else None
    floor = adjusted_floor(float(row["pvalue"]), floor, float(row[column]))  # a bound when the raw p is at its floor
    return (
        f"{estimate('d', row['estimate'], row['ci_low'], row['ci_high'])} at {row['layer']} "
        f"(adjusted {p_text(float(row[column]), floor)})"
    )


def _appearance(rows: pd.DataFrame, rule: Significance, n_layers: int) -> str:
    """Where one test in one stage is significant, the shallowest such layer and the strongest layer."""
    rows, column = rows.sort_values("depth"), rule.column
    hits = [r for _, r in rows.iterrows() if _significant(r, rule)]
    other = [r for _, r in rows.iterrows() if (r["ci_low"] > 0 or r["ci_high"] < 0) and not _significant(r, rule)]
    strongest = rows.loc[rows["estimate"].abs().idxmax()]
    # an interval that excludes 0 without a significant test: the opposite direction of a one-sided test, or a weak effect
    note = (
        ""
        if not other
        else "; interval excluding 0 but not significant (the direction the test does not count, "
        "or a weak effect): "
        + ", ".join(f"{estimate('d', r['estimate'], r['ci_low'], r['ci_high'])} at {r['layer']}" for r in other)
    )
    if not hits:
        return f"at no profiled layer (largest absolute d: {_d_text(strongest, column)}){note}"
    first = hits[0]
    below = rows[rows["depth"] < first["depth"]]
    shallower = (
        ""
        if below.empty
        else f"; at shallower layers d runs from {value_range(below['estimate'].min(), below['estimate'].max())}"
    )
    peak = "" if strongest["layer"] == first["layer"] else f"; strongest {_d_text(strongest, column)}"
    return (
        f"appears at {first['layer']} (depth {int(first['depth'])} of {n_layers}), {_d_text(first, column)}; "
        f"significant at {', '.join(r['layer'] for r in hits)}{peak}{shallower}{note}"
    )


def _first(rows: pd.DataFrame, rule: Significance):
    """The shallowest significant row of one test in one stage, or None."""
    hits = [r for _, r in rows.sort_values("depth").iterrows() if _significant(r, rule)]
    return hits[0] if hits else None


def _movement(name: str, test: pd.DataFrame, rule: Significance) -> list[str]:
    """Per finetuning dataset: did finetuning move the shallowest significant layer, seed by seed?"""
    before = _first(test[test["stage"] == "pretrained"], rule)
    lines = []
    for dataset, ft in test[test["stage"] != "pretrained"].groupby("finetune_dataset", sort=False):
        after = {seed: _first(s, rule) for seed, s in ft.groupby("seed", sort=False)}
        seeds = ", ".join(f"seed {seed} {'none' if r is None else r['layer']}" for seed, r in after.items())
        depths = [None if r is None else int(r["depth"]) for r in after.values()]
        if before is None:
            verdict = (
                "significant at no profiled layer, before or after finetuning (in the tested direction; "
                "whether finetuning changed d is the change test's question)"
                if all(d is None for d in depths)
                else f"significant at no profiled layer before; finetuning made it appear in "
                f"{sum(d is not None for d in depths)} of {len(depths)} seeds"
            )
        else:
            d0 = int(before["depth"])
            counts = {
                "at the same depth": sum(d == d0 for d in depths),
                "deeper": sum(d is not None and d > d0 for d in depths),
                "shallower": sum(d is not None and d < d0 for d in depths),
                "at no profiled layer": sum(d is None for d in depths),
            }
            verdict = f"pretrained first at {before['layer']}; after finetuning " + ", ".join(
                f"{where} in {n} of {len(depths)} seeds" for where, n in counts.items() if n
            )
        lines.append(
            f"- iEAT {name}, did finetuning on {dataset} move it? First significant layer: {seeds}; {verdict}."
        )
    return lines


def describe_layers(profile: pd.DataFrame | None, alpha: float, *, adjust: str = "holm") -> list[str]:
    """One paragraph per (analysis set, model): each iEAT test's appearance by depth (pretrained and per
    finetuned seed), then the pooled BTS rho per layer. Empty when there is no profile."""
    if profile is None or profile.empty:
        return []
    rule = Significance(alpha, adjust)
    lines = _title("Where in the network does the association live? (layer profiles)")
    lines.append(
        f"An association appears at a layer when its {ADJUSTMENT_NAMES[adjust].replace('--', '-')}-adjusted p "
        f"across the model's profiled layers is below {alpha:g}, the run's significance rule.\n"
    )
    for (aset, model), m in profile.groupby(["analysis_set", "model"], sort=False):
        n_layers = m["layer"].nunique()
        layers = m.drop_duplicates("layer").sort_values("depth")["layer"].tolist()
        lines.append(f"{model_label(model)} on {aset} (layers {', '.join(layers)}):\n")
        ieat = m[m["measure"] == "ieat"]
        for test, t in ieat.groupby("item", sort=False):
            role = t["role"].iloc[0] if "role" in t and isinstance(t["role"].iloc[0], str) and t["role"].iloc[0] else ""
            for stage, s in t.groupby("stage", sort=False):
                lines.append(f"- iEAT {test}{f' ({role})' if role else ''}, {stage}: {_appearance(s, rule, n_layers)}.")
            lines += _movement(test, t, rule)
        bts = m[(m["measure"] == "bts") & (m["seed"].astype(str) == "pooled")]
        for (dataset, kind), b in bts.groupby(["finetune_dataset", "item"], sort=False):
            b = b.sort_values("depth")
            hi, lo = b.loc[b["estimate"].idxmax()], b.loc[b["estimate"].idxmin()]
            cells = "; ".join(f"{r.layer} {r.estimate:.2f} {interval(r.ci_low, r.ci_high)}" for r in b.itertuples())
            lines.append(
                f"- BTS {kind}, finetuned on {dataset} (seeds pooled), rho by layer: {cells}. "
                f"Finetuning kept the ranking best at {hi['layer']} and changed it most at {lo['layer']}."
            )
        cka = m[(m["measure"] == "cka") & (m["seed"].astype(str) == "pooled")]
        for dataset, c in cka.groupby("finetune_dataset", sort=False):
            c = c.sort_values("depth")
            cells = "; ".join(f"{r.layer} {r.estimate:.2f} {interval(r.ci_low, r.ci_high)}" for r in c.itertuples())
            lines.append(
                f"- Linear CKA against the pretrained layer, finetuned on {dataset} (seeds averaged), by layer: "
                f"{cells}. The representation changed most at {c.loc[c['estimate'].idxmin(), 'layer']}."
            )
        lines.append("")
    return lines
