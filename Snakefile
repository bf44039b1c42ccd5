# Bias transfer: how gender biases in vision-model embeddings change with finetuning.
# Run: snakemake --cores all            (the offline synthetic demo, config/config.yaml)
#      snakemake --cores all --configfile config/paper.yaml   (the paper's experiment)
import os
import sys

from snakemake.utils import min_version

min_version("9.0")


# The library (src/biastransfer), found from this file's folder so that the workflow also runs as another
# project's module; each job's script finds it through workflow/scripts/biastransfer, a link to it in the
# folder that Snakemake puts on a script's path (in any conda env too, which blocks PYTHONPATH).
sys.path.insert(0, os.path.join(workflow.basedir, "src"))
from biastransfer.config import read_config_file

# The demo config is the default; a --configfile given on the command line replaces it (not merged).
# Every config file's YAML is read first: Snakemake's own message for a syntax error names neither file
# nor line, and its reading keeps the last of a key given twice (an appended block replaces the first).

for path in workflow.config_settings.configfiles or [
    os.path.join(workflow.basedir, "config", "config.yaml")
]:
    read_config_file(path)

if not workflow.config_settings.configfiles:

    configfile: os.path.join(workflow.basedir, "config", "config.yaml")


report: "workflow/report/workflow.rst"


include: "rules/common.smk"
include: "rules/artefacts.smk"
include: "rules/synthetic.smk"
include: "rules/interventions.smk"
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
