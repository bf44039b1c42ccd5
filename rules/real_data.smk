# Real datasets (config `kind: coco | openimages`, and `kind: table` for your own images listed in a table):
# downloads, analysis sets (`source: paper | curated`), finetuning splits and the evaluation split with
# each image's protected attribute (rules/predictions.smk measures the networks' predictions on it). They write the same files
# as the synthetic rules in rules/synthetic.smk; wildcard constraints keep each rule to the datasets and
# analysis sets of its kind. Only the `localrule`s below touch the network.


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


rule download_dataset:
    input:
        listed_files,
    output:
        ok="results/data/{real}/annotations.ok",
    log:
        "logs/download_dataset/{real}.log",
    benchmark:
        "results/benchmarks/download_dataset/{real}.tsv"
    wildcard_constraints:
        real=names_pattern(PLAN.real_datasets),
    retries: 2
    localrule: True
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=600,
    params:
        # what the annotation files depend on: a split seed or subset size reruns make_splits only
        dataset=lambda wildcards: cfg.download_spec(dataset_of(wildcards)),
    script:
        "../workflow/scripts/download_dataset.py"


rule download_paper_lists:
    output:
        ok="results/data/paper_lists/{paper_set}/lists.ok",
    log:
        "logs/download_paper_lists/{paper_set}.log",
    wildcard_constraints:
        paper_set=names_pattern(PLAN.paper_analysis_sets),
    retries: 2
    localrule: True
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=10,
    params:
        paper=lambda wildcards: cfg.canonical(
            config["analysis_sets"][wildcards.paper_set]["paper"]
        ),
        out_dir=lambda wildcards: f"results/data/paper_lists/{wildcards.paper_set}",
        mirror=lambda wildcards: config["datasets"][
            config["analysis_sets"][wildcards.paper_set]["dataset"]
        ]["mirror"],
    script:
        "../workflow/scripts/download_paper_lists.py"


rule curate_analysis_set:
    input:
        curate_markers,
        unpack(curate_inputs),
    output:
        selection=path("selection", analysis_set="{real_set}"),
    log:
        "logs/curate_analysis_set/{real_set}.log",
    benchmark:
        "results/benchmarks/curate_analysis_set/{real_set}.tsv"
    wildcard_constraints:
        real_set=names_pattern(PLAN.real_analysis_sets),
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        mem_mb=6000,
        runtime=30,
    params:
        dataset=analysis_dataset,
        # what selects the images: editing the set's iEATs or BTS lists reruns nothing here
        analysis_set=lambda wildcards: cfg.selection_spec(
            config["analysis_sets"][wildcards.real_set]
        ),
        lists_dir=lambda wildcards: f"results/data/paper_lists/{wildcards.real_set}",
    script:
        "../workflow/scripts/curate_analysis_set.py"


rule fetch_analysis_images:
    input:
        selection=path("selection", analysis_set="{real_set}"),
    output:
        manifest=path("manifest", analysis_set="{real_set}"),
    log:
        "logs/fetch_analysis_images/{real_set}.log",
    wildcard_constraints:
        real_set=names_pattern(PLAN.real_analysis_sets),
    retries: 2
    localrule: True
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        **RESOURCES["download"],
    params:
        images=lambda wildcards: analysis_dataset(wildcards)["images"],
        mirror=lambda wildcards: analysis_dataset(wildcards)["mirror"],
        workers=lambda wildcards: analysis_dataset(wildcards)["workers"],
    script:
        "../workflow/scripts/fetch_analysis_images.py"


rule make_splits:
    input:
        "results/data/{real}/annotations.ok",
        selections=selections_of,
    output:
        train="results/data/{real}/splits/train.parquet",
        val="results/data/{real}/splits/val.parquet",
    log:
        "logs/make_splits/{real}.log",
    benchmark:
        "results/benchmarks/make_splits/{real}.tsv"
    wildcard_constraints:
        real=names_pattern(PLAN.real_datasets),
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        **RESOURCES["annotations"],
    params:
        # less the evaluation options that leave train and val as they are (cfg.split_spec)
        dataset=lambda wildcards: cfg.split_spec(dataset_of(wildcards)),
        name=lambda wildcards: wildcards.real,
    script:
        "../workflow/scripts/make_splits.py"


rule fetch_split_images:
    input:
        selected="results/data/{real}/splits/{split}.parquet",
    output:
        published=path("split", dataset="{real}"),
    log:
        "logs/fetch_split_images/{real}/{split}.log",
    wildcard_constraints:
        real=names_pattern(PLAN.real_datasets),
        split="train|val|test",
    retries: 2
    localrule: True
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=1440,
    params:
        dataset=lambda wildcards: cfg.download_spec(dataset_of(wildcards)),
        workers=lambda wildcards: dataset_of(wildcards)["workers"],
    script:
        "../workflow/scripts/fetch_split_images.py"


# The evaluation split (COCO val2017 less the analysis images, or its seeded hold-out; the Open Images V4
# test split; a table's `split: test` rows), checked disjoint from training; fetched and published by
# fetch_split_images like the finetuning splits.
rule real_test_split:
    input:
        "results/data/{real}/annotations.ok",
        # ordering only: the finetuning splits' images are fetched first, so that two fetch jobs never
        # write the same file (COCO's evaluation images are val2017's)
        ancient(path("split", dataset="{real}", split="train")),
        ancient(path("split", dataset="{real}", split="val")),
        selections=selections_of,
        train="results/data/{real}/splits/train.parquet",
        val="results/data/{real}/splits/val.parquet",
    output:
        test="results/data/{real}/splits/test.parquet",
    log:
        "logs/real_test_split/{real}.log",
    benchmark:
        "results/benchmarks/real_test_split/{real}.tsv"
    wildcard_constraints:
        real=names_pattern(PLAN.predicted_real_datasets),
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        **RESOURCES["split"],
    params:
        dataset=lambda wildcards: cfg.evaluation_spec(dataset_of(wildcards)),
        name=lambda wildcards: wildcards.real,
    script:
        "../workflow/scripts/real_test_split.py"


# Each evaluation image's protected attribute and its source: COCO captions (the gender-word list), Open
# Images MIAP boxes else its Man/Boy/Woman/Girl labels, a table's attribute column.
rule real_test_attributes:
    input:
        "results/data/{real}/annotations.ok",
        unpack(test_attribute_inputs),
    output:
        attributes=path("attributes", dataset="{real}", split="test"),
    log:
        "logs/real_test_attributes/{real}.log",
    benchmark:
        "results/benchmarks/real_test_attributes/{real}.tsv"
    wildcard_constraints:
        real=names_pattern(PLAN.predicted_real_datasets),
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        **RESOURCES["split"],
    params:
        dataset=lambda wildcards: cfg.evaluation_spec(dataset_of(wildcards)),
        words_list=lambda wildcards: gender_words_list(dataset_of(wildcards)),
    script:
        "../workflow/scripts/real_attributes.py"


# The attribute of each image of a training split, only for a dataset an intervention rebalances
# (rules/interventions.smk): COCO by the evaluation's caption rule (its train2017 captions, the word list
# of its evaluation.gender_words), Open Images by its human-verified Man/Boy/Woman/Girl labels (no MIAP
# boxes: those of the training split are not downloaded), a table by its attribute column (every
# training row needs one).
rule real_train_attributes:
    input:
        "results/data/{real}/annotations.ok",
        split=path("split", dataset="{real}", split="train"),
        gender_words=coco_gender_words,
    output:
        attributes=path("attributes", dataset="{real}", split="train"),
    log:
        "logs/real_train_attributes/{real}.log",
    benchmark:
        "results/benchmarks/real_train_attributes/{real}.tsv"
    wildcard_constraints:
        real=names_pattern(PLAN.intervened_real),
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        # make_splits' figures: Open Images' training labels are the file it reads
        **RESOURCES["annotations"],
    params:
        dataset=lambda wildcards: train_attribute_spec(dataset_of(wildcards)),
        words_list=lambda wildcards: gender_words_list(dataset_of(wildcards)),
    script:
        "../workflow/scripts/real_attributes.py"
