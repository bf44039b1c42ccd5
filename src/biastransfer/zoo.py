"""The model zoo (config/zoo.yaml, rules/zoo.smk): per-model status records, resources by model size, config checks.

No torch here: the DAG reads these at planning time. A model's status record is written once by the
``zoo_status`` checkpoint, which fetches its weights and builds it; a model whose record says it failed is
left out of the analysis and named in the ranked table's summary, so one bad model never stops the others.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from biastransfer.atomic import write_text
from biastransfer.provenance import workflow_provenance
from biastransfer.references import ieat_reference_problems

STATUS_FORMAT = "biastransfer-zoo-status/1"
#: biastransfer.models.weights.WEIGHTS_RECORD_FORMAT (not imported: that would import torch at DAG time)
PASSED_FORMAT = "biastransfer-weights/1"
DEFAULT_MEM_MB = 4000


def write_failure(path: str | Path, *, model: str, error: str) -> dict:
    """Write (atomically) the record of a model that failed its check. A passed check writes a weights
    record instead (``models.weights.write_weights_record`` with ``params``), which the embed job reads."""
    record = {"format": STATUS_FORMAT, "model": model, "ok": False, "error": error, **workflow_provenance()}
    write_text(path, json.dumps(record, indent=2, sort_keys=True) + "\n")
    return record


def read_status(path: str | Path) -> dict:
    """``{model, ok, error, params}`` of a status record, passed or failed; ValueError naming the file otherwise."""
    try:
        record = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable zoo status record ({exc})") from exc
    kind = record.get("format") if isinstance(record, dict) else None
    if kind == PASSED_FORMAT and "params" in record:
        return {"model": record["model"], "ok": True, "error": None, "params": record["params"]}
    if kind == STATUS_FORMAT:
        return {"model": record["model"], "ok": False, "error": record["error"], "params": None}
    raise ValueError(f"{path}: not a zoo status record (a weights record with params, or {STATUS_FORMAT!r})")


def left_out_models(statuses) -> dict[str, str]:
    """{model: why} of the zoo models whose status record (``statuses``: their paths) says the check failed."""
    failed = [record for record in map(read_status, statuses or []) if not record["ok"]]
    return {r["model"]: f"failed its zoo check: {r['error'].splitlines()[0]}" for r in failed}


def embed_settings(entry: Mapping, embed: Mapping) -> tuple[int, int]:
    """(batch size, memory in MB) of a model's embedding job from its ``about.params_m`` and
    ``analysis.embed.sizes`` (the first size class that holds it); else ``batch_size`` and 4000 MB."""
    params_m = (entry.get("about") or {}).get("params_m")
    if params_m is not None:
        for size in sorted(embed["sizes"], key=lambda s: s["up_to_m"]):
            if params_m <= size["up_to_m"]:
                return int(size["batch_size"]), int(size["mem_mb"])
    return int(embed["batch_size"]), DEFAULT_MEM_MB


def zoo_problems(config: Mapping) -> list[str]:
    """``zoo`` (of the filled config): what it names that the config does not define, zoo models without
    ``about``, and a run with neither finetuning nor a zoo (whose before/after analysis would have nothing to
    compare)."""
    zoo = config["zoo"]
    if not zoo:
        if config["finetune"]["datasets"]:
            return []
        return [
            (
                "finetune.datasets: empty, so nothing is finetuned; a pretrained-only audit needs a zoo "
                "section (config/zoo.yaml, docs/zoo.md)"
            )
        ]
    problems = []
    rank = zoo["rank_by"]
    problems += ieat_reference_problems("zoo.rank_by", config, rank["analysis_set"], rank["test"])
    if config["finetune"]["datasets"]:
        problems.append("finetune.datasets: a zoo audit is pretrained-only; set it to []")
    for name, entry in config["models"].items():
        if entry.get("source") == "workflow":
            problems.append(f"models.{name}: a zoo audits pretrained models; source 'workflow' trains one here")
        missing = [k for k in ("family", "data") if k not in (entry.get("about") or {})]
        if missing:
            problems.append(f"models.{name}.about: {' and '.join(missing)} missing (the ranked table states them)")
    return problems
