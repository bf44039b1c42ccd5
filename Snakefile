# Bias transfer: how gender biases in vision-model embeddings change with finetuning.
# Run: snakemake --cores all            (the offline synthetic demo, config/config.yaml)
#      snakemake --cores all --configfile config/paper.yaml   (the paper's experiment)
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/models.smk"
include: "rules/finetune.smk"
include: "rules/embed.smk"
include: "rules/analysis.smk"
include: "rules/report.smk"


rule all:
    default_target: True
    input:
        all_targets(),
