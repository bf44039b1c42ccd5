# Bias transfer: how gender biases in vision-model embeddings change with finetuning.
# Run: snakemake --cores all            (the offline synthetic demo, config/config.yaml)
#      snakemake --cores all --configfile config/paper.yaml   (the paper's experiment)
import os
import sys

from snakemake.utils import min_version

min_version("9.0")


# This file's folder (also when the workflow is another project's module, whose workflow.basedir is the
# host's): the library (src/biastransfer), the schema, the word lists and the report's captions are found
# from it. Each job's script finds the library through workflow/scripts/biastransfer, a link to it in the
# folder that Snakemake puts on a script's path (in any conda env too, which blocks PYTHONPATH).
BASEDIR = str(workflow.current_basedir)
sys.path.insert(0, os.path.join(BASEDIR, "src"))
from biastransfer.workflow.config import read_config_file

# The demo config is the default; a --configfile given on the command line replaces it (not merged); a
# module's host gives its config whole. Every config file's YAML is read first: Snakemake's own message for a
# syntax error names neither file nor line, and its reading keeps the last of a key given twice.

if not workflow.modifier.skip_configfile:
    for path in workflow.config_settings.configfiles or [
        os.path.join(BASEDIR, "config", "config.yaml")
    ]:
        read_config_file(path)

if not workflow.config_settings.configfiles:

    configfile: os.path.join(BASEDIR, "config", "config.yaml")


report: "workflow/report/workflow.rst"


include: "rules/common.smk"
include: "rules/artefacts.smk"
include: "rules/synthetic.smk"
include: "rules/interventions.smk"
include: "rules/mitigations.smk"
include: "rules/comparisons.smk"
include: "rules/real_data.smk"
include: "rules/analysis_sets.smk"
include: "rules/models.smk"
include: "rules/cache.smk"
include: "rules/finetune.smk"
include: "rules/scratch.smk"
include: "rules/embed.smk"
include: "rules/predictions.smk"
include: "rules/report.smk"
include: "rules/layers.smk"
include: "rules/analysis.smk"
include: "rules/link.smk"
include: "rules/trajectory.smk"
include: "rules/attribution.smk"
include: "rules/claims.smk"
include: "rules/zoo.smk"
include: "rules/tables.smk"


rule all:
    default_target: True
    input:
        all_targets(),
