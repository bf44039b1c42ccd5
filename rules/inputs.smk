# The rules' input functions, in the order of the rule files that use them (Snakemake's lint keeps functions
# and rules in separate files): each computes a job's inputs, params or resources from its wildcards and the
# run's PLAN (rules/common.smk), which holds every path and list.
from biastransfer.zoo import embed_settings, read_status  # noqa: E402


# ---- rules/common.smk ----
def names_pattern(names):
    """A wildcard regex matching exactly these names (or nothing, when there are none)."""
    return "|".join(names) if names else "(?!x)x"


def embed_mem_mb(wildcards, attempt):
    """A model's embedding (and zoo check) memory by its size (about.params_m, analysis.embed.sizes), doubled
    on each retry."""
    model = config["models"][wildcards.model]
    return embed_settings(model, config["analysis"]["embed"])[1] * attempt


def network_resources(networks):
    """Resources of a job that runs `networks` networks of one model side by side over
    images (embed, embed_layers, predict): the model's memory by its size (embed_mem_mb)
    and a quarter of it more for each further network (its weights and outputs), 20
    minutes and 10 more per network; a retry doubles both."""

    def mem_mb(wildcards, attempt):
        return embed_mem_mb(wildcards, attempt) * (3 + networks) // 4

    return {
        "mem_mb": mem_mb,
        "runtime": lambda wildcards, attempt: (20 + 10 * networks) * attempt,
        "gpu": EMBED_GPUS,
    }


def all_targets():
    """The default targets: the summaries, every report artefact (rules/artefacts.smk) and the report."""
    if PLAN.zoo:
        return ZOO_TARGETS
    return PLAN.analysis_targets() + ARTEFACTS.targets() + ["results/report/index.html"]


# ---- rules/interventions.smk ----
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
    if wildcards.dataset in PLAN.interventions:
        return {"sample_weights": path("sample_weights", dataset=wildcards.dataset)}
    return {}


# ---- rules/comparisons.smk ----
def comparison_embeddings(which):
    """The input function of the embeddings of every compared seed of one arm (``which``: arm or against)
    of a pair of finetuning arms, of one model on one analysis set."""

    def embeddings(wildcards):
        return [
            path(
                "embeddings",
                analysis_set=wildcards.analysis_set,
                model=wildcards.model,
                stage=cfg.finetuned_stage(getattr(wildcards, which), s),
            )
            for s in PLAN.compared_seeds(wildcards.arm, wildcards.against)
        ]

    return embeddings


def comparison_changes(pairs):
    """The comparison tables of ``pairs`` ([(arm, against)]), per analysis set and model."""
    return [
        path("comparison_change", arm=arm, against=against, analysis_set=a, model=m)
        for arm, against in pairs
        for a, m in PLAN.all_pairs()
    ]


# ---- rules/mitigations.smk ----
def mitigation_source_file(name):
    """The input function of one file (``split`` or ``attributes``) of a split of a mitigation arm's `from`."""

    def source_file(wildcards):
        return path(
            name, dataset=PLAN.source_of(wildcards.mitigation), split=wildcards.split
        )

    return source_file


def finetune_attributes(wildcards):
    """A finetuning job's attribute files: a mitigation arm's training split's (its groups), and the validation
    split's where it has one (PLAN.val_attribute_datasets: the worst-group validation mAP); else none.
    """
    files = {}
    if wildcards.dataset in PLAN.mitigations:
        files["train_attributes"] = path(
            "attributes", dataset=wildcards.dataset, split="train"
        )
    if wildcards.dataset in PLAN.val_attribute_datasets:
        files["val_attributes"] = path(
            "attributes", dataset=wildcards.dataset, split="val"
        )
    return files


# ---- rules/real_data.smk ----
def dataset_of(wildcards):
    return config["datasets"][wildcards.real]


def listed_files(wildcards):
    """A table dataset's table (an unnamed input: edits to it redo the splits)."""
    return [d["table"] for d in [dataset_of(wildcards)] if d["kind"] == "table"]


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
        inputs["gender_words"] = PLAN.word_list_file(words)
    return inputs


def selections_of(wildcards):
    return [
        path("selection", analysis_set=a)
        for a in PLAN.real_analysis_sets
        if config["analysis_sets"][a]["dataset"] == wildcards.real
    ]


def gender_words_file(dataset):
    """A COCO dataset's gender-word file (evaluation.gender_words)."""
    return PLAN.word_list_file(dataset["evaluation"]["gender_words"])


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


# ---- rules/analysis_sets.smk ----
def leakage_inputs(wildcards):
    """Every training split of every dataset a model is trained on, and every test split the networks'
    predictions are measured on, checked against an analysis set."""
    return [
        path("split", dataset=dataset, split=split)
        for dataset in cfg.training_datasets(config)
        for split in ("train", "val")
    ] + [path("split", dataset=d, split="test") for d in PLAN.predicted_datasets]


def user_set_inputs(wildcards):
    """A user set's table, or its folder and class folders (unnamed inputs: an edited table or a file
    added to or removed from a class folder reruns the manifest; a file replaced in place needs
    --forcerun)."""
    aset = config["analysis_sets"][wildcards.user_set]
    if aset["source"] == "table":
        return [aset["table"]]
    return [aset["root"], *(os.path.join(aset["root"], c) for c in aset["classes"])]


# ---- rules/models.smk ----
def pretrain_inputs(wildcards):
    dataset = PLAN.model_entry(wildcards.model)["pretrain"]["dataset"]
    return {
        "train": path("split", dataset=dataset, split="train"),
        "val": path("split", dataset=dataset, split="val"),
    }


def leakage_checks():
    """Every analysis set's leakage check; training waits for them (an unnamed input: ordering only, so
    ancient: a check rerun for another dataset or an edited analysis set reruns no training).
    """
    return [
        ancient(p)
        for p in expand(path("leakage_check"), analysis_set=config["analysis_sets"])
    ]


# ---- rules/cache.smk ----
def finetune_cache(wildcards):
    """The train and val cache indexes a finetuning job reads (none with finetune.cache off), ancient; a
    mitigation arm reads its `from`'s, with the splits they were built from (same rows as its own).
    """
    if not PLAN.cache_on:
        return {}
    setting = PLAN.image_cache_settings[wildcards.model]
    arm = wildcards.dataset in PLAN.mitigations
    dataset = PLAN.source_of(wildcards.dataset) if arm else wildcards.dataset
    files = {
        f"{split}_cache": ancient(
            path("image_cache", dataset=dataset, setting=setting, split=split)
        )
        for split in ("train", "val")
    }
    if arm:
        files.update(
            {
                f"{split}_cache_split": path("split", dataset=dataset, split=split)
                for split in ("train", "val")
            }
        )
    return files


# ---- rules/finetune.smk ----
def trajectory_io(section):
    """The finetune rule's trajectory inputs and outputs. The inputs are there whether the trajectory is on
    or off: every analysis set's manifest and the job's trajectory settings (rule trajectory_settings),
    ancient when it is off, so that turning it off reruns no training; the outputs only when it is on.
    """
    sets = list(config["analysis_sets"])
    keep = (lambda p: p) if PLAN.trajectory_on else ancient
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
            if PLAN.trajectory_on
            else {}
        ),
    }[section]


def finetune_mem_mb(wildcards, attempt):
    """The training process plus about 2 GB per image-decoding loader worker."""
    return (4000 + 2000 * config["finetune"]["num_workers"]) * attempt


def finetune_runtime(wildcards, attempt):
    """A ceiling for cluster queues (minutes): setup and validation plus 20 min per epoch."""
    epochs = cfg.finetune_params(config, wildcards.model, wildcards.dataset)["epochs"]
    return (30 + 20 * epochs) * attempt


# ---- rules/scratch.smk ----
def after_pretraining(wildcards):
    """For a model this workflow pretrains (the demo's), its pretrained weights, only to order the jobs:
    pretraining (two threads, and the start of the longest chain) would otherwise wait for a scratch
    network that took one free core first. Ancient: a retrained network reruns no scratch training; no
    input for a model with fetched weights, whose scratch networks keep their jobs' inputs.
    """
    if wildcards.model not in PLAN.workflow_models:
        return []
    return [ancient(PLAN.pretrained_weights(wildcards.model))]


# ---- rules/predictions.smk ----
def predicted_weights(wildcards):
    """The checkpoints of one model's networks that rule predict scores (PLAN.predicted_stages)."""
    return [
        PLAN.trained_weights(wildcards.model, stage) for stage in PLAN.predicted_stages
    ]


# ---- rules/layers.smk ----
def stage_layer_embeddings(wildcards):
    """The layer-embedding folders of every stage (pretrained and each finetuned seed) of one model."""
    return [
        path(
            "layer_embeddings",
            analysis_set=wildcards.analysis_set,
            model=wildcards.model,
            stage=stage,
        )
        for stage in PLAN.stages
    ]


# ---- rules/analysis.smk ----
def change_inputs(name):
    """The change tables of one kind (ieat, similarity, ieat_seeds), one per analysis set, model and
    finetuning dataset."""
    return [
        path("change", analysis_set=a, model=m, dataset=d, kind=name)
        for a, m in PLAN.all_pairs()
        for d in config["finetune"]["datasets"]
    ]


def zoo_ok_models():
    """The zoo models whose check passed (input functions only: it waits for the zoo_status checkpoint)."""
    return [
        m
        for m in config["models"]
        if read_status(checkpoints.zoo_status.get(model=m).output.status)["ok"]
    ]


def analysed_pairs():
    """(analysis_set, model) of every model, less a zoo's models that failed their check (rules/zoo.smk;
    input functions only: it waits for the zoo_status checkpoint)."""
    if not config["zoo"]:
        return PLAN.all_pairs()
    ok = set(zoo_ok_models())
    return [(a, m) for a, m in PLAN.all_pairs() if m in ok]


def summary_inputs(kind):
    """The per-job tables that make up one summary table."""
    if kind == "bts":
        return [
            path("bts", analysis_set=a, model=m, dataset=d)
            for a, m in PLAN.all_pairs()
            for d in config["finetune"]["datasets"]
        ]
    if (
        kind == "ieat_scratch"
    ):  # the scratch reference networks' iEATs: their own family
        return [
            path("stage_table", kind="ieat", analysis_set=a, model=m, stage=s)
            for a, m in analysed_pairs()
            for s in PLAN.scratch_stages
        ]
    return [
        path("stage_table", kind=kind, analysis_set=a, model=m, stage=s)
        for a, m in analysed_pairs()
        for s in PLAN.stages
    ]


# ---- rules/trajectory.smk ----
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


# ---- rules/zoo.smk ----
def zoo_analyses_done(wildcards):
    """The markers of the zoo models whose check passed (waits for the zoo_status checkpoint)."""
    return [path("analyses_done", model=m) for m in zoo_ok_models()]
