# Bias transfer: how gender biases in vision-model embeddings change with finetuning.
# Run: snakemake --cores all            (the offline synthetic demo, config/config.yaml)
#      snakemake --cores all --configfile config/paper.yaml   (the paper's experiment)
import os
import sys

from snakemake.utils import min_version

min_version("9.0")


# The demo config is the default; a --configfile given on the command line replaces it (not merged).
# Its YAML is read first: Snakemake's own message for a syntax error names neither file nor line.
if not workflow.config_settings.configfiles:
    sys.path.insert(0, os.path.join(workflow.basedir, "workflow", "scripts"))
    from biastransfer.config import read_config_file

    read_config_file(os.path.join(workflow.basedir, "config", "config.yaml"))

    configfile: os.path.join(workflow.basedir, "config", "config.yaml")


report: "workflow/report/workflow.rst"


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/datasets.smk"
include: "rules/user.smk"
include: "rules/models.smk"
include: "rules/cache.smk"
include: "rules/finetune.smk"
include: "rules/reference.smk"
include: "rules/embed.smk"
include: "rules/layers.smk"
include: "rules/analysis.smk"
include: "rules/trajectory.smk"
include: "rules/attribution.smk"
include: "rules/report.smk"
include: "rules/zoo.smk"


rule all:
    default_target: True
    input:
        all_targets(),
