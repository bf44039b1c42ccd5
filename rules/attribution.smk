# Attribution across networks (analysis.attribution): groups of networks that differ only in their
# training data, compared on each network's iEAT effect size or prediction contrast (the link summary's
# primary measure) with a permutation test over networks.


rule attribution:
    input:
        ieat=PLAN.summary("ieat"),
        link=PLAN.attribution_link(),
    output:
        table=PLAN.summary("attribution"),
    log:
        "logs/attribution.log",
    benchmark:
        "results/benchmarks/attribution.tsv"
    localrule: True
    conda:
        "../envs/stats.yaml"
    threads: 1
    resources:
        **RESOURCES["plot"],
    params:
        settings=PLAN.settings("attribution"),
    script:
        "../workflow/scripts/attribution.py"
