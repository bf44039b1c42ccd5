# Configuration checks, wildcard constraints, input functions and target lists.
import copy
import json
import os
import sys

from snakemake.utils import validate

sys.path.insert(0, str(Path(workflow.basedir) / "workflow" / "scripts"))

from biastransfer import config as cfg  # noqa: E402
from biastransfer.zoo import embed_settings, read_status, zoo_problems  # noqa: E402

# The config as written; then the schema checks keys and types and fills every default (set_default),
# so rules read config[...] without defaults of their own (results/summary/config.yaml shows them all).
GIVEN_CONFIG = copy.deepcopy(config)
validate(config, schema="../workflow/schemas/config.schema.yaml", set_default=True)
config.update(json.loads(json.dumps(config)))  # no two entries share one default object
cfg.check_config(GIVEN_CONFIG)
FILLED_PROBLEMS = cfg.bootstrap_problems(config) + zoo_problems(
    config
)  # checks that read defaults
if FILLED_PROBLEMS:
    raise ValueError("invalid configuration:\n  " + "\n  ".join(FILLED_PROBLEMS))


def names_pattern(names):
    """A wildcard regex matching exactly these names (or nothing, when there are none)."""
    return "|".join(names) if names else "(?!x)x"


SYNTHETIC_DATASETS = [
    d for d, s in config["datasets"].items() if s["kind"] == "synthetic"
]
SYNTHETIC_SETS = [
    a for a, s in config["analysis_sets"].items() if s["source"] == "synthetic"
]
WORKFLOW_MODELS = [
    m for m, s in config["models"].items() if s.get("source") == "workflow"
]


wildcard_constraints:
    dataset=names_pattern(list(config["datasets"])),
    synthetic=names_pattern(SYNTHETIC_DATASETS),
    synthetic_set=names_pattern(SYNTHETIC_SETS),
    analysis_set=names_pattern(list(config["analysis_sets"])),
    model=names_pattern(list(config["models"])),
    stage=r"pretrained|(ft|scratch)-[A-Za-z0-9_]+-seed[0-9]+",
    seed=r"[0-9]+",


def model_entry(model):
    """A model's config entry, less what only the zoo reads (``about``: not a param of the model's jobs)."""
    return {k: v for k, v in config["models"][model].items() if k != "about"}


def pretrained_weights(wildcards):
    """The pretrained weights file of a model: trained here (demo) or fetched."""
    if model_entry(wildcards.model).get("source") == "workflow":
        return f"results/pretrain/{wildcards.model}/model.safetensors"
    if config[
        "zoo"
    ]:  # the zoo's check fetched them: its record of a passed model is a weights record
        return f"results/zoo/status/{wildcards.model}.json"
    return f"results/weights/{wildcards.model}/weights.done"


def stage_weights(wildcards):
    """Weights to embed with: the pretrained model, one finetuned checkpoint, or one scratch reference."""
    dataset, seed = cfg.parse_stage(wildcards.stage)
    if dataset is None:
        return pretrained_weights(wildcards)
    root = "scratch" if cfg.stage_kind(wildcards.stage) == "scratch" else "finetune"
    return f"results/{root}/{dataset}/{wildcards.model}/seed{seed}/model.safetensors"


def leakage_inputs(wildcards):
    """Every training split of every dataset a model is trained on, checked against an analysis set."""
    return [
        f"results/splits/{dataset}/{split}.parquet"
        for dataset in cfg.training_datasets(config)
        for split in ("train", "val")
    ]


def finetuned_similarity_tables(wildcards):
    """The similarity tables of every seed finetuned on the BTS's dataset."""
    return [
        f"results/similarity/{wildcards.analysis_set}/{wildcards.model}/{stage}.csv"
        for stage in [
            cfg.finetuned_stage(wildcards.dataset, s)
            for s in cfg.finetune_seeds(config, wildcards.dataset)
        ]
    ]


def leakage_checks():
    """Every analysis set's leakage check; training waits for them (an unnamed input: ordering only)."""
    return expand(
        "results/checks/leakage/{analysis_set}.ok",
        analysis_set=config["analysis_sets"],
    )


def finetuned_embeddings(wildcards):
    """The embeddings of every seed finetuned on the dataset (the same images as the pretrained ones)."""
    return [
        f"results/embeddings/{wildcards.analysis_set}/{wildcards.model}/{stage}.parquet"
        for stage in [
            cfg.finetuned_stage(wildcards.dataset, s)
            for s in cfg.finetune_seeds(config, wildcards.dataset)
        ]
    ]


def change_inputs(name):
    """The per-job change tables of one kind (ieat, similarity, ieat_seeds)."""
    return [
        f"results/change/{a}/{m}/ft-{d}/{name}.csv"
        for a, m in all_pairs()
        for d in config["finetune"]["datasets"]
    ]


def reference_tables(wildcards):
    """Similarity tables of the scratch reference networks (none without ``analysis.bts.reference``)."""
    return [
        f"results/similarity/{wildcards.analysis_set}/{wildcards.model}/{cfg.scratch_stage(wildcards.dataset, s)}.csv"
        for s in cfg.reference_seeds(config, wildcards.dataset)
    ]


def zoo_ok_models():
    """The zoo models whose check passed (input functions only: it waits for the zoo_status checkpoint)."""
    return [
        m
        for m in config["models"]
        if read_status(checkpoints.zoo_status.get(model=m).output.status)["ok"]
    ]


def all_pairs():
    """(analysis_set, model) for every analysis set and model."""
    return [(a, m) for a in config["analysis_sets"] for m in config["models"]]


def analysed_pairs():
    """(analysis_set, model) of every model, less a zoo's models that failed their check (rules/zoo.smk;
    input functions only: it waits for the zoo_status checkpoint)."""
    if not config["zoo"]:
        return all_pairs()
    ok = set(zoo_ok_models())
    return [(a, m) for a, m in all_pairs() if m in ok]


def summary_inputs(kind):
    """The per-job tables that make up one summary table."""
    if kind == "bts":
        return [
            f"results/bts/{a}/{m}/ft-{d}.csv"
            for a, m in all_pairs()
            for d in config["finetune"]["datasets"]
        ]
    return [
        f"results/{kind}/{a}/{m}/{s}.csv"
        for a, m in analysed_pairs()
        for s in cfg.stages(config)
    ]


def finetune_runs(name="metrics.json"):
    return [
        f"results/finetune/{d}/{m}/seed{s}/{name}"
        for d in config["finetune"]["datasets"]
        for m in config["models"]
        for s in cfg.finetune_seeds(config, d)
    ]


def scratch_runs():
    """The metrics (with the training curve) of every scratch reference network."""
    return [
        f"results/scratch/{d}/{m}/seed{s}/metrics.json"
        for d in config["finetune"]["datasets"]
        for m in config["models"]
        for s in cfg.reference_seeds(config, d)
    ]


# Layer profiles (rules/layers.smk)
def layer_targets():
    """Every output of this file (none unless analysis.layers.enabled)."""
    if not config["analysis"]["layers"]["enabled"]:
        return []
    return (
        ["results/summary/layer_profile.csv"]
        + [
            f"results/figures/{a}/{m}/layers.{ext}"
            for a, m in all_pairs()
            for ext in ("png", "pdf")
        ]
        + [f"results/tables/layers_{a}.tex" for a in config["analysis_sets"]]
    )


def layer_profile_tables():
    """The per-model layer profiles behind the summary (for the findings; none when disabled)."""
    return (
        ["results/summary/layer_profile.csv"]
        if config["analysis"]["layers"]["enabled"]
        else []
    )


def stage_layer_embeddings(wildcards):
    """The layer-embedding folders of every stage (pretrained and each finetuned seed) of one model."""
    return [
        f"results/layers/{wildcards.analysis_set}/{wildcards.model}/embeddings/{stage}"
        for stage in cfg.stages(config)
    ]


def attribution_targets():
    """The between-network comparisons' table, when ``analysis.attribution.comparisons`` lists any."""
    if config["analysis"]["attribution"]["comparisons"]:
        return ["results/summary/attribution.csv"]
    return []


def analysis_targets():
    return [
        "results/summary/similarity.csv",
        "results/summary/bts.csv",
        "results/summary/ieat.csv",
        "results/summary/ieat_change.csv",
        "results/summary/similarity_change.csv",
        "results/summary/ieat_seeds.csv",
        "results/summary/analysis_sets.csv",
        "results/summary/finetune_metrics.csv",
        "results/summary/findings.html",
        "results/summary/provenance.csv",
        "results/summary/config.yaml",
        *attribution_targets(),
        *model_analyses_done(config["models"]),
    ]


def all_targets():
    if config["zoo"]:
        return ZOO_TARGETS
    return analysis_targets() + REPORT_TARGETS + TRAJECTORY_TARGETS + layer_targets()


def trajectory_on():
    """Whether finetune.trajectory asks for embeddings after some epochs (off: YAML may read it as false)."""
    return config.get("finetune", {}).get("trajectory", "off") not in ("off", False)


def trajectory_summary():
    """The trajectory summary table, when trajectories are on (the findings read it)."""
    return ["results/summary/trajectory.csv"] if trajectory_on() else []


def trajectory_folders(wildcards):
    """The trajectory embeddings (one folder per seed) of a model finetuned on a dataset."""
    return [
        f"results/trajectory/{wildcards.analysis_set}/{wildcards.model}/{cfg.finetuned_stage(wildcards.dataset, s)}"
        for s in cfg.finetune_seeds(config, wildcards.dataset)
    ]


def trajectory_metrics(wildcards):
    """The metrics (best epoch, training curve) of every seed of a model finetuned on a dataset."""
    return [
        f"results/finetune/{wildcards.dataset}/{wildcards.model}/seed{s}/metrics.json"
        for s in cfg.finetune_seeds(config, wildcards.dataset)
    ]


def trajectory_io(section):
    """The finetune rule's extra inputs, outputs and params when ``finetune.trajectory`` is on (else none,
    so that turning it on or off leaves the rule as it was)."""
    if not trajectory_on():
        return {}
    sets = list(config["analysis_sets"])
    return {
        "input": {
            "manifests": [f"results/analysis_sets/{a}/manifest.parquet" for a in sets]
        },
        "output": {
            "trajectory": [
                directory(
                    f"results/trajectory/{a}/{{model}}/ft-{{dataset}}-seed{{seed}}"
                )
                for a in sets
            ]
        },
        "params": {
            "analysis_sets": sets,
            "trajectory_epochs": lambda wildcards: cfg.trajectory_epochs(
                config, wildcards.model, wildcards.dataset
            ),
            "embed_batch_size": config["analysis"]["embed"]["batch_size"],
        },
    }[section]


# Real datasets (rules/datasets.smk)
REAL_DATASETS = [
    d
    for d, s in config["datasets"].items()
    if s["kind"] in ("coco", "openimages", "table")
]
REAL_ANALYSIS_SETS = [
    a
    for a, s in config["analysis_sets"].items()
    if s["source"] in ("paper", "curated") and s["dataset"] in REAL_DATASETS
]
# Your own images (rules/user.smk): analysis sets listed in a folder or a table.
USER_SETS = [
    a for a, s in config["analysis_sets"].items() if s["source"] in ("folder", "table")
]
PAPER_ANALYSIS_SETS = [
    a for a in REAL_ANALYSIS_SETS if config["analysis_sets"][a]["source"] == "paper"
]


def dataset_of(wildcards):
    return config["datasets"][wildcards.real]


def listed_files(wildcards):
    """A table dataset's table (an unnamed input: edits to it redo the splits)."""
    return [d["table"] for d in [dataset_of(wildcards)] if d["kind"] == "table"]


def user_set_inputs(wildcards):
    """A user set's table, or its folder and class folders (unnamed inputs: an edited table or a file
    added to or removed from a class folder reruns the manifest; a file replaced in place needs
    --forcerun)."""
    aset = config["analysis_sets"][wildcards.user_set]
    if aset["source"] == "table":
        return [aset["table"]]
    return [aset["root"], *(os.path.join(aset["root"], c) for c in aset["classes"])]


def analysis_dataset(wildcards):
    return config["datasets"][config["analysis_sets"][wildcards.real_set]["dataset"]]


def curate_markers(wildcards):
    """What must be on disk before curation (annotations; the paper's verified lists); an unnamed
    input, so not handed to the script."""
    aset = config["analysis_sets"][wildcards.real_set]
    markers = [f"results/data/{aset['dataset']}/annotations.ok"]
    if aset["source"] == "paper":
        markers.append(f"results/data/paper_lists/{wildcards.real_set}/lists.ok")
    return markers


def curate_inputs(wildcards):
    """The gender word lists (curated COCO sets)."""
    aset = config["analysis_sets"][wildcards.real_set]
    inputs = {}
    if (
        aset["source"] != "paper"
        and config["datasets"][aset["dataset"]]["kind"] == "coco"
    ):
        words = aset.get("curation", {}).get("gender_words", {})
        inputs["gender_words"] = words.get(
            "file", os.path.join(workflow.basedir, "resources", "gender_words.yaml")
        )
    return inputs


def selections_of(wildcards):
    return [
        f"results/analysis_sets/{a}/selection.parquet"
        for a in REAL_ANALYSIS_SETS
        if config["analysis_sets"][a]["dataset"] == wildcards.real
    ]


def pretrain_inputs(wildcards):
    dataset = model_entry(wildcards.model)["pretrain"]["dataset"]
    return {
        "train": f"results/splits/{dataset}/train.parquet",
        "val": f"results/splits/{dataset}/val.parquet",
    }


def model_embed_settings(wildcards):
    """A model's (embedding batch size, memory in MB) by its size (about.params_m, analysis.embed.sizes)."""
    return embed_settings(
        config["models"][wildcards.model], config["analysis"]["embed"]
    )


def embed_batch_size(wildcards):
    """A model's embedding batch size by its size."""
    return model_embed_settings(wildcards)[0]


def embed_mem_mb(wildcards, attempt):
    """A model's embedding (and zoo check) memory by its size, doubled on each retry."""
    return model_embed_settings(wildcards)[1] * attempt


def finetune_mem_mb(wildcards, attempt):
    """The training process plus about 2 GB per image-decoding loader worker."""
    return (4000 + 2000 * config["finetune"]["num_workers"]) * attempt


def finetune_runtime(wildcards, attempt):
    """A ceiling for cluster queues (minutes): setup and validation plus 20 min per epoch."""
    epochs = cfg.finetune_params(config, wildcards.model, wildcards.dataset)["epochs"]
    return (30 + 20 * epochs) * attempt


# The static HTML report: its items (REPORT_ITEMS in rules/report.smk)


def report_item(kind, group, title, caption, files, **wildcards):
    """One figure or table of the static HTML report (results/report/): its section (group), title,
    caption (workflow/report/*.rst, rendered with these wildcards) and files by role
    (report.site.FILE_ROLES)."""
    return dict(
        kind=kind,
        group=group,
        title=title,
        caption=os.path.join(workflow.basedir, "workflow", "report", caption),
        files=files,
        wildcards=wildcards,
    )


def table_files(stem):
    return {
        "csv": f"{stem}.csv",
        "fragment": f"{stem}_tabular.tex",
        "document": f"{stem}.tex",
    }


# The many small per-model analysis jobs (similarity, ieat, bts, change, trajectory, layer_profile of one
# model, over all analysis sets and stages) share one job group per model. Local runs ignore groups; on a
# cluster profiles/slurm's `group-components` makes each model's group one job (profiles/slurm/README.md).
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


def model_analysis_tables(wildcards):
    """Every per-model analysis table of one model: the outputs of its MODEL_STATS_GROUP jobs."""
    m, sets, datasets = (
        wildcards.model,
        config["analysis_sets"],
        config["finetune"]["datasets"],
    )
    tables = [
        f"results/{kind}/{a}/{m}/{s}.csv"
        for kind in ("similarity", "ieat")
        for a in sets
        for s in cfg.stages(config)
    ]
    tables += [f"results/bts/{a}/{m}/ft-{d}.csv" for a in sets for d in datasets]
    tables += [
        f"results/change/{a}/{m}/ft-{d}/ieat.csv" for a in sets for d in datasets
    ]
    if trajectory_on():
        tables += [
            f"results/trajectory/{a}/{m}/ft-{d}.csv" for a in sets for d in datasets
        ]
    if config["analysis"]["layers"]["enabled"]:
        tables += [f"results/layers/{a}/{m}/profile.csv" for a in sets]
    return tables


def model_analyses_done(models):
    """The per-model markers that model_analyses (rules/analysis.smk) writes."""
    return [f"results/checks/analyses/{m}.done" for m in models]


def zoo_analyses_done(wildcards):
    """The markers of the zoo models whose check passed (waits for the zoo_status checkpoint)."""
    return model_analyses_done(zoo_ok_models())
