"""The report's headline table: every iEAT verdict (pretrained, and each finetuning dataset over its
seeds) and every pooled BTS verdict, each with its estimate, interval, seed range and adjusted p; for a
test with a known answer (``role: planted`` or ``control`` in the config), the answer and whether it held.

Verdicts follow the findings and the tables (the run's one rule, report.formatting.Significance):
significant means adjusted p < alpha, over seeds the largest p (so "significant in k of n seeds" counts
the seeds), and over several seeds the interval is the range of the seeds' intervals (``ci_seeds_min`` /
``ci_seeds_max``), never a CI. An effect of |d| >= 0.5 against the tested
direction is named in the verdict with its two-sided p (report.formatting.OPPOSITE_EFFECT). Known answers
are what the data were built to show, so they are read in the pretrained network only:

- a planted pair is found: adjusted p < alpha and d > 0;
- a control pair is not: adjusted p >= alpha and two-sided p >= alpha.

After finetuning nothing is known in advance: those rows carry verdicts, never a known answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from biastransfer.report.findings.prose import estimate
from biastransfer.report.formatting import ADJUSTMENT_WORDS, Significance, adjusted_floor, opposite_direction, p_text
from biastransfer.report.tables import ieat_by_stage

HEADLINE_COLUMNS = (
    "measure",
    "test",
    "model",
    "stage",
    "estimate",
    "estimate_min",
    "estimate_max",
    "ci_low",
    "ci_high",
    "ci_seeds_min",
    "ci_seeds_max",
    "p",
    "p_two_sided",
    "p_floor",
    "p_adjusted",
    "verdict",
    "retention",
    "known_answer",
    "held",
)


def _stage(group: str, n_seeds: int) -> str:
    if group == "pretrained":
        return "pretrained"
    return f"finetuned on {group.removeprefix('ft-')}, {n_seeds} seed{'s' if n_seeds != 1 else ''}"


def _known(role: str, pretrained: bool, r, significant: bool, alpha: float) -> tuple[str, str]:
    """(known answer, held) for a test's role in the pretrained network; ("", "") where none applies."""
    if role == "planted" and pretrained:
        held = significant and r.effect_size > 0
        return "planted pair found (significant, d > 0)", "yes" if held else "no"
    if role == "control" and pretrained:
        held = not significant and r.pvalue_two_sided >= alpha
        return "control pair not found (not significant, either direction)", "yes" if held else "no"
    return "", ""


def ieat_headline(
    ieat: pd.DataFrame, tests: Mapping[str, Sequence[Mapping]], alpha: float, adjust: str = "holm"
) -> pd.DataFrame:
    """One row per (analysis set, test, model, stage group) of the iEAT summary."""
    rule = Significance(alpha, adjust)
    adj_col = rule.column
    roles = {(a, spec["name"]): spec.get("role", "exploratory") for a, specs in tests.items() for spec in specs}
    rows = []
    for r in ieat_by_stage(ieat, rule).itertuples(index=False):
        pretrained = r.group == "pretrained"
        significant = rule.significant(getattr(r, adj_col))
        n_hits = int(r.n_significant)
        verdict = (
            ("significant" if significant else "not significant")
            if pretrained
            else f"significant in {n_hits} of {r.n_seeds} seeds"
        )
        if opposite_direction(r.effect_size, r.alternative):
            largest = " (the largest over seeds)" if not pretrained and r.n_seeds > 1 else ""
            verdict += (
                f"; opposite direction (|d| >= 0.5), two-sided {p_text(r.pvalue_two_sided, r.pvalue_floor)}{largest}"
            )
        known, held = _known(roles.get((r.analysis_set, r.test), "exploratory"), pretrained, r, significant, alpha)
        several = not pretrained and r.n_seeds > 1
        spread = (r.effect_min, r.effect_max) if several else (np.nan, np.nan)
        interval = (np.nan, np.nan, r.ci_low, r.ci_high) if several else (r.ci_low, r.ci_high, np.nan, np.nan)
        rows.append(
            dict(
                measure="iEAT d",
                model=r.model,
                stage=_stage(r.group, r.n_seeds),
                test=f"{r.analysis_set}: {r.test} (X {r.X}, Y {r.Y}, A {r.A}, B {r.B}; {r.alternative})",
                estimate=r.effect_size,
                estimate_min=spread[0],
                estimate_max=spread[1],
                **dict(zip(("ci_low", "ci_high", "ci_seeds_min", "ci_seeds_max"), interval)),
                p=r.pvalue,
                p_two_sided=r.pvalue_two_sided,
                p_floor=r.pvalue_floor,
                p_adjusted=getattr(r, adj_col),
                verdict=verdict,
                retention="",
                known_answer=known,
                held=held,
            )
        )
    return pd.DataFrame(rows, columns=HEADLINE_COLUMNS)


def bts_headline(bts: pd.DataFrame, alpha: float, adjust: str = "holm") -> pd.DataFrame:
    """One row per pooled BTS (analysis set, model, finetuning dataset, intra or inter)."""
    rule = Significance(alpha, adjust)
    adj_col = rule.column
    seeds = bts[bts["seed"].astype(str) != "pooled"]
    rows = []
    for r in bts[bts["seed"].astype(str) == "pooled"].itertuples(index=False):
        same = seeds[
            (seeds["analysis_set"] == r.analysis_set)
            & (seeds["model"] == r.model)
            & (seeds["finetune_dataset"] == r.finetune_dataset)
            & (seeds["kind"] == r.kind)
        ]["statistic"]
        p_adj = float(getattr(r, adj_col))
        verdict = "significant" if rule.significant(p_adj) else "not significant"
        scratch = float(getattr(r, "scratch_statistic", np.nan))
        retention = "" if np.isnan(scratch) else f"{r.retention_verdict} (rho with the scratch network {scratch:.2f})"
        rows.append(
            dict(
                measure=f"BTS rho, {r.kind}",
                model=r.model,
                stage=f"finetuned on {r.finetune_dataset}, {len(same)} seed{'s' if len(same) != 1 else ''} pooled",
                test=f"{r.analysis_set}: {r.kind}-class similarities, n = {int(r.n)}",
                estimate=r.statistic,
                estimate_min=same.min() if len(same) > 1 else np.nan,
                estimate_max=same.max() if len(same) > 1 else np.nan,
                ci_low=r.ci_low,
                ci_high=r.ci_high,
                p=r.pvalue,
                p_two_sided=np.nan,
                p_floor=float(getattr(r, "pvalue_floor", 0.0)),
                p_adjusted=p_adj,
                verdict=verdict,
                retention=retention,
                known_answer="",
                held="",
            )
        )
    return pd.DataFrame(rows, columns=HEADLINE_COLUMNS)


def headline_table(
    ieat: pd.DataFrame, bts: pd.DataFrame, tests: Mapping[str, Sequence[Mapping]], alpha: float, adjust: str = "holm"
) -> pd.DataFrame:
    """The landing page's table: the iEAT rows, then the BTS rows."""
    Significance(alpha, adjust)  # ValueError for an alpha outside (0, 1) or an unknown adjustment
    return pd.concat([ieat_headline(ieat, tests, alpha, adjust), bts_headline(bts, alpha, adjust)], ignore_index=True)


def _short(row) -> str:
    """A headline row's test without its roles (``analysis set: name``)."""
    return str(row["test"]).split(" (", 1)[0]


def _numbers(row) -> str:
    return (
        f"{estimate('d', row['estimate'], row['ci_low'], row['ci_high'])}, "
        f"adjusted {p_text(float(row['p_adjusted']), adjusted_floor(row['p'], row['p_floor'], row['p_adjusted']))}"
    )


def finetuning_phrase(per: Mapping[str, Sequence[int]], *, name_seeds: bool = False) -> str:
    """What was finetuned: each dataset (``per``: {dataset: its seeds}) with its number of seeds (or,
    ``name_seeds``, the seeds themselves), shared where they agree; "pretrained only" without any."""
    if not per:
        return "pretrained only"

    def seeds(s: list[int]) -> str:
        if name_seeds:
            return f"seed{'s' if len(s) != 1 else ''} {', '.join(map(str, s))}"
        return f"{len(s)} seed{'s' if len(s) != 1 else ''}"

    texts = {d: seeds(s) for d, s in per.items()}
    if len(set(texts.values())) == 1:
        return f"finetuned on {', '.join(per)} with {next(iter(texts.values()))}"
    return "finetuned on " + ", ".join(f"{d} with {t}" for d, t in texts.items())


def headline_summary(
    headline: pd.DataFrame, *, synthetic: bool, models: Sequence[str], finetuned: str, alpha: float, adjust: str
) -> list[str]:
    """The landing page's first sentences, from the headline table alone (so that they cannot disagree with
    it): what was run, each known answer, what finetuning changed, and what the run could not tell."""
    sentences = []
    demo = (
        "This is the synthetic planted-bias demo: person_a and person_b are drawn figures that stand in for "
        "two perceived-gender groups. "
        if synthetic
        else ""
    )
    sentences.append(
        f"{demo}{len(models)} model{'s' if len(models) != 1 else ''} ({', '.join(models)}), {finetuned}; every "
        f"verdict reads the {ADJUSTMENT_WORDS[adjust]}-adjusted p at alpha = {alpha:g}."
    )
    for _, row in headline[headline["known_answer"] != ""].iterrows():
        outcome = "held" if row["held"] == "yes" else "did not hold"
        sentences.append(
            f"Known answer, {row['known_answer']}: {outcome} for {row['model']} on {_short(row)} ({_numbers(row)})."
        )
    ieat = headline[headline["measure"] == "iEAT d"]
    after = ieat[ieat["stage"] != "pretrained"]
    if len(after):
        every = int(after["verdict"].str.match(r"significant in (\d+) of \1 seeds").sum())
        none = int(after["verdict"].str.startswith("significant in 0 of").sum())
        sentences.append(
            f"After finetuning, {every} of {len(after)} iEATs are significant in every seed and {none} in none; "
            f"{int(after['verdict'].str.contains('opposite direction').sum())} show an effect against the tested "
            "direction."
        )
    quiet = int(
        (
            ieat["verdict"].str.startswith("not significant") | ieat["verdict"].str.startswith("significant in 0 of")
        ).sum()
    )
    if quiet:
        sentences.append(
            f"{quiet} of {len(ieat)} iEAT verdicts are not significant: at these set sizes that is not evidence "
            "that an association is absent (its interval, in the table below, says how large it could be)."
        )
    return sentences


def verdicts_record(headline: pd.DataFrame, summary: Sequence[str], *, alpha: float, adjust: str) -> dict:
    """The headline as a machine-readable record (results/summary/results.json): the significance rule, the
    summary sentences and every verdict with its numbers (a missing number is null)."""
    rows = headline.astype(object).where(headline.notna(), None).to_dict("records")
    return {"alpha": alpha, "adjust": adjust, "summary": list(summary), "verdicts": rows}
