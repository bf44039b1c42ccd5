# Decoded-once training cache of each finetuning split (finetune.cache): every image is read once,
# resized so that its short side is where the model's preprocessing starts (its resize), and stored in
# a few Arrow IPC shards with an index (docs/formats.md). Every model with that resize, every seed and
# every epoch of the dataset reads it; {setting} is SIDE-INTERPOLATION-qQUALITY, so another resize or
# quality is another cache, and a new split (its sha256 is in the index) rebuilds it. Each row records
# its image file's size, modification time and sha256: a finetuning job reads an image changed since
# from its file. The format version is a param, so that a cache of an older format is rebuilt ("params
# changed"). Input function: finetune_cache (rules/inputs.smk); the finetuning jobs read the caches as
# ancient inputs: a rebuilt cache holds the same images (a new split reruns them through the split itself).


rule image_cache:
    input:
        split_file=path("split"),
    output:
        index=path("image_cache"),
        shards=directory(path("image_cache").removesuffix(".json") + ".shards"),
    log:
        "logs/image_cache/{dataset}/{setting}/{split}.log",
    benchmark:
        "results/benchmarks/image_cache/{dataset}/{setting}/{split}.tsv"
    wildcard_constraints:
        split="train|val",
        setting=r"[0-9]+-(bilinear|bicubic)-q[0-9]+",
    conda:
        "../envs/data.yaml"
    # one decoding process per thread
    threads: 8
    resources:
        mem_mb=lambda wildcards, threads, attempt: (1000 + 300 * threads) * attempt,
        runtime=lambda wildcards, attempt: 240 * attempt,
    params:
        settings=PLAN.settings("image_cache"),
    script:
        "../workflow/scripts/image_cache.py"
