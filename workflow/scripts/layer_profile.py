"""iEAT and BTS at every profiled layer of one model on one analysis set (a tidy table, docs/formats.md).

Standalone: python workflow/scripts/layer_profile.py --embeddings results/layers/A/M/embeddings/pretrained
results/layers/A/M/embeddings/ft-d-seed0 ... --table P.csv
--settings '{"tests": [{"name": "t", "X": "person_a", "Y": "person_b", "A": "surfboard", "B": "car"}], "lists": {},
"ieat": {"permutations": 1000, "alternative": "greater", "method": "auto", "seed": 0, "bootstrap": 200,
"ci_level": 0.95}, "bts": {"pvalue": "permutation", "bootstrap": 200, "ci_level": 0.95, "seed": 0},
"similarity": {"method": "exact", "iterations": 50, "seed": 0}}' --analysis_set A --model M
(the settings: LayerProfileSettings, src/biastransfer/workflow/rules/analysis.py; a job's are in its log)
"""

import logging
from pathlib import Path

from biastransfer.atomic import write_csv
from biastransfer.embeddings import read_embeddings, read_metadata
from biastransfer.scripting import run
from biastransfer.stats.layer_profile import PROFILE_COLUMNS, layer_profile_table
from biastransfer.workflow.rules.analysis import LayerProfileSettings

log = logging.getLogger(__name__)


def read_stage(directory: str) -> tuple[dict, dict]:
    """``({layer: embeddings}, {layer: {depth, dim, pool}})`` of one stage's folder, in depth order."""
    paths = sorted(Path(directory).glob("*.parquet"))
    if not paths:
        raise FileNotFoundError(f"{directory}: no layer embeddings (*.parquet)")
    metas = {p: read_metadata(p) for p in paths}
    missing = [str(p) for p, m in metas.items() if "depth" not in m or "layer" not in m]
    if missing:
        raise ValueError(f"{', '.join(missing)}: no layer or depth in the provenance (not written by embed_layers)")
    ordered = sorted(paths, key=lambda p: metas[p]["depth"])
    tables = {metas[p]["layer"]: read_embeddings(p) for p in ordered}
    info = {
        metas[p]["layer"]: {"depth": metas[p]["depth"], "dim": metas[p]["dim"], "pool": metas[p]["pool"]}
        for p in ordered
    }
    return tables, info


def main(
    embeddings: list,
    table: str,
    settings: LayerProfileSettings,
    analysis_set: str = "",
    model: str = "",
) -> None:
    stages, info = {}, {}
    for directory in embeddings:
        stages[Path(directory).name], info = read_stage(directory)
    profile = layer_profile_table(
        stages,
        info,
        tests=settings.tests,
        lists=settings.lists,
        ieat_options=settings.ieat.as_dict(),
        bts_options=settings.bts.as_dict(),
        similarity_options=settings.similarity.as_dict(),
    )
    profile = profile.assign(analysis_set=analysis_set, model=model)[list(PROFILE_COLUMNS)]
    write_csv(table, profile)
    for row in profile[(profile["measure"] == "ieat") & (profile["stage"] == "pretrained")].itertuples():
        log.info("%s %s: d = %.3f [%.3f, %.3f]", row.layer, row.item, row.estimate, row.ci_low, row.ci_high)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
