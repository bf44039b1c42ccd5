# Glue between the config and the rules: the config checks, the run's plan (biastransfer.workflow.plan:
# every target, path and rule's settings), wildcard constraints, resources and job groups. Each feature's
# input functions are in rules/inputs.smk (included below; Snakemake lint: no rules beside functions).
import os

from biastransfer.workflow import config as cfg  # noqa: E402
from biastransfer.workflow.config_check import validate_config  # noqa: E402
from biastransfer.gpus import books_gpu  # noqa: E402
from biastransfer.paths import path  # noqa: E402
from biastransfer.workflow.plan import Plan  # noqa: E402

# Every check of the config before any job (biastransfer.workflow.config_check.validate_config, the one that
# `python -m biastransfer.workflow.config FILE...` runs): keys and types against the schema (integers strictly), every
# default filled, so rules read config[...] without defaults of their own (results/summary/config.yaml shows
# them all), the filled config's cross-references, each model's network and its layer profile; every problem named at once.
validate_config(config)

# The run's plan: every path, target and rule's settings (biastransfer.workflow.plan).
PLAN = Plan(config, BASEDIR)


include: "inputs.smk"


wildcard_constraints:
    dataset=names_pattern(PLAN.datasets),
    synthetic=names_pattern(PLAN.datasets_of_kind("synthetic")),
    synthetic_set=names_pattern(PLAN.analysis_sets_of_source("synthetic")),
    analysis_set=names_pattern(PLAN.analysis_sets),
    model=names_pattern(PLAN.models),
    stage=r"pretrained|(ft|scratch)-[A-Za-z0-9_]+-seed[0-9]+",
    seed=r"[0-9]+",


# The many small per-model analysis jobs (similarity, ieat, bts, change, trajectory, layer_profile and
# comparison_change of one model, over all analysis sets and stages) share one job group per model.
# Local runs ignore groups; on a cluster profiles/slurm's `group-components` makes each model's group one
# job (profiles/slurm/README.md).
# model_analyses (rules/analysis.smk), in the group too, reads every one of them, so that the group is
# one connected set of jobs, which a SLURM job runs side by side (unconnected parts run one after another).
MODEL_STATS_GROUP = "stats_{model}"

# In a pretrained-only config (no finetuning: the zoo) a model's embed and embed_layers jobs join the group
# too, so that each model is one SLURM job; with finetuning they stay jobs of their own, each submitted as
# soon as its weights exist, while the group waits for every finetuned stage of its model.
EMBEDDING_GROUP = None if cfg.finetuned_stages(config) else MODEL_STATS_GROUP


# GPUs: one at a time unless `--resources gpu=N`, counted per job (local scope). Locally that is the run's
# GPUs; on a cluster each job's, so a group runs its GPU jobs one after another on the one GPU it asks for
# (a job step is not passed the run's --resources, so the default is declared here).
resource_scopes:
    gpu="local",


if "gpu" not in workflow.global_resources:
    workflow.global_resources["gpu"] = 1

# A job books a GPU whenever it will run on one: `device: cuda`, or `auto` where this machine sees a GPU
# (biastransfer.gpus; on a cluster the profile's set-resources decide). Each job then takes a GPU of its
# own (docs/gpu.md).
FINETUNE_GPUS = books_gpu(config["finetune"]["device"])
EMBED_GPUS = books_gpu(config["analysis"]["embed"]["device"])


# Resource presets (as nf-core's process labels): the rules that need no more than these name one instead of
# typing numbers; training sizes its own from the config (functions above), and a rule whose needs no other
# rule shares (a whole dataset's download, say) types its own.
RESOURCES = {
    # a few small tables in, one table or page out
    "small": {"mem_mb": 500, "runtime": 5},
    # every job's table gathered into one
    "gather": {"mem_mb": 1000, "runtime": 5},
    # a figure
    "plot": {"mem_mb": 1000, "runtime": 10},
    # statistics on one model's embeddings
    "stats": {"mem_mb": 2000, "runtime": 10},
    # every network's predictions and embeddings of an evaluation split, one network family at a time:
    # 2.7 GB and 10 min measured for the paper's (six Open Images networks on 125,436 test images; the
    # embedding leakage's PCA of each network's attributed images is the peak; docs/benchmarks.md)
    "predictions": {"mem_mb": 4000, "runtime": 30},
    # network-bound
    "download": {"mem_mb": 1000, "runtime": 60},
    # one split of a real dataset and its labels
    "split": {"mem_mb": 4000, "runtime": 30},
    # a real dataset's whole annotation files
    "annotations": {"mem_mb": 8000, "runtime": 60},
}
