"""The run's results model (results/summary/results.json, validated against ``results.schema.json`` beside
this module): every result the report shows, with the commit, the config's hash, the statistics settings and
the one decision rule of each level, and the landing page's sentences written from it alone.

Each level has one decision rule (:func:`rules`), stated once here and on the landing page; the findings and the
tables apply the same adjusted p-values and intervals:

- an iEAT, a BTS, a change of d or of a similarity is *significant* when its p, adjusted within its table
  (the run's ``report.p_adjust``), is below ``analysis.ieat.alpha``; a finetuned network's iEAT is read per
  seed ("significant in k of n seeds"); an effect of |d| >= 0.5 against the tested direction is named;
- a prediction-level verdict reads one primary measure per declared iEAT pair, the contrast of the pair's
  two objects (seeds pooled, at the link's score threshold), with its two-sided bootstrap p adjusted over the
  family of one network's primary contrasts (every declared pair it is linked to): it *amplifies* when that
  adjusted p is below ``analysis.ieat.alpha`` and the contrast is positive, *reduces* when negative, *neither*
  otherwise; every other prediction measure (the per-seed contrasts, BiasAmp means and terms, Zhao's measure,
  leakage) is exploratory and never a headline verdict.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from biastransfer.provenance import workflow_provenance
from biastransfer.report.findings.claims import claims_sentence
from biastransfer.report.findings.comparison import arm_lines, comparison_sentence, quadrant
from biastransfer.report.formatting import (
    ADJUSTMENT_WORDS,
    OPPOSITE_EFFECT,
    Significance,
    adjusted_floor,
    p_text,
    prediction_verdict,
    require_columns,
)
from biastransfer.report.headline import finetuning_phrase, headline_table
from biastransfer.report.records import ieat_records, number, table_records
from biastransfer.report.tables import IEAT_COLUMNS
from biastransfer.stats.comparison import overview
from biastransfer.stats.link import P_METHOD

SCHEMA_FILE = Path(__file__).with_name("results.schema.json")
SCHEMA_VERSION = 1


def rules(alpha: float, adjust: str) -> dict[str, str]:
    """The decision rule of each level, in words (the model's ``rules``)."""
    adjusted = f"its {ADJUSTMENT_WORDS[adjust]}-adjusted p < {alpha:g}"
    return {
        "iEAT": (
            f"significant when {adjusted} (family: the iEATs of one analysis set, every model, stage and seed); "
            "a finetuned network is read per seed (significant in k of n seeds); |d| >= 0.5 against the tested "
            "direction is named as an opposite effect."
        ),
        "BTS": (
            f"significant when {adjusted} (family: one analysis set, finetuning dataset and seed); retention "
            "compares the finetuned network's BTS with that of the network trained from scratch."
        ),
        "change": f"a change of d is significant when {adjusted} (family: one analysis set and finetuning dataset).",
        "predictions": (
            "one primary measure per declared iEAT pair: the contrast of its two objects' shifts towards the first "
            f"attribute, seeds pooled; amplifies when {adjusted} and the contrast is above 0, reduces when it is "
            "below 0, neither otherwise (p: the percentile bootstrap's, two-sided; family: the declared pairs of one "
            "network, its seeds pooled). The per-seed contrasts, BiasAmp, Zhao's measure, their terms and leakage "
            "are exploratory."
        ),
    }


def known_answers(ieats: Sequence[Mapping], alpha: float) -> list[dict]:
    """What the data were built to show, read in the pretrained networks: a planted pair is found (significant,
    d > 0), a control pair is not (not significant, and two-sided p >= alpha)."""
    answers = []
    for r in ieats:
        if r["network"] != "pretrained" or r["role"] not in ("planted", "control"):
            continue
        if r["role"] == "planted":
            held = r["verdict"] == "significant" and r["d"] > 0
            checks = "planted pair found (significant, d > 0)"
        else:
            held = r["verdict"] == "not significant" and (r["p_two_sided"] or 0) >= alpha
            checks = "control pair not found (not significant, either direction)"
        answers.append({**{k: r[k] for k in ("analysis_set", "test", "model")}, "checks": checks, "held": held})
    return answers


def convergence_records(runs: Mapping[str, Mapping]) -> list[dict]:
    """Each training run's convergence (``{label: report.findings.networks.convergence(curve)}``)."""
    return [
        {"run": label, "converged": bool(c["converged"]), "best_epoch": c["best_epoch"], "last_epoch": c["last_epoch"]}
        for label, c in runs.items()
    ]


#: The link summary's columns of the primary measures and their family (biastransfer.stats.link.family_adjusted).
PRIMARY_COLUMNS = ("primary", "family_size", "contrast_pvalue", "contrast_pvalue_floor", "contrast_pvalue_holm")


def prediction_records(link: pd.DataFrame | None, rule: Significance) -> list[dict]:
    """The primary prediction measure of each declared pair and network family (the link table's ``primary``
    rows: the contrast, seeds pooled, or the one seed where a family has one), with its bootstrap p, its p
    adjusted within its family and the verdict of ``rule``."""
    if link is None or link.empty:
        return []
    require_columns(link, PRIMARY_COLUMNS, where="link summary")
    table = link.assign(seed=link["seed"].astype(str))
    records = []
    for _, rows in table.groupby(["analysis_set", "test", "dataset", "network", "model"], sort=False):
        r = rows[rows["primary"].astype(bool)].iloc[0]
        p_adjusted = number(r[f"contrast_{rule.column}"])
        records.append(
            {
                "analysis_set": r["analysis_set"],
                "test": r["test"],
                "role": r["role"],
                "dataset": r["dataset"],
                "network": r["network"],
                "model": r["model"],
                "seeds": "pooled" if r["seed"] == "pooled" else r["seed"],
                "n_seeds": int((rows["seed"] != "pooled").sum()),
                "attribute": r["attribute"],
                "first": r["first"],
                "second": r["second"],
                "threshold": str(r["threshold"]),
                "measure": "contrast",
                "estimate": number(r["contrast"]),
                "ci_low": number(r["contrast_low"]),
                "ci_high": number(r["contrast_high"]),
                "ci_level": number(r["level"]),
                "p": number(r["contrast_pvalue"]),
                "p_floor": number(r["contrast_pvalue_floor"]),
                "p_method": P_METHOD,
                "family": family_name(r),
                "family_size": int(r["family_size"]) if number(r["family_size"]) is not None else 0,
                "adjust": rule.adjust,
                "p_adjusted": p_adjusted,
                "verdict": prediction_verdict(number(r["contrast"]), p_adjusted, rule),
            }
        )
    return records


def family_name(r: Mapping) -> str:
    """A family of primary prediction measures by name: ``finetuned democnn on synthetic_target``."""
    return f"{r['network']} {r['model']} on {r['dataset']}"


def arm_records(comparison: pd.DataFrame | None) -> list[dict]:
    """Each compared finetuning arm, model and iEAT (:func:`biastransfer.stats.comparison.overview`): the
    changes of d, of the prediction shift and of the validation metric with their intervals, the reading of
    the two levels (``verdict``) and the landing page's line (``sentence``)."""
    if comparison is None or comparison.empty:
        return []
    rows = overview(comparison)
    rows["verdict"] = [quadrant(r, p) for r, p in zip(rows["representation"], rows["predictions"])]
    rows["sentence"] = [f"{comparison_sentence(r)}." for r in rows.to_dict("records")]
    return table_records(rows)


def trajectory_records(trajectory: pd.DataFrame | None) -> list[dict]:
    """The trajectories summarised: each curve's first and last checkpoint (the whole curve is in trajectory.csv)."""
    if trajectory is None or trajectory.empty:
        return []
    keys = ["analysis_set", "model", "finetune_dataset", "measure", "seed", "kind", "key"]
    frame = trajectory.sort_values("epoch", kind="stable")
    ends = frame.groupby(keys, sort=False, dropna=False).nth([0, -1])
    kept = [*keys, "role", "epoch", "value", "ci_low", "ci_high", "pvalue", "pvalue_floor"]
    return table_records(ends[[c for c in kept if c in ends]])


#: Results read whole from a summary table (its columns as fields): {section: summary}.
TABLE_SECTIONS = {
    "ieat_seeds": "ieat_seeds",
    "ieat_change": "ieat_change",
    "bts": "bts",
    "representation": "cka",
    "attribution": "attribution",
    "finetuning": "finetune_metrics",
    "similarity": "similarity",
    "similarity_change": "similarity_change",
    "layers": "layer_profile",
    "prediction_measures": "amplification",
    "prediction_terms": "amplification_terms",
    "link": "link",
    "link_correlation": "link_correlation",
    "claims": "claims",
    "interventions": "intervention",
    "comparison_measures": "comparison",
    "factors": "factors",
    "covariates": "covariates",
}


def results_model(
    tables: Mapping[str, pd.DataFrame | None],
    *,
    facts: Mapping,
    tests: Mapping[str, Sequence[Mapping]],
    alpha: float,
    adjust: str = "holm",
    runs: Mapping[str, Mapping] | None = None,
) -> dict:
    """The results model of a run from its summary tables (``{summary name: frame}``; ``ieat`` and ``bts``
    required), the run's ``facts`` (``models``, ``analysis_sets``, ``seeds`` and ``scratch_seeds`` {finetuning
    dataset: seeds}, ``finetune`` (epochs, lr, optimizer), ``planted`` {dataset: {object: P(person_a)}},
    ``statistics`` {"ieat": ..., "bts": ...}, ``config_hash``: biastransfer.workflow.rules.report.run_facts),
    its iEAT ``tests`` ({analysis set: tests}), its significance rule and its training runs' convergence
    (``runs``: {label: convergence record})."""
    rule = Significance(alpha, adjust)
    require_columns(tables["ieat"], IEAT_COLUMNS, where="iEAT summary")
    roles = {(a, t["name"]): t.get("role", "exploratory") for a, specs in tests.items() for t in specs}
    ieats = ieat_records(tables["ieat"], tables.get("ieat_scratch"), roles, rule)
    verdicts = headline_table(tables["ieat"], tables["bts"], tests, alpha, adjust)
    workflow = workflow_provenance()
    model = {
        "schema_version": SCHEMA_VERSION,
        "run": {
            "workflow_version": workflow["workflow_version"],
            "git_commit": workflow["git_commit"],
            "git_dirty": workflow["git_dirty"],
            "config_hash": facts["config_hash"],
            "models": list(facts["models"]),
            "analysis_sets": list(facts["analysis_sets"]),
            "seeds": {d: list(s) for d, s in facts["seeds"].items()},
            "scratch_seeds": {d: list(s) for d, s in facts["scratch_seeds"].items()},
            "finetune": dict(facts["finetune"]),
            "planted": {d: dict(p) for d, p in facts["planted"].items()},
        },
        "settings": {"alpha": alpha, "adjust": adjust, **facts["statistics"]},
        "rules": rules(alpha, adjust),
        "verdicts": table_records(verdicts),
        "ieat": ieats,
        "known_answers": known_answers(ieats, alpha),
        "convergence": convergence_records(runs or {}),
        "predictions": prediction_records(tables.get("link"), rule),
        "trajectory": trajectory_records(tables.get("trajectory")),
        "arms": arm_records(tables.get("comparison")),
        **{section: table_records(tables.get(summary)) for section, summary in TABLE_SECTIONS.items()},
    }
    model["summary"] = summary_sentences(model)
    claims = tables.get("claims")
    model["claims_summary"] = claims_sentence(claims) if claims is not None and not claims.empty else None
    comparison = tables.get("comparison")
    model["arms_summary"] = arm_lines(overview(comparison)) if comparison is not None and not comparison.empty else []
    model["cannot_tell"] = cannot_tell(model)
    return model


# ---- the landing page's sentences, from the model alone ----------------------------------------------------


def _d(r: Mapping) -> str:
    if r["d"] is None:
        return "d not estimable"
    bounds = f" [{r['ci_low']:.2f}, {r['ci_high']:.2f}]" if r["ci_low"] is not None else ""
    return f"d = {r['d']:.2f}{bounds}"


def _p(r: Mapping) -> str:
    """``adjusted p = 0.03``, or a bound where the raw p is at its method's floor (as the tables print it)."""
    if r["p_adjusted"] is None or r["p"] is None:
        return "adjusted p not available"
    return f"adjusted {p_text(r['p_adjusted'], adjusted_floor(r['p'], r['p_floor'], r['p_adjusted']))}"


def _pair(r: Mapping, sets: int, models: int) -> str:
    """A test's name (with its analysis set where there are several, and its model where there are several)."""
    where = f"{r['analysis_set']}: " if sets > 1 else ""
    return f"{where}{r['test']}" + (f" ({r['model']})" if models > 1 else "")


def _test_words(r: Mapping, sets: int) -> str:
    where = f"{r['analysis_set']}: " if sets > 1 else ""
    role = "" if r["role"] == "exploratory" else f", {r['role']}"
    return f"{where}{r['test']} ({r['A']} vs {r['B']} with {r['X']} vs {r['Y']}{role})"


#: How many results a landing sentence names before it only counts the rest.
NAMED = 3


def _named(parts: Sequence[str], of: str, where: str = "the table below") -> str:
    """Up to :data:`NAMED` parts, then how many more ``of`` there are, and ``where`` they are."""
    more = len(parts) - NAMED
    return "; ".join(parts[:NAMED]) + (f"; and {more} more {of} ({where})" if more > 0 else "")


def _planted_words(planted: Mapping[str, Mapping[str, float]], finetuning: Sequence[str]) -> str:
    """What the synthetic data planted: each pretraining dataset's co-occurrences, and whether each synthetic
    finetuning dataset has any ("" when no pretraining dataset planted one)."""

    def put(objects: Mapping[str, float]) -> str:
        return ", ".join(
            f"{obj} beside {'person_a' if p >= 0.5 else 'person_b'} in {max(p, 1 - p):.0%} of its scenes with a person"
            for obj, p in objects.items()
        )

    pretraining = [f"{d} put {put(o)}" for d, o in planted.items() if d not in finetuning and o]
    if not pretraining:
        return ""
    targets = [
        f"{d} put {put(o)}" if o else f"{d} has no such co-occurrence" for d, o in planted.items() if d in finetuning
    ]
    return f"Planted: the pretraining data {'; '.join(pretraining)}" + (
        f"; the finetuning data: {'; '.join(targets)}." if targets else "."
    )


def summary_sentences(model: Mapping) -> list[str]:
    """At most five plain sentences: what was tested, what was found, what finetuning changed, what the network
    trained from scratch says about where an association came from, and whether the predictions act on it.
    Each names the results with a known answer or an effect first, at most :data:`NAMED`, and counts the rest."""
    run, ieats = model["run"], model["ieat"]
    sets, models = len({r["analysis_set"] for r in ieats}), len(run["models"])
    tests = {(r["analysis_set"], r["test"]): r for r in ieats}
    said = [_test_words(r, sets) for r in sorted(tests.values(), key=lambda r: r["role"] == "exploratory")]
    tested = (
        f"{models} model{'s' if models != 1 else ''} ({', '.join(run['models'])}), "
        f"{finetuning_phrase(run['seeds'])}; {len(tests)} iEAT test{'s' if len(tests) != 1 else ''}: "
        f"{_named(said, 'tests')}."
    )
    planted = _planted_words(run["planted"], list(run["seeds"]))
    sentences = [f"{planted} {tested}" if planted else tested]
    pretrained = sorted(
        (r for r in ieats if r["network"] == "pretrained"),
        key=lambda r: (r["role"] == "exploratory", r["verdict"] != "significant"),
    )
    found = sum(r["verdict"] == "significant" for r in pretrained)
    if pretrained:
        named = [f"{_pair(r, sets, models)} {r['verdict']}, {_d(r)}, {_p(r)}" for r in pretrained]
        sentences.append(f"Pretrained, {found} of {len(pretrained)} iEATs significant: {_named(named, 'iEATs')}.")
    finetuned = _grouped(
        [r for r in ieats if r["network"] == "finetuned"], ("analysis_set", "test", "model", "finetune_dataset")
    )
    if finetuned:
        every = sum(all(r["verdict"] == "significant" for r in rows) for _, rows in finetuned)
        none = sum(all(r["verdict"] != "significant" for r in rows) for _, rows in finetuned)
        notable = []
        for _, rows in sorted(finetuned, key=lambda g: not any(r["opposite"] for r in g[1])):
            r, ds = rows[0], [x["d"] for x in rows if x["d"] is not None]
            hits = sum(x["verdict"] == "significant" for x in rows)
            opposite = sum(x["opposite"] for x in rows)
            d = (
                "d not estimable"
                if not ds
                else f"d = {ds[0]:.2f}"
                if len(rows) == 1
                else f"d {min(ds):.2f} to {max(ds):.2f} over {len(ds)} seeds"
            )
            notable.append(
                f"{_pair(r, sets, models)} on {r['finetune_dataset']}: significant in {hits} of {len(rows)} seed"
                f"{'s' if len(rows) != 1 else ''}, {d}"
                + (f", against the tested direction in {opposite} of {len(rows)}" if opposite else "")
            )
        sentences.append(
            f"After finetuning, {every} of {len(finetuned)} iEATs are significant in every seed and {none} in none: "
            f"{_named(notable, 'iEATs')}."
        )
    scratch = [r for r in ieats if r["network"] == "scratch"]
    if scratch:
        named = [f"{_pair(r, sets, models)} {_d(r)}, {r['verdict']}" for r in scratch]
        shared = [_pair(r, sets, models) for r in scratch if _shares(r, finetuned)]
        sentences.append(
            f"Trained from scratch on the finetuning data alone (no pretraining): {_named(named, 'iEATs')}; "
            + (
                f"it has the finetuned networks' large effect (|d| >= {OPPOSITE_EFFECT}, same sign) for "
                f"{', '.join(shared)}, which the finetuning data alone can therefore produce."
                if shared
                else f"it has none of the finetuned networks' large effects (|d| >= {OPPOSITE_EFFECT})."
            )
        )
    predictions = [p for p in model["predictions"] if p["network"] == "finetuned"]
    if predictions:
        named = [f"{p['model']} finetuned on {p['dataset']} {_acts(p)}" for p in predictions]
        adjusted = f"its p {ADJUSTMENT_WORDS[model['settings']['adjust']]}-adjusted over the network's pairs"
        sentences.append(
            f"In the predictions (the primary measure of each pair, {adjusted}): {_named(named, 'pairs')}."
        )
    return sentences


#: A prediction verdict as a sentence's verb.
PREDICTION_PHRASES = {
    "amplifies": "amplifies",
    "reduces": "reduces",
    "neither": "neither amplifies nor reduces",
    "not estimable": "cannot be judged on",
}


def _acts(p: Mapping) -> str:
    """A network family's primary prediction verdict on one pair, with its contrast and what it pools."""
    seeds = f"{p['n_seeds']} seeds pooled" if p["seeds"] == "pooled" else f"seed {p['seeds']}"
    if p["estimate"] is None or p["ci_low"] is None:
        return f"{PREDICTION_PHRASES[p['verdict']]} {p['test']} ({seeds})"
    numbers = f"contrast {p['estimate']:+.3f} [{p['ci_low']:.3f}, {p['ci_high']:.3f}], {_p(p)}"
    return f"{PREDICTION_PHRASES[p['verdict']]} {p['test']} ({numbers}, {seeds})"


def _shares(scratch: Mapping, finetuned: Sequence[tuple[tuple, list[Mapping]]]) -> bool:
    """Whether a scratch network's d and the mean d of the finetuned seeds of its test, model and dataset are
    both large (|d| >= OPPOSITE_EFFECT) and of one sign."""
    key = tuple(scratch[k] for k in ("analysis_set", "test", "model", "finetune_dataset"))
    ds = [r["d"] for k, rows in finetuned if k == key for r in rows if r["d"] is not None]
    if not ds or scratch["d"] is None:
        return False
    mean = sum(ds) / len(ds)
    return min(abs(mean), abs(scratch["d"])) >= OPPOSITE_EFFECT and mean * scratch["d"] > 0


def _grouped(records: Sequence[Mapping], keys: Sequence[str]) -> list[tuple[tuple, list[Mapping]]]:
    groups: dict[tuple, list[Mapping]] = {}
    for r in records:
        groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    return list(groups.items())


def cannot_tell(model: Mapping) -> list[str]:
    """What this run cannot tell: too few networks for the link, prediction verdicts that the bootstrap's p floor
    cannot reach after adjustment, runs that did not converge, iEAT sets too small to detect the effects they
    estimate."""
    lines = []
    few = [r for r in model["link_correlation"] if str(r.get("verdict", "")).startswith("too few")]
    if few:
        r = few[0]
        lines.append(
            f"Whether the embedding's d ranks networks as their predictions do: {r['verdict']} "
            f"({len(few)} of {len(model['link_correlation'])} links)."
        )
    lines += _unreachable(model["predictions"], model["settings"]["alpha"])
    stalled = [c["run"] for c in model["convergence"] if not c["converged"]]
    if stalled:
        lines.append(
            f"{len(stalled)} of {len(model['convergence'])} training runs had not converged "
            f"({_named(stalled, 'runs', 'the findings')}): a high BTS may only mean light finetuning."
        )
    elif model["convergence"]:
        lines.append(f"Every one of the {len(model['convergence'])} training runs converged.")
    small = [
        r
        for r in model["ieat"]
        if r["verdict"] == "not significant"
        and None not in (r["d"], r["detectable_d"])
        and abs(r["d"]) < r["detectable_d"]
    ]
    if small:
        low, high = (f"{f(r['detectable_d'] for r in small):.2f}" for f in (min, max))
        lines.append(
            f"{len(small)} of {len(model['ieat'])} iEATs are not significant with |d| below the smallest d their "
            f"sets detect with 80% power ({low if low == high else f'{low} to {high}'}): absence of evidence, not "
            "evidence of absence."
        )
    return lines


def _unreachable(predictions: Sequence[Mapping], alpha: float) -> list[str]:
    """A line per family of primary prediction measures whose bootstrap p, at its floor 2 / (replicates + 1) and
    adjusted over the family's m pairs (m times the floor at the least, by Holm and by Benjamini-Hochberg), cannot
    go below alpha: no verdict but "neither" is possible, whatever the predictions."""
    lines, seen = [], set()
    for p in predictions:
        m, floor = p["family_size"], p["p_floor"]
        if p["family"] in seen or not m or floor is None or floor * m < alpha:
            continue
        seen.add(p["family"])
        lines.append(
            f"Whether the predictions of {p['family']} act on a pair: its contrasts' bootstrap p cannot go below "
            f"{floor:.2g}, adjusted over its {m} pair{'s' if m != 1 else ''} not below {min(1.0, floor * m):.2g}, "
            f"so none can reach alpha = {alpha:g} (analysis.predictions.bootstrap of at least "
            f"{math.floor(2 * m / alpha)} replicates could)."
        )
    return lines


@cache
def schema() -> dict:
    return json.loads(SCHEMA_FILE.read_text())


def validate(model: Mapping) -> None:
    """ValueError naming the first place where ``model`` breaks the schema."""
    import jsonschema

    errors = sorted(jsonschema.Draft202012Validator(schema()).iter_errors(model), key=lambda e: list(e.path))
    if errors:
        e = errors[0]
        raise ValueError(f"results model: {'/'.join(map(str, e.path)) or '(top)'}: {e.message}")


def dumps(model: Mapping) -> str:
    """The model as JSON text (NaN written as null)."""
    return json.dumps(model, indent=1, allow_nan=False, default=_plain) + "\n"


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON: {value!r}")
