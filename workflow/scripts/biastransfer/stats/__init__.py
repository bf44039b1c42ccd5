"""Statistics on row-wise embeddings: similarities, Bias Transfer Scores, iEATs, p-value adjustment and
the per-stage result tables built from them. Needs numpy, scipy and pandas; never torch.
"""

from biastransfer.stats.similarity import (  # noqa: F401
    SimilarityResult,
    intra_class_similarity,
    inter_class_similarity,
    class_similarities,
)
from biastransfer.stats.bts import (  # noqa: F401
    PVALUE_METHODS,
    BTSResult,
    bias_transfer_score,
)
from biastransfer.stats.ieat import (  # noqa: F401
    MAX_EXACT_PARTITIONS,
    IEATResult,
    association_scores,
    ieat,
)
from biastransfer.stats.multitest import (  # noqa: F401
    adjust_pvalues,
)
from biastransfer.stats.attribution import (  # noqa: F401
    NetworkComparison,
    compare_networks,
    attribution_table,
)
from biastransfer.stats.results import (  # noqa: F401
    PAIR_SEP,
    pair_key,
    similarity_table,
    bts_table,
    ieat_table,
    with_provenance,
    add_adjusted_pvalues,
)

__all__ = ['SimilarityResult', 'intra_class_similarity', 'inter_class_similarity', 'class_similarities', 'PVALUE_METHODS', 'BTSResult', 'bias_transfer_score', 'MAX_EXACT_PARTITIONS', 'IEATResult', 'association_scores', 'ieat', 'adjust_pvalues', 'PAIR_SEP', 'pair_key', 'similarity_table', 'bts_table', 'ieat_table', 'with_provenance', 'add_adjusted_pvalues', 'NetworkComparison', 'compare_networks', 'attribution_table']
