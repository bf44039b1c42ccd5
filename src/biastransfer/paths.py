"""Every file that one job of the workflow writes and another reads, declared once (rules/*.smk use it).

``path(name)`` is the template (a rule's output pattern); ``path(name, model=m)`` fills some wildcards and
keeps the others, e.g. ``path("manifest", analysis_set="{real_set}")`` for a rule whose wildcard has
another name.
"""

from __future__ import annotations

import re

PATHS = {
    "manifest": "results/analysis_sets/{analysis_set}/manifest.parquet",
    "selection": "results/analysis_sets/{analysis_set}/selection.parquet",
    "split": "results/splits/{dataset}/{split}.parquet",
    "attributes": "results/splits/{dataset}/{split}_attributes.parquet",
    "sample_weights": "results/splits/{dataset}/train_weights.parquet",
    "cooccurrence": "results/interventions/{dataset}/cooccurrence.csv",
    "comparison_change": "results/compare/{arm}_vs_{against}/{analysis_set}/{model}.csv",
    "image_cache": "results/cache/{dataset}/{setting}/{split}.json",
    "leakage_check": "results/checks/leakage/{analysis_set}.ok",
    "pretrain_run": "results/pretrain/{model}/{file}",
    "finetune_run": "results/finetune/{dataset}/{model}/seed{seed}/{file}",
    "scratch_run": "results/scratch/{dataset}/{model}/seed{seed}/{file}",
    "embeddings": "results/embeddings/{analysis_set}/{model}/{stage}.parquet",
    "stage_table": "results/{kind}/{analysis_set}/{model}/{stage}.csv",
    "bts": "results/bts/{analysis_set}/{model}/ft-{dataset}.csv",
    "cka": "results/cka/{analysis_set}/{model}/ft-{dataset}.csv",
    "change": "results/change/{analysis_set}/{model}/ft-{dataset}/{kind}.csv",
    "trajectory_folder": "results/trajectory/{analysis_set}/{model}/{stage}",
    "trajectory_table": "results/trajectory/{analysis_set}/{model}/ft-{dataset}.csv",
    "trajectory_settings": "results/trajectory/settings/{model}/ft-{dataset}.json",
    "layer_embeddings": "results/layers/{analysis_set}/{model}/embeddings/{stage}",
    "layer_profile": "results/layers/{analysis_set}/{model}/profile.csv",
    "predictions": "results/predictions/{model}/{stage}.parquet",
    "prediction_embedding": "results/predictions/{model}/{stage}.embedding.parquet",
    "pretrained_test_embedding": "results/predictions/{model}/pretrained-{dataset}.embedding.parquet",
    "analyses_done": "results/checks/analyses/{model}.done",
    "summary": "results/summary/{summary}.csv",
}


def path(name: str, **values) -> str:
    """A declared file's path (:data:`PATHS`): its template with ``values`` filled in, every other wildcard
    kept as it is."""
    return re.sub(r"\{(\w+)\}", lambda m: str(values.get(m[1], m[0])), PATHS[name])
