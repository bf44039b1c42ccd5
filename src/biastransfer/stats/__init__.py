"""Statistics on row-wise embeddings (numpy, scipy and pandas; never torch).

The curated public API (docs/api.md); everything else stays in its module. Names load on
first use (biastransfer._lazy).

- Similarities: :func:`intra_class_similarity`, :func:`inter_class_similarity`, :func:`class_similarities`
- Bias Transfer Score: :func:`bias_transfer_score`, and whether it shows retention against a network trained
  from scratch: :func:`retention_difference`
- iEAT: :func:`ieat`, :func:`association_scores`, the change before and after finetuning :func:`ieat_change`,
  whether that change comes from the spread alone :func:`change_from_spread`, the seeds of one model combined
  :func:`combined_ieat`, and the smallest |d| a test of these set sizes detects :func:`detectable_effect_size`
- Across networks: :func:`compare_networks`, :func:`detectable_shift`, :func:`min_pvalue`; the same models under
  two conditions :func:`compare_paired`; claims about groups of models, Holm over the claims, with verdicts in
  words :func:`claims_table`; how each of these is tested and powered: :class:`Design`; what predicts a measure
  across models, a mixed model on the models' covariates with cluster-bootstrap intervals :func:`meta_regression`
- Multiple testing: :func:`adjust_pvalues`
- Prediction-level bias of a classifier: :func:`bias_amplification` (directional BiasAmp_{A->T} or Zhao et al.'s)
  and both at once :func:`bias_amplifications`, predictions from scores :func:`predict_at_threshold` and
  :func:`predict_at_base_rate` (attribute leakage is in :mod:`biastransfer.stats.leakage`, not re-exported here:
  it needs scikit-learn, which the workflow's stats env does not carry)
- The link across levels: the rank correlation of two measures over networks, with an interval and a verdict
  that says when there are too few networks :func:`rank_correlation`, and the prediction-level counterpart of an
  iEAT's association :func:`association_contrast`
- How much of a representation another keeps: linear CKA with its jackknife interval over images
  :func:`linear_cka`, several networks against one :func:`paired_cka`
- Result tables (one row per result, as the workflow's CSVs): :func:`similarity_table`, :func:`ieat_table`,
  :func:`bts_table`, :func:`cka_table`
- Result objects: :class:`SimilarityResult`, :class:`BTSResult`, :class:`IEATResult`, :class:`ChangeResult`,
  :class:`SeedsResult`, :class:`NetworkComparison`, :class:`PairedComparison`, :class:`RetentionResult`,
  :class:`AmplificationResult`, :class:`RankCorrelation`, :class:`ContrastResult`, :class:`CKAResult`,
  :class:`FactorsResult`
"""

from biastransfer._lazy import lazy_namespace as _lazy_namespace

#: Each public name and the module of this package that defines it, in the order docs/api.md lists them.
_EXPORTS = {
    "intra_class_similarity": "similarity",
    "inter_class_similarity": "similarity",
    "class_similarities": "similarity",
    "bias_transfer_score": "bts",
    "retention_difference": "bts",
    "ieat": "ieat",
    "association_scores": "ieat",
    "ieat_change": "bootstrap",
    "change_from_spread": "change_tables",
    "combined_ieat": "seeds",
    "detectable_effect_size": "ieat",
    "compare_networks": "attribution",
    "detectable_shift": "attribution",
    "min_pvalue": "attribution",
    "compare_paired": "claims",
    "claims_table": "claims",
    "meta_regression": "factors",
    "Design": "attribution",
    "adjust_pvalues": "multitest",
    "bias_amplification": "amplification",
    "bias_amplifications": "amplification",
    "predict_at_threshold": "amplification",
    "predict_at_base_rate": "amplification",
    "rank_correlation": "link",
    "association_contrast": "link",
    "linear_cka": "cka",
    "paired_cka": "cka",
    "similarity_table": "results",
    "ieat_table": "results",
    "bts_table": "results",
    "cka_table": "results",
    "SimilarityResult": "similarity",
    "BTSResult": "bts",
    "IEATResult": "ieat",
    "ChangeResult": "bootstrap",
    "SeedsResult": "seeds",
    "NetworkComparison": "attribution",
    "PairedComparison": "claims",
    "RetentionResult": "bts",
    "AmplificationResult": "amplification",
    "RankCorrelation": "link",
    "ContrastResult": "link",
    "CKAResult": "cka",
    "FactorsResult": "factors",
}
__all__ = list(_EXPORTS)
_lazy_namespace(__name__, _EXPORTS)
