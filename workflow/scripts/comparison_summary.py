"""Every compared pair of finetuning arms in one table (results/summary/comparison.csv, docs/formats.md): per
pair, the paired change of d of every analysis set and model (from its comparison tables), and the BTS, the
representation leakage, the prediction shift and the validation metric of both arms' networks side by side,
per seed and over the seeds (biastransfer.stats.comparison). The summaries of BTS, leakage (amplification.csv)
and prediction shift (link.csv) are read when the run writes them.

Standalone: python workflow/scripts/comparison_summary.py
--changes results/compare/I_vs_S/synthetic/democnn.csv --settings '{"pairs": [["I", "S"]], "ci_level": 0.95,
"alpha": 0.05, "permutations": 100000, "seed": 0}' --metrics results/finetune/S/democnn/seed0/metrics.json
results/finetune/I/democnn/seed0/metrics.json [--bts results/summary/bts.csv]
[--amplification results/summary/amplification.csv] [--link results/summary/link.csv]
--summary results/summary/comparison.csv
"""

import json
from pathlib import Path

import pandas as pd

from biastransfer.atomic import write_csv
from biastransfer.scripting import run
from biastransfer.stats.comparison import (
    SUMMARY_COLUMNS,
    accuracy_values,
    bts_values,
    embedding_rows,
    leakage_values,
    paired_rows,
    prediction_values,
)
from biastransfer.workflow.rules.analysis import ComparisonSummarySettings


def _paths(given: list | str | None) -> list[str]:
    return [given] if isinstance(given, str) else list(given or [])


def _read(given: list | str | None) -> pd.DataFrame | None:
    """A summary the run writes (one path), or None."""
    paths = _paths(given)
    return pd.read_csv(paths[0], keep_default_na=False, na_values=[""], dtype={"seed": str}) if paths else None


def run_metrics(path: str) -> dict:
    """A finetuning run's metrics.json, its dataset, model and seed those of its path
    (results/finetune/{dataset}/{model}/seed{seed}/metrics.json)."""
    dataset, model, seed = Path(path).parts[-4:-1]
    return json.loads(Path(path).read_text()) | {
        "dataset": dataset,
        "model": model,
        "seed": int(seed.removeprefix("seed")),
    }


def main(
    changes: list,
    metrics: list,
    settings: ComparisonSummarySettings,
    summary: str,
    bts: list | str | None = None,
    amplification: list | str | None = None,
    link: list | str | None = None,
) -> None:
    pairs = {f"{arm}_vs_{against}": (arm, against) for arm, against in settings.pairs}
    frames = []
    for path in _paths(changes):  # results/compare/{arm}_vs_{against}/{analysis_set}/{model}.csv
        name, analysis_set, model = Path(path).parts[-3], Path(path).parts[-2], Path(path).stem
        if name not in pairs:
            raise ValueError(f"{path}: pair {name!r} is not one of {', '.join(pairs)}")
        table = pd.read_csv(path, keep_default_na=False, na_values=[""], dtype={"seed": str, "role": str})
        frames.append(embedding_rows(table, *pairs[name], analysis_set, model))
    options = settings.as_dict()
    resampling = {k: options[k] for k in ("ci_level", "alpha", "permutations", "seed")}
    values = {
        "bts": bts_values(t) if (t := _read(bts)) is not None else None,
        "leakage": leakage_values(t) if (t := _read(amplification)) is not None else None,
        "prediction": prediction_values(t) if (t := _read(link)) is not None else None,
        "accuracy": accuracy_values([run_metrics(p) for p in _paths(metrics)]),
    }
    for arm, against in settings.pairs:
        frames += [paired_rows(v, arm, against, level, **resampling) for level, v in values.items() if v is not None]
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(SUMMARY_COLUMNS))
    write_csv(summary, frame)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
