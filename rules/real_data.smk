# Flat params here: a new params shape would rerun an upgrading user's downloads, splits and training.
# Real datasets (config `kind: coco | openimages`, and `kind: table` for your own images listed in a table):
# downloads, analysis sets (`source: paper | curated`), finetuning splits and the evaluation split with
# each image's protected attribute (rules/predictions.smk measures the networks' predictions on it). They write the same files
# as the synthetic rules in rules/synthetic.smk; wildcard constraints keep each rule to the datasets and
# analysis sets of its kind. Only the `localrule`s below touch the network.


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
