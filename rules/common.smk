# Configuration checks, wildcard constraints, input functions and target lists.
import os
import sys
from types import SimpleNamespace

from biastransfer import config as cfg  # noqa: E402
from biastransfer.check_cache import passed_check  # noqa: E402
from biastransfer.claims import claims_on  # noqa: E402
from biastransfer.data.cache import CacheSetting  # noqa: E402
from biastransfer.data import user_evaluation  # noqa: E402
from biastransfer.gpus import books_gpu  # noqa: E402
from biastransfer.models.resolve import model_spec  # noqa: E402
from biastransfer.paths import path  # noqa: E402
from biastransfer.schema_types import non_integer_problems  # noqa: E402
from biastransfer.zoo import embed_settings, read_status  # noqa: E402

# A float where the schema wants an integer (epochs: 2.0), named by its key before anything reads it; then
# the schema checks keys and types and fills every default (after what a later --configfile removed with
# null), so rules read config[...] without defaults of their own (results/summary/config.yaml shows them
# all); then the cross-references of the filled config are checked, every problem named at once, and a
# run with layer profiles resolves each model's layers on a network without weights (torch only then,
# and only until that check has passed once for these models: biastransfer.check_cache).
NON_INTEGERS = non_integer_problems(
    config, Path(workflow.basedir) / "workflow" / "schemas" / "config.schema.yaml"
)
if NON_INTEGERS:
    raise ValueError("invalid configuration:\n  " + "\n  ".join(NON_INTEGERS))
cfg.fill_defaults(config)
cfg.check_config(config)
if config["analysis"]["layers"]["enabled"]:

    def _layer_problems():
        from biastransfer.models.layers import layer_problems

        return layer_problems(config)

    LAYER_PROBLEMS = passed_check(
        "layers",
        {"models": config["models"], "layers": config["analysis"]["layers"]},
        _layer_problems,
        code="models",
    )
    if LAYER_PROBLEMS:
        raise ValueError("invalid configuration:\n  " + "\n  ".join(LAYER_PROBLEMS))


def names_pattern(names):
    """A wildcard regex matching exactly these names (or nothing, when there are none)."""
    return "|".join(names) if names else "(?!x)x"


SYNTHETIC_DATASETS = [
    d for d, s in config["datasets"].items() if s["kind"] == "synthetic"
]
SYNTHETIC_SETS = [
    a for a, s in config["analysis_sets"].items() if s["source"] == "synthetic"
]
# .get: no default, an entry without source takes the registry's (docs/models.md)
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


def network_entry(model):
    """The keys of a model's entry that shape its network (weights, preprocessing, embedding layer): the
    params of its training, fetching and embedding jobs. Less the layer profile's keys (``layers``,
    ``layer_pooling``: rules/layers.smk) and, with the default layer (the trunk's own pre-logits output,
    not pooled here), ``pool``."""
    entry = {
        k: v
        for k, v in model_entry(model).items()
        if k not in ("layers", "layer_pooling")
    }
    if entry.get("layer", "penultimate") == "penultimate":
        entry.pop("pool", None)
    return entry


def pretrained_weights(wildcards):
    """The pretrained weights file of a model: trained here (demo) or fetched."""
    if model_entry(wildcards.model).get("source") == "workflow":
        return path("pretrain_run", model=wildcards.model, file="model.safetensors")
    if config[
        "zoo"
    ]:  # the zoo's check fetched them: its record of a passed model is a weights record
        return f"results/zoo/status/{wildcards.model}.json"
    return f"results/weights/{wildcards.model}/weights.done"


def weights_origin(model):
    """Where a model's pretrained weights came from: its pretraining record (trained here) or the record
    of the fetched file (URL, sha256)."""
    if model_entry(model).get("source") == "workflow":
        return path("pretrain_run", model=model, file="metrics.json")
    return pretrained_weights(SimpleNamespace(model=model))


def trained_weights(model, stage):
    """The checkpoint of one finetuned or scratch reference network."""
    dataset, seed = cfg.parse_stage(stage)
    root = "scratch" if cfg.stage_kind(stage) == "scratch" else "finetune"
    return path(
        f"{root}_run", dataset=dataset, model=model, seed=seed, file="model.safetensors"
    )


def stage_weights(wildcards):
    """Weights to embed with: the pretrained model, one finetuned checkpoint, or one scratch reference."""
    if cfg.parse_stage(wildcards.stage)[0] is None:
        return pretrained_weights(wildcards)
    return trained_weights(wildcards.model, wildcards.stage)


def leakage_inputs(wildcards):
    """Every training split of every dataset a model is trained on, and every test split the networks'
    predictions are measured on, checked against an analysis set."""
    return [
        path("split", dataset=dataset, split=split)
        for dataset in cfg.training_datasets(config)
        for split in ("train", "val")
    ] + [path("split", dataset=d, split="test") for d in PREDICTED_DATASETS]


def finetuned_similarity_tables(wildcards):
    """The similarity tables of every seed finetuned on the BTS's dataset."""
    return [
        path(
            "stage_table",
            kind="similarity",
            analysis_set=wildcards.analysis_set,
            model=wildcards.model,
            stage=stage,
        )
        for stage in [
            cfg.finetuned_stage(wildcards.dataset, s)
            for s in cfg.finetune_seeds(config, wildcards.dataset)
        ]
    ]


def leakage_checks():
    """Every analysis set's leakage check; training waits for them (an unnamed input: ordering only, so
    ancient: a check rerun for another dataset or an edited analysis set reruns no training).
    """
    return [
        ancient(p)
        for p in expand(path("leakage_check"), analysis_set=config["analysis_sets"])
    ]


def finetuned_embeddings(wildcards):
    """The embeddings of every seed finetuned on the dataset (the same images as the pretrained ones)."""
    return [
        path(
            "embeddings",
            analysis_set=wildcards.analysis_set,
            model=wildcards.model,
            stage=stage,
        )
        for stage in [
            cfg.finetuned_stage(wildcards.dataset, s)
            for s in cfg.finetune_seeds(config, wildcards.dataset)
        ]
    ]


def change_inputs(name):
    """The per-job change tables of one kind (ieat, similarity, ieat_seeds)."""
    return [
        path("change", analysis_set=a, model=m, dataset=d, kind=name)
        for a, m in all_pairs()
        for d in config["finetune"]["datasets"]
    ]


def reference_tables(wildcards):
    """Similarity tables of the scratch reference networks (none without ``analysis.bts.reference``)."""
    return [
        path(
            "stage_table",
            kind="similarity",
            analysis_set=wildcards.analysis_set,
            model=wildcards.model,
            stage=cfg.scratch_stage(wildcards.dataset, s),
        )
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
            path("bts", analysis_set=a, model=m, dataset=d)
            for a, m in all_pairs()
            for d in config["finetune"]["datasets"]
        ]
    if (
        kind == "ieat_scratch"
    ):  # the scratch reference networks' iEATs: their own family
        return [
            path("stage_table", kind="ieat", analysis_set=a, model=m, stage=s)
            for a, m in analysed_pairs()
            for s in cfg.scratch_stages(config)
        ]
    return [
        path("stage_table", kind=kind, analysis_set=a, model=m, stage=s)
        for a, m in analysed_pairs()
        for s in cfg.stages(config)
    ]


def finetune_runs(name="metrics.json"):
    return [
        path("finetune_run", dataset=d, model=m, seed=s, file=name)
        for d in config["finetune"]["datasets"]
        for m in config["models"]
        for s in cfg.finetune_seeds(config, d)
    ]


def scratch_runs():
    """The metrics (with the training curve) of every scratch reference network."""
    return [
        path("scratch_run", dataset=d, model=m, seed=s, file="metrics.json")
        for d in config["finetune"]["datasets"]
        for m in config["models"]
        for s in cfg.reference_seeds(config, d)
    ]


# Layer profiles (rules/layers.smk)
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
        path(
            "layer_embeddings",
            analysis_set=wildcards.analysis_set,
            model=wildcards.model,
            stage=stage,
        )
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
        *amplification_summary(),
        *link_summary(),
        *intervention_summary(),
        *layer_profile_tables(),
        *trajectory_summary(),
        *model_analyses_done(config["models"]),
    ]


# Interventions on the finetuning data (rules/interventions.smk): datasets of kind intervention, each the
# training split of its `from` dataset rebalanced; its validation and test splits are those of `from`.
INTERVENTIONS = [
    d for d, s in config["datasets"].items() if s["kind"] == "intervention"
]


def evaluated_dataset(dataset):
    """The dataset whose test split a dataset's networks are measured on: its own, or an intervention's
    `from`."""
    spec = config["datasets"][dataset]
    return spec["from"] if spec["kind"] == "intervention" else dataset


def compared_seeds(intervention):
    """The finetuning seeds an intervention shares with its untouched dataset (both finetuned)."""
    source = config["datasets"][intervention]["from"]
    if source not in config["finetune"]["datasets"]:
        return []
    theirs = set(cfg.finetune_seeds(config, source))
    return [s for s in cfg.finetune_seeds(config, intervention) if s in theirs]


# The interventions compared with their untouched finetuning: both finetuned, with a seed in common.
COMPARED_INTERVENTIONS = [
    d
    for d in INTERVENTIONS
    if d in config["finetune"]["datasets"] and compared_seeds(d)
]


def intervention_source_file(name, split):
    """The input function of one file (``split`` or ``attributes``) of the ``split`` split of an
    intervention's `from`: what it rebalances, or what it takes untouched."""

    def source_file(wildcards):
        return path(
            name,
            dataset=config["datasets"][wildcards.intervention]["from"],
            split=split,
        )

    return source_file


def finetune_sample_weights(wildcards):
    """An intervention's sample weights (a finetuning input; its digest joins the resume key), else none."""
    if wildcards.dataset in INTERVENTIONS:
        return {"sample_weights": path("sample_weights", dataset=wildcards.dataset)}
    return {}


def intervention_embeddings(which):
    """The input function of the embeddings of every compared seed of the untouched (``which`` untouched) or
    the intervened networks of one model on one analysis set."""

    def embeddings(wildcards):
        dataset = wildcards.intervention
        if which == "untouched":
            dataset = config["datasets"][dataset]["from"]
        return [
            path(
                "embeddings",
                analysis_set=wildcards.analysis_set,
                model=wildcards.model,
                stage=cfg.finetuned_stage(dataset, s),
            )
            for s in compared_seeds(wildcards.intervention)
        ]

    return embeddings


def intervention_changes():
    """Every compared intervention's comparison table, per analysis set and model."""
    return [
        path("intervention_change", dataset=d, analysis_set=a, model=m)
        for d in COMPARED_INTERVENTIONS
        for a, m in all_pairs()
    ]


def intervention_summary():
    """The interventions' summary (for the findings; none without a compared intervention)."""
    return ["results/summary/intervention.csv"] if COMPARED_INTERVENTIONS else []


# Predictions on the evaluation split (rules/predictions.smk)
# The finetuning datasets with a test split: synthetic with n_test > 0 (rules/synthetic.smk), COCO and
# Open Images with evaluation.enabled, a table with `split: test` rows (rules/real_data.smk), and the
# interventions on one of them (their test split is their source's, rules/interventions.smk).
def has_test_split(dataset):
    """Whether a dataset entry has an evaluation split."""
    if dataset["kind"] == "synthetic":
        return dataset["n_test"] > 0
    if dataset["kind"] == "table":
        return user_evaluation.has_test_split(dataset)
    return cfg.evaluated(dataset)


PREDICTED_DATASETS = [
    d
    for d in config["finetune"]["datasets"]
    if has_test_split(config["datasets"][evaluated_dataset(d)])
]
PREDICTED_REAL_DATASETS = [
    d
    for d in PREDICTED_DATASETS
    if config["datasets"][d]["kind"] not in ("synthetic", "intervention")
]


def word_list_file(gender_words):
    """The file of a gender_words block (``file``; not set: the shipped list, whose path depends on where
    the workflow lives, so the schema has no default for it)."""
    return gender_words.get(
        "file", os.path.join(workflow.basedir, "resources", "gender_words.yaml")
    )


def gender_words_file(dataset):
    """A COCO dataset's gender-word file (evaluation.gender_words)."""
    return word_list_file(dataset["evaluation"]["gender_words"])


def gender_words_list(dataset):
    """The name of a COCO dataset's gender-word list (None: the file's default)."""
    return dataset.get("evaluation", {}).get("gender_words", {}).get("list")


def test_attribute_inputs(wildcards):
    """The published evaluation split of a real dataset and (COCO) the gender-word list."""
    dataset = dataset_of(wildcards)
    inputs = {"split": path("split", dataset=wildcards.real, split="test")}
    if dataset["kind"] == "coco":
        inputs["gender_words"] = gender_words_file(dataset)
    return inputs


# The real datasets an intervention rebalances: their training split gets an attribute file
# (rules/real_data.smk, real_train_attributes).
INTERVENED_REAL = sorted(
    {
        config["datasets"][d]["from"]
        for d in INTERVENTIONS
        if config["datasets"][config["datasets"][d]["from"]]["kind"]
        in ("coco", "openimages", "table")
    }
)


def coco_gender_words(wildcards):
    """A COCO dataset's gender-word file (its captions' attribute rule); none for other kinds."""
    dataset = dataset_of(wildcards)
    return gender_words_file(dataset) if dataset["kind"] == "coco" else []


def train_attribute_spec(dataset):
    """What a real dataset's training attributes depend on: where the captions (COCO) or labels (Open
    Images, with verified_only) are, not the splits' or evaluation's options; a table's whole entry.
    """
    keys = {"coco": ("kind", "root"), "openimages": ("kind", "root", "verified_only")}
    if dataset["kind"] not in keys:
        return cfg.canonical(dataset)
    return cfg.canonical({k: dataset[k] for k in keys[dataset["kind"]]})


def evaluation_disjoint():
    """{evaluation split: the training splits of its dataset it must share no image with}: train and val,
    but for a COCO evaluation split without a hold-out (an intervention's: its source's), which is its
    model-selection split.
    """
    return {
        path("split", dataset=d, split="test"): [
            path("split", dataset=d, split=s)
            for s in (
                ("train",)
                if cfg.evaluation_is_val(config["datasets"][evaluated_dataset(d)])
                else ("train", "val")
            )
        ]
        for d in PREDICTED_DATASETS
    }


def predicted_stages(dataset):
    """The finetuned and scratch stages of a dataset with a test split, whose networks are scored on it."""
    return [
        *(cfg.finetuned_stage(dataset, s) for s in cfg.finetune_seeds(config, dataset)),
        *(cfg.scratch_stage(dataset, s) for s in cfg.reference_seeds(config, dataset)),
    ]


def prediction_files(name="predictions", models=None):
    """Every finetuned and scratch network's predictions on its dataset's test split (or, with name
    prediction_embedding, its embedding of the same images), in one order; only ``models``' if given (a
    list of names, or ["{model}"] for rule predict's outputs)."""
    return [
        path(name, model=m, stage=stage)
        for d in PREDICTED_DATASETS
        for m in (models or config["models"])
        for stage in predicted_stages(d)
    ]


# The stages that rule predict scores, dataset-major (prediction_files' order for one model).
PREDICTED_STAGES = [s for d in PREDICTED_DATASETS for s in predicted_stages(d)]


def predicted_weights(wildcards):
    """The checkpoints of one model's networks that rule predict scores (PREDICTED_STAGES)."""
    return [trained_weights(wildcards.model, stage) for stage in PREDICTED_STAGES]


def predict_runtime(wildcards, attempt):
    """Minutes for one model's predictions: 10 per network it scores, 20 more for the start."""
    return (20 + 10 * len(PREDICTED_STAGES)) * attempt


def amplification_summary(name="amplification"):
    """The prediction-level summary or its terms (for the findings; none without a dataset with a test
    split)."""
    return [f"results/summary/{name}.csv"] if PREDICTED_DATASETS else []


def link_summary(name="link"):
    """The link across levels' table or its correlations (rules/link.smk; none without a dataset with a test
    split)."""
    return [f"results/summary/{name}.csv"] if PREDICTED_DATASETS else []


def planted_associations():
    """{object: figure} of the co-occurrences planted in the models' synthetic pretraining data (P(person_a)
    above 0.5: person_a, below: person_b), whose terms the findings read out (empty without any).
    """
    planted = {}
    for m in config["models"].values():
        data = config["datasets"].get(m.get("pretrain", {}).get("dataset"), {})
        for obj, p in (
            data.get("cooccurrence", {}).items()
            if data.get("kind") == "synthetic"
            else ()
        ):
            if p != 0.5:
                planted[obj] = "person_a" if p > 0.5 else "person_b"
    return dict(sorted(planted.items()))


def all_targets():
    """The default targets: the summaries, every report artefact (rules/artefacts.smk) and the report."""
    if config["zoo"]:
        return ZOO_TARGETS
    return analysis_targets() + ARTEFACTS.targets() + ["results/report/index.html"]


def trajectory_on():
    """Whether finetune.trajectory asks for embeddings after some epochs (off: YAML may read it as false)."""
    return config["finetune"]["trajectory"] not in ("off", False)


def trajectory_summary():
    """The trajectory summary table, when trajectories are on (the findings read it)."""
    return ["results/summary/trajectory.csv"] if trajectory_on() else []


def claims_summary():
    """The claims table, when claims.tests lists any (the findings read it)."""
    return ["results/summary/claims.csv"] if claims_on(config) else []


def trajectory_folders(wildcards):
    """The trajectory embeddings (one folder per seed) of a model finetuned on a dataset."""
    return [
        path(
            "trajectory_folder",
            analysis_set=wildcards.analysis_set,
            model=wildcards.model,
            stage=cfg.finetuned_stage(wildcards.dataset, s),
        )
        for s in cfg.finetune_seeds(config, wildcards.dataset)
    ]


def trajectory_metrics(wildcards):
    """The metrics (best epoch, training curve) of every seed of a model finetuned on a dataset."""
    return [
        path(
            "finetune_run",
            dataset=wildcards.dataset,
            model=wildcards.model,
            seed=s,
            file="metrics.json",
        )
        for s in cfg.finetune_seeds(config, wildcards.dataset)
    ]


def trajectory_io(section):
    """The finetune rule's trajectory inputs and outputs. The inputs are there whether the trajectory is on
    or off: every analysis set's manifest and the job's trajectory settings (rule trajectory_settings),
    ancient when it is off, so that turning it off reruns no training; the outputs only when it is on.
    """
    sets = list(config["analysis_sets"])
    keep = (lambda p: p) if trajectory_on() else ancient
    return {
        "input": {
            "manifests": [keep(path("manifest", analysis_set=a)) for a in sets],
            "trajectory_settings": keep(path("trajectory_settings")),
        },
        "output": (
            {
                "trajectory": [
                    directory(
                        path(
                            "trajectory_folder",
                            analysis_set=a,
                            stage="ft-{dataset}-seed{seed}",
                        )
                    )
                    for a in sets
                ]
            }
            if trajectory_on()
            else {}
        ),
    }[section]


# Real datasets (rules/real_data.smk)
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
# Your own images (rules/analysis_sets.smk): analysis sets listed in a folder or a table.
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
        inputs["gender_words"] = word_list_file(words)
    return inputs


def selections_of(wildcards):
    return [
        path("selection", analysis_set=a)
        for a in REAL_ANALYSIS_SETS
        if config["analysis_sets"][a]["dataset"] == wildcards.real
    ]


# The decoded-once training cache (rules/cache.smk)
def finetune_cache(wildcards):
    """The train and val cache indexes a finetuning job reads (none with finetune.cache off)."""
    if config["finetune"]["cache"] not in (True, "on"):
        return {}
    pre = model_spec(wildcards.model, model_entry(wildcards.model)).preprocess
    setting = CacheSetting(
        pre.resize, pre.interpolation, config["finetune"]["cache_quality"]
    ).name
    return {
        f"{split}_cache": path(
            "image_cache", dataset=wildcards.dataset, setting=setting, split=split
        )
        for split in ("train", "val")
    }


def pretrain_inputs(wildcards):
    dataset = model_entry(wildcards.model)["pretrain"]["dataset"]
    return {
        "train": path("split", dataset=dataset, split="train"),
        "val": path("split", dataset=dataset, split="val"),
    }


def model_embed_settings(wildcards):
    """A model's (embedding batch size, memory in MB) by its size (about.params_m, analysis.embed.sizes)."""
    return embed_settings(
        config["models"][wildcards.model], config["analysis"]["embed"]
    )


def inference_settings(wildcards):
    """How a model's embed, embed_layers and predict jobs run it (analysis.embed, the batch by the
    model's size; biastransfer.models.features.Inference)."""
    embed = config["analysis"]["embed"]
    return {
        "batch_size": model_embed_settings(wildcards)[0],
        "num_workers": embed["num_workers"],
        "device": embed["device"],
        "amp": embed["amp"],
    }


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


# The many small per-model analysis jobs (similarity, ieat, bts, change, trajectory, layer_profile and
# intervention_change of one model, over all analysis sets and stages) share one job group per model.
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
    # a network over an analysis set, memory by the model's size (a retry doubles both)
    "network": {
        "mem_mb": embed_mem_mb,
        "runtime": lambda wildcards, attempt: 30 * attempt,
        "gpu": EMBED_GPUS,
    },
}


def model_analysis_tables(wildcards):
    """Every per-model analysis table of one model: the outputs of its MODEL_STATS_GROUP jobs."""
    m, sets, datasets = (
        wildcards.model,
        config["analysis_sets"],
        config["finetune"]["datasets"],
    )
    tables = [
        path("stage_table", kind=kind, analysis_set=a, model=m, stage=s)
        for kind in ("similarity", "ieat")
        for a in sets
        for s in cfg.stages(config)
    ]
    tables += [
        path("bts", analysis_set=a, model=m, dataset=d) for a in sets for d in datasets
    ]
    tables += [
        path("change", analysis_set=a, model=m, dataset=d, kind="ieat")
        for a in sets
        for d in datasets
    ]
    if trajectory_on():
        tables += [
            path("trajectory_table", analysis_set=a, model=m, dataset=d)
            for a in sets
            for d in datasets
        ]
    if config["analysis"]["layers"]["enabled"]:
        tables += [path("layer_profile", analysis_set=a, model=m) for a in sets]
    tables += [
        path("intervention_change", dataset=d, analysis_set=a, model=m)
        for d in COMPARED_INTERVENTIONS
        for a in sets
    ]
    return tables


def model_analyses_done(models):
    """The per-model markers that model_analyses (rules/analysis.smk) writes."""
    return [path("analyses_done", model=m) for m in models]


def zoo_analyses_done(wildcards):
    """The markers of the zoo models whose check passed (waits for the zoo_status checkpoint)."""
    return model_analyses_done(zoo_ok_models())
