# Configuration checks, wildcard constraints, input functions and target lists.
import sys

from snakemake.utils import validate

sys.path.insert(0, str(Path(workflow.basedir) / "workflow" / "scripts"))

from biastransfer import config as cfg  # noqa: E402


validate(config, schema="../workflow/schemas/config.schema.yaml")
cfg.check_config(config)


def names_pattern(names):
    """A wildcard regex matching exactly these names (or nothing, when there are none)."""
    return "|".join(names) if names else "(?!x)x"


SYNTHETIC_DATASETS = [d for d, s in config["datasets"].items() if s["kind"] == "synthetic"]
SYNTHETIC_SETS = [a for a, s in config["analysis_sets"].items() if s["source"] == "synthetic"]
WORKFLOW_MODELS = [m for m, s in config["models"].items() if s.get("source") == "workflow"]


wildcard_constraints:
    dataset=names_pattern(list(config["datasets"])),
    synthetic=names_pattern(SYNTHETIC_DATASETS),
    synthetic_set=names_pattern(SYNTHETIC_SETS),
    analysis_set=names_pattern(list(config["analysis_sets"])),
    model=names_pattern(list(config["models"])),
    stage=r"pretrained|ft-[A-Za-z0-9_]+-seed[0-9]+",
    seed=r"[0-9]+",


def model_entry(model):
    return config["models"][model]


def pretrained_weights(wildcards):
    """The pretrained weights file of a model: trained here (demo) or fetched."""
    if model_entry(wildcards.model).get("source") == "workflow":
        return f"results/pretrain/{wildcards.model}/model.safetensors"
    return f"results/weights/{wildcards.model}/weights.done"


def stage_weights(wildcards):
    """Weights to embed with: the pretrained model, or one finetuned checkpoint."""
    dataset, seed = cfg.parse_stage(wildcards.stage)
    if dataset is None:
        return pretrained_weights(wildcards)
    return f"results/finetune/{dataset}/{wildcards.model}/seed{seed}/model.safetensors"


def leakage_inputs(wildcards):
    """Every training split of every dataset a model is trained on, checked against an analysis set."""
    return [
        f"results/splits/{dataset}/{split}.parquet"
        for dataset in cfg.training_datasets(config)
        for split in ("train", "val")
    ]


def similarity_tables(wildcards):
    return [
        f"results/similarity/{wildcards.analysis_set}/{wildcards.model}/{stage}.csv"
        for stage in [cfg.PRETRAINED, *[cfg.finetuned_stage(wildcards.dataset, s) for s in config["finetune"]["seeds"]]]
    ]


def all_pairs():
    """(analysis_set, model) for every analysis set and model."""
    return [(a, m) for a in config["analysis_sets"] for m in config["models"]]


def summary_inputs(kind):
    """The per-job tables that make up one summary table."""
    if kind == "bts":
        return [
            f"results/bts/{a}/{m}/ft-{d}.csv" for a, m in all_pairs() for d in config["finetune"]["datasets"]
        ]
    return [f"results/{kind}/{a}/{m}/{s}.csv" for a, m in all_pairs() for s in cfg.stages(config)]


def finetune_runs():
    return [
        f"results/finetune/{d}/{m}/seed{s}/metrics.json"
        for d in config["finetune"]["datasets"]
        for m in config["models"]
        for s in config["finetune"]["seeds"]
    ]


def analysis_targets():
    return [
        "results/summary/similarity.csv",
        "results/summary/bts.csv",
        "results/summary/ieat.csv",
        "results/summary/analysis_sets.csv",
        "results/summary/finetune_metrics.csv",
        "results/summary/findings.md",
    ]


def all_targets():
    return analysis_targets() + report_targets()
