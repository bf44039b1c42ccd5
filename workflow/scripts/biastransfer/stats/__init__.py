"""Statistics on row-wise embeddings (numpy, scipy and pandas; never torch).

The curated public API (docs/api.md); everything else stays in its module.

- Similarities: :func:`intra_class_similarity`, :func:`inter_class_similarity`, :func:`class_similarities`
- Bias Transfer Score: :func:`bias_transfer_score`, and whether it shows retention against a network trained
  from scratch: :func:`retention_difference`
- iEAT: :func:`ieat`, :func:`association_scores`, the change before and after finetuning :func:`ieat_change`,
  whether that change comes from the spread alone :func:`change_from_spread`, the seeds of one model combined
  :func:`combined_ieat`, and the smallest |d| a test of these set sizes detects :func:`detectable_effect_size`
- Across networks: :func:`compare_networks`, :func:`detectable_shift`, :func:`min_pvalue`
- Multiple testing: :func:`adjust_pvalues`
- Prediction-level bias of a classifier: :func:`bias_amplification` (directional BiasAmp_{A->T} or Zhao et al.'s)
  and both at once :func:`bias_amplifications`, predictions from scores :func:`predict_at_threshold` and
  :func:`predict_at_base_rate` (attribute leakage is in :mod:`biastransfer.stats.leakage`, not re-exported here:
  it needs scikit-learn, which the workflow's stats env does not carry)
- Result tables (one row per result, as the workflow's CSVs): :func:`similarity_table`, :func:`ieat_table`,
  :func:`bts_table`
- Result objects: :class:`SimilarityResult`, :class:`BTSResult`, :class:`IEATResult`, :class:`ChangeResult`,
  :class:`SeedsResult`, :class:`NetworkComparison`, :class:`RetentionResult`, :class:`AmplificationResult`
"""

from biastransfer.stats.amplification import (
    AmplificationResult,
    bias_amplification,
    bias_amplifications,
    predict_at_base_rate,
    predict_at_threshold,
)
from biastransfer.stats.attribution import NetworkComparison, compare_networks, detectable_shift, min_pvalue
from biastransfer.stats.bootstrap import ChangeResult, ieat_change
from biastransfer.stats.bts import BTSResult, RetentionResult, bias_transfer_score, retention_difference
from biastransfer.stats.change_tables import change_from_spread
from biastransfer.stats.ieat import IEATResult, association_scores, detectable_effect_size, ieat
from biastransfer.stats.multitest import adjust_pvalues
from biastransfer.stats.results import bts_table, ieat_table, similarity_table
from biastransfer.stats.seeds import SeedsResult, combined_ieat
from biastransfer.stats.similarity import (
    SimilarityResult,
    class_similarities,
    inter_class_similarity,
    intra_class_similarity,
)

__all__ = [
    "intra_class_similarity",
    "inter_class_similarity",
    "class_similarities",
    "bias_transfer_score",
    "retention_difference",
    "ieat",
    "association_scores",
    "ieat_change",
    "change_from_spread",
    "combined_ieat",
    "detectable_effect_size",
    "compare_networks",
    "detectable_shift",
    "min_pvalue",
    "adjust_pvalues",
    "bias_amplification",
    "bias_amplifications",
    "predict_at_threshold",
    "predict_at_base_rate",
    "similarity_table",
    "ieat_table",
    "bts_table",
    "SimilarityResult",
    "BTSResult",
    "IEATResult",
    "ChangeResult",
    "SeedsResult",
    "NetworkComparison",
    "RetentionResult",
    "AmplificationResult",
]
