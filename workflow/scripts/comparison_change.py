"""Two finetuning arms of one model compared on one analysis set: the same images in the networks finetuned on
``against`` and on ``arm`` with the same seeds (biastransfer.stats.comparison).

One row per iEAT and seed (the paired change of d, images as units) and one per iEAT over the seeds (seeds as
units), each with its interval, p-value and verdict in words.

Standalone: python workflow/scripts/comparison_change.py --against_embeddings ft-S-seed0.parquet
ft-S-seed1.parquet --arm_embeddings ft-I-seed0.parquet ft-I-seed1.parquet --settings '{"tests": [{"name": "t",
"X": "person_a", "Y": "person_b", "A": "surfboard", "B": "car"}], "bootstrap": 2000, "ci_level": 0.95, "seed": 0,
"permutations": 100000, "alpha": 0.05, "subject": "the intervention"}' --table out.csv
"""

from pathlib import Path

from biastransfer.atomic import write_csv
from biastransfer.embeddings import read_embeddings
from biastransfer.scripting import run
from biastransfer.stages import parse_stage
from biastransfer.stats.comparison import paired_change_table
from biastransfer.workflow.rules.analysis import ComparisonChangeSettings


def by_seed(paths: list) -> tuple[str, dict]:
    """``(dataset, {seed: embeddings})`` of finetuned stages' embedding files of one dataset."""
    paths = [paths] if isinstance(paths, str) else list(paths)
    stages = [parse_stage(Path(p).stem) for p in paths]
    datasets = {d for d, _ in stages}
    if len(datasets) != 1:
        raise ValueError(
            f"{', '.join(paths)}: embeddings of networks finetuned on {sorted(map(str, datasets))}, not on one dataset"
        )
    return datasets.pop(), {s: read_embeddings(p) for (_, s), p in zip(stages, paths)}


def main(against_embeddings: list, arm_embeddings: list, settings: ComparisonChangeSettings, table: str) -> None:
    if settings.bootstrap < 1:
        raise ValueError("analysis.ieat.bootstrap is 0: the per-seed change of d needs bootstrap replicates")
    _, before = by_seed(against_embeddings)
    _, after = by_seed(arm_embeddings)
    options = {k: v for k, v in settings.as_dict().items() if k != "tests"}
    write_csv(table, paired_change_table(before, after, settings.tests, **options))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
