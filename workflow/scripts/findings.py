"""Write the run's findings in words (reStructuredText and HTML) from the summary tables.

Standalone: python workflow/scripts/findings.py --ieat results/summary/ieat.csv --bts results/summary/bts.csv
--tests '{"synthetic": [{"name": "t", "X": "person_a", "Y": "person_b", "A": "surfboard", "B": "car"}]}'
--alpha 0.01 --findings findings.rst --html findings.html [--ieat_scratch results/summary/ieat_scratch.csv]
[--curves results/finetune/D/M/seed0/curve.csv ...] [--scratch results/scratch/D/M/seed0/metrics.json ...]
[--attribution results/summary/attribution.csv]
[--ieat_change results/summary/ieat_change.csv --ieat_seeds results/summary/ieat_seeds.csv
--similarity_change results/summary/similarity_change.csv] [--adjust holm]
[--layers results/summary/layer_profile.csv] [--trajectory results/summary/trajectory.csv]
[--claims results/summary/claims.csv]
[--amplification results/summary/amplification.csv --amplification_terms results/summary/amplification_terms.csv
--planted '{"surfboard": "person_a"}'] [--link results/summary/link.csv --link_correlation results/summary/link_correlation.csv]
[--intervention results/summary/intervention.csv]
"""

import json
from pathlib import Path

import pandas as pd

from biastransfer.atomic import write_text
from biastransfer.report.findings import (
    describe_amplification,
    describe_attribution,
    describe_claims,
    describe_convergence,
    describe_findings,
    describe_interventions,
    describe_layers,
    describe_link,
    describe_reference,
    describe_trajectories,
)
from biastransfer.report.html import rst_to_html
from biastransfer.scripting import run


def curve_label(path: str) -> str:
    """``model finetuned on dataset, seed n`` from results/finetune/{dataset}/{model}/seed{n}/curve.csv."""
    seed, model, dataset = Path(path).parts[-2:-5:-1]
    return f"{model} finetuned on {dataset}, {seed.replace('seed', 'seed ')}"


def scratch_curve(path: str) -> tuple[str, pd.DataFrame]:
    """Label and training curve of a scratch reference network from its metrics.json."""
    metrics = json.loads(Path(path).read_text())
    label = f"{metrics['model']} trained from scratch on {metrics['dataset']} (reference), seed {metrics['seed']}"
    return label, pd.DataFrame(metrics["history"])


def _read(path: str | None) -> pd.DataFrame | None:
    if not path:
        return None
    frame = pd.read_csv(path, keep_default_na=False, na_values=[""])
    return frame if len(frame.columns) > 1 else None


def _read_one(value: list | str | None) -> pd.DataFrame | None:
    """The table of an optional input: a path, or a list of none or one path (a rule's optional input)."""
    return _read(value if isinstance(value, str) else next(iter(value or []), None))


def main(
    ieat: str,
    bts: str,
    tests: dict,
    findings: str,
    html: str,
    alpha: float = 0.05,
    curves: list | None = None,
    scratch: list | None = None,
    attribution: list | str | None = None,
    ieat_change: str | None = None,
    ieat_seeds: str | None = None,
    similarity_change: str | None = None,
    adjust: str = "holm",
    layers: list | str | None = None,
    trajectory: list | str | None = None,
    ieat_scratch: list | str | None = None,
    claims: list | str | None = None,
    amplification: list | str | None = None,
    amplification_terms: list | str | None = None,
    planted: dict | None = None,
    link: list | str | None = None,
    link_correlation: list | str | None = None,
    intervention: list | str | None = None,
) -> None:
    bts_table = pd.read_csv(bts, keep_default_na=False, na_values=[""])
    text = describe_findings(
        pd.read_csv(ieat, keep_default_na=False, na_values=[""]),
        bts_table,
        tests,
        alpha,
        adjust=adjust,
        change=_read(ieat_change),
        seeds=_read(ieat_seeds),
        similarity_change=_read(similarity_change),
        scratch=_read_one(ieat_scratch),
    )
    paths = [attribution] if isinstance(attribution, str) else list(attribution or [])
    extra = [
        *describe_convergence(
            {
                **{curve_label(p): pd.read_csv(p) for p in curves or []},
                **dict(map(scratch_curve, scratch or [])),
            }
        ),
        *describe_reference(bts_table),
        *describe_attribution(pd.concat([pd.read_csv(p) for p in paths]) if paths else None),
        *describe_layers(_read_one(layers), alpha, adjust=adjust),
        *describe_trajectories(_read_one(trajectory)),
        *describe_amplification(_read_one(amplification), _read_one(amplification_terms), planted),
        *describe_link(_read_one(link), _read_one(link_correlation)),
        *describe_interventions(_read_one(intervention)),
        *describe_claims(_read_one(claims)),
    ]
    if extra:
        text += "\n" + "\n".join(extra) + "\n"
    write_text(findings, text)
    write_text(html, rst_to_html(text, part="whole"))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
