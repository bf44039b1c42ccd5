# From embeddings to predictions: every finetuned network and every scratch reference network scores the
# test split of the dataset it was trained on (rule synthetic_test_split; per-image sigmoid scores of every
# class, with provenance, and from the same forward pass its embedding of each image, and the pretrained
# network's embedding of the same images; one job per model, which decodes each test image once for all of
# that model's networks of its dataset), and one job measures how the predictions amplify the dataset's
# bias: bias amplification A -> T (directional, Zhao et al.) at a threshold and at base rates, and leakage
# from the labels, the scores and the embedding (the pretrained network's embedding too: the baseline), with
# bootstrap intervals (analysis.predictions; docs/statistics.md). Only datasets with a test split: the
# synthetic kind with n_test > 0, COCO and Open Images with evaluation.enabled, a table with `split: test`
# rows (PLAN.predicted_datasets, src/biastransfer/workflow/plan.py; the real kinds' split: rules/real_data.smk).


table_artefact(
    "amplification",
    PLAN.summary("amplification"),
    "results/tables/amplification_{dataset}",
    caption="table_amplification.rst",
    section="Prediction-level bias",
    title="Bias amplification and leakage of the predictions, finetuned on {dataset}",
    instances=combinations(dataset=PLAN.predicted_datasets),
)


if PLAN.predicted_datasets:

    rule predict:
        input:
            splits=[
                path("split", dataset=d, split="test") for d in PLAN.predicted_datasets
            ],
            weights=predicted_weights,
            pretrained=lambda wildcards: PLAN.pretrained_weights(wildcards.model),
        output:
            predictions=PLAN.prediction_files(models=["{model}"]),
            embeddings=PLAN.prediction_files("prediction_embedding", models=["{model}"]),
            # the pretrained network's embedding of each test split: the baseline of the embedding leakage
            pretrained_embeddings=PLAN.pretrained_test_embeddings(models=["{model}"]),
        log:
            "logs/predict/{model}.log",
        benchmark:
            "results/benchmarks/predict/{model}.tsv"
        wildcard_constraints:
            model=r"[^/]+",
        conda:
            "../envs/torch.yaml"
        threads: config["analysis"]["embed"]["num_workers"] + 1
        resources:
            **network_resources(len(PLAN.predicted_stages) + 1),
        params:
            settings=lambda wildcards: PLAN.settings("predict", wildcards),
        script:
            "../workflow/scripts/predict.py"


rule amplification:
    input:
        splits=[path("split", dataset=d, split="test") for d in PLAN.predicted_datasets],
        attributes=[
            path("attributes", dataset=d, split="test")
            for d in PLAN.predicted_datasets
        ],
        predictions=PLAN.prediction_files(),
        embeddings=PLAN.prediction_files("prediction_embedding"),
        pretrained_embeddings=PLAN.pretrained_test_embeddings(),
    output:
        summary=PLAN.summary("amplification"),
        terms=PLAN.summary("amplification_terms"),
    log:
        "logs/amplification.log",
    benchmark:
        "results/benchmarks/amplification.tsv"
    localrule: True
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        **RESOURCES["predictions"],
    params:
        settings=PLAN.settings("amplification"),
    script:
        "../workflow/scripts/amplification.py"
