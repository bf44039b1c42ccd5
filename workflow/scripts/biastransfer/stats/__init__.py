"""Statistics on row-wise embeddings: similarities, Bias Transfer Scores, iEATs, p-value adjustment and
the per-stage result tables built from them. Needs numpy, scipy and pandas; never torch.
"""

from biastransfer.stats.attribution import (  # noqa: F401
    POWER_PARTITIONS,
    NetworkComparison,
    attribution_table,
    compare_networks,
    detectable_shift,
    min_pvalue,
    network_values,
    partitions,
    permutation_pvalues,
    power,
)
from biastransfer.stats.bootstrap import (  # noqa: F401
    BOOTSTRAP,
    BootstrapResult,
    ChangeResult,
    IEATBlocks,
    bias_corrected_interval,
    bootstrap_pvalue,
    change_result,
    check_level,
    ieat_change,
    ieat_changes,
    ieat_ci,
    ieat_replicates,
    percentile_interval,
    resample_counts,
)
from biastransfer.stats.bts import (  # noqa: F401
    PVALUE_METHODS,
    BTSResult,
    bias_transfer_score,
)
from biastransfer.stats.change_tables import (  # noqa: F401
    aligned_classes,
    ieat_change_table,
    ieat_seeds_table,
    similarity_change_table,
    stage_replicates,
)
from biastransfer.stats.floors import (  # noqa: F401
    check_replicates,
    min_replicates,
    min_resampled_size,
    too_few_to_resample,
)
from biastransfer.stats.ieat import (  # noqa: F401
    MAX_EXACT_PARTITIONS,
    PERMUTATIONS,
    IEATResult,
    association_scores,
    effect_size_of,
    ieat,
    partition_pvalues,
)
from biastransfer.stats.multitest import (  # noqa: F401
    adjust_pvalues,
)
from biastransfer.stats.resampled_similarity import (  # noqa: F401
    SimilarityReplicates,
    rank_correlation_ci,
    similarity_changes,
    similarity_replicates,
)
from biastransfer.stats.results import (  # noqa: F401
    PAIR_SEP,
    add_adjusted_pvalues,
    bts_table,
    ieat_role_problems,
    ieat_table,
    pair_key,
    similarity_table,
    with_provenance,
)
from biastransfer.stats.seeds import (  # noqa: F401
    SeedsResult,
    combined_ieat,
)
from biastransfer.stats.similarity import (  # noqa: F401
    SimilarityResult,
    class_similarities,
    inter_class_similarity,
    intra_class_similarity,
)
from biastransfer.stats.trajectory import (  # noqa: F401
    TRAJECTORY_COLUMNS,
    curve_rows,
    epoch_rows,
    trajectory_table,
)

__all__ = [
    "SimilarityResult",
    "intra_class_similarity",
    "inter_class_similarity",
    "class_similarities",
    "PVALUE_METHODS",
    "BTSResult",
    "bias_transfer_score",
    "MAX_EXACT_PARTITIONS",
    "PERMUTATIONS",
    "IEATResult",
    "association_scores",
    "effect_size_of",
    "ieat",
    "partition_pvalues",
    "adjust_pvalues",
    "PAIR_SEP",
    "pair_key",
    "similarity_table",
    "bts_table",
    "ieat_table",
    "ieat_role_problems",
    "with_provenance",
    "add_adjusted_pvalues",
    "POWER_PARTITIONS",
    "NetworkComparison",
    "partitions",
    "permutation_pvalues",
    "min_pvalue",
    "power",
    "detectable_shift",
    "compare_networks",
    "network_values",
    "attribution_table",
    "BOOTSTRAP",
    "BootstrapResult",
    "ChangeResult",
    "check_level",
    "resample_counts",
    "percentile_interval",
    "bias_corrected_interval",
    "bootstrap_pvalue",
    "IEATBlocks",
    "ieat_replicates",
    "ieat_ci",
    "ieat_change",
    "ieat_changes",
    "change_result",
    "min_replicates",
    "check_replicates",
    "min_resampled_size",
    "too_few_to_resample",
    "aligned_classes",
    "ieat_change_table",
    "stage_replicates",
    "similarity_change_table",
    "ieat_seeds_table",
    "SimilarityReplicates",
    "similarity_replicates",
    "rank_correlation_ci",
    "similarity_changes",
    "SeedsResult",
    "combined_ieat",
    "TRAJECTORY_COLUMNS",
    "epoch_rows",
    "curve_rows",
    "trajectory_table",
]

# Layer profiles: iEAT and BTS at every profiled layer (stats/layer_profile.py).
from biastransfer.stats.layer_profile import PROFILE_COLUMNS, layer_profile_table  # noqa: F401,E402

__all__ += ["PROFILE_COLUMNS", "layer_profile_table"]
