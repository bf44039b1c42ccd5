# From embeddings to predictions: every finetuned network and every scratch reference network scores the
# test split of the dataset it was trained on (rule synthetic_test_split; per-image sigmoid scores of every
# class, with provenance, and from the same forward pass its embedding of each image; one job per model,
# which decodes each test image once for all of that model's networks of its dataset), and one job measures
# how the predictions amplify the dataset's bias: bias amplification A -> T (directional, Zhao et al.) at a
# threshold and at base rates, and leakage from the labels, the scores and the embedding, with bootstrap
# intervals (analysis.predictions; docs/statistics.md). Only datasets with a test split: the
# synthetic kind with n_test > 0, COCO and Open Images with evaluation.enabled, a table with `split: test`
# rows (PREDICTED_DATASETS, rules/common.smk; the real kinds' split: rules/real_data.smk).
table_artefact(
    "amplification",
    "results/summary/amplification.csv",
    "results/tables/amplification_{dataset}",
    caption="table_amplification.rst",
    section="Prediction-level bias",
    title="Bias amplification and leakage of the predictions, finetuned on {dataset}",
    instances=combinations(dataset=PREDICTED_DATASETS),
)


if PREDICTED_DATASETS:

    rule predict:
        input:
            splits=[path("split", dataset=d, split="test") for d in PREDICTED_DATASETS],
            weights=predicted_weights,
        output:
            predictions=prediction_files(models=["{model}"]),
            embeddings=prediction_files("prediction_embedding", models=["{model}"]),
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
            mem_mb=embed_mem_mb,
            runtime=predict_runtime,
            gpu=EMBED_GPUS,
        params:
            datasets=PREDICTED_DATASETS,
            stages=PREDICTED_STAGES,
            entry=lambda wildcards: cfg.canonical(network_entry(wildcards.model)),
            inference=inference_settings,
        script:
            "../workflow/scripts/predict.py"


rule amplification:
    input:
        splits=[path("split", dataset=d, split="test") for d in PREDICTED_DATASETS],
        attributes=[
            path("attributes", dataset=d, split="test") for d in PREDICTED_DATASETS
        ],
        predictions=prediction_files(),
        embeddings=prediction_files("prediction_embedding"),
    output:
        summary="results/summary/amplification.csv",
        terms="results/summary/amplification_terms.csv",
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
        settings=cfg.canonical(config["analysis"]["predictions"]),
    script:
        "../workflow/scripts/amplification.py"
