"""Write the run's findings in words (reStructuredText and HTML) from the summary tables.

Standalone: python workflow/scripts/findings.py --summaries results/summary/ieat.csv results/summary/bts.csv
[results/summary/ieat_change.csv results/summary/ieat_seeds.csv results/summary/similarity_change.csv ...]
--settings '{"tests": {"synthetic": [{"name": "t", "X": "person_a", "Y": "person_b", "A": "surfboard", "B": "car"}]},
"alpha": 0.01, "adjust": "holm", "planted": {"surfboard": "person_a"}}' --findings findings.rst --html findings.html
[--curves results/finetune/D/M/seed0/curve.csv ...] [--scratch results/scratch/D/M/seed0/metrics.json ...]
Each summary is known by its file name (results/summary/<name>.csv: ieat and bts are needed; ieat_scratch,
cka, attribution, ieat_change, ieat_seeds, similarity_change, layer_profile, trajectory, claims, factors,
amplification, amplification_terms, link, link_correlation, intervention and comparison are read when given).
"""

from pathlib import Path

import pandas as pd

from biastransfer.atomic import write_text
from biastransfer.report.findings import (
    describe_amplification,
    describe_attribution,
    describe_claims,
    describe_comparisons,
    describe_convergence,
    describe_factors,
    describe_findings,
    describe_interventions,
    describe_layers,
    describe_link,
    describe_reference,
    describe_representation,
    describe_trajectories,
)
from biastransfer.report.findings.networks import training_runs
from biastransfer.report.html import rst_to_html
from biastransfer.scripting import run
from biastransfer.workflow.rules.report import FindingsSettings


def _read(path: str | None) -> pd.DataFrame | None:
    if not path:
        return None
    frame = pd.read_csv(path, keep_default_na=False, na_values=[""])
    return frame if len(frame.columns) > 1 else None


def main(
    summaries: list,
    findings: str,
    html: str,
    settings: FindingsSettings,
    curves: list | None = None,
    scratch: list | None = None,
) -> None:
    tables = {Path(p).stem: p for p in ([summaries] if isinstance(summaries, str) else summaries)}
    missing = [name for name in ("ieat", "bts") if name not in tables]
    if missing:
        raise ValueError(f"--summaries: no {' or '.join(missing)} summary among {sorted(tables)}")
    alpha, adjust = settings.alpha, settings.adjust
    bts_table = _read(tables["bts"])
    text = describe_findings(
        _read(tables["ieat"]),
        bts_table,
        settings.tests,
        alpha,
        adjust=adjust,
        change=_read(tables.get("ieat_change")),
        seeds=_read(tables.get("ieat_seeds")),
        similarity_change=_read(tables.get("similarity_change")),
        scratch=_read(tables.get("ieat_scratch")),
    )
    extra = [
        *describe_convergence(training_runs(curves or [], scratch or [])),
        *describe_reference(bts_table),
        *describe_representation(_read(tables.get("cka")), bts_table),
        *describe_attribution(_read(tables.get("attribution"))),
        *describe_layers(_read(tables.get("layer_profile")), alpha, adjust=adjust),
        *describe_trajectories(_read(tables.get("trajectory"))),
        *describe_amplification(
            _read(tables.get("amplification")), _read(tables.get("amplification_terms")), settings.planted
        ),
        *describe_link(_read(tables.get("link")), _read(tables.get("link_correlation")), alpha, adjust),
        *describe_interventions(_read(tables.get("intervention"))),
        *describe_comparisons(_read(tables.get("comparison"))),
        *describe_claims(_read(tables.get("claims"))),
        *describe_factors(_read(tables.get("factors"))),
    ]
    if extra:
        text += "\n" + "\n".join(extra) + "\n"
    write_text(findings, text)
    write_text(html, rst_to_html(text, part="whole"))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
