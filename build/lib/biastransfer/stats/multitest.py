"""Multiple-comparison adjustment of a table of p-values (Holm; Benjamini-Hochberg)."""

from __future__ import annotations

import numpy as np

from biastransfer.stats._validation import check_choice

METHODS = ("holm", "bh")


def adjust_pvalues(pvalues, method: str = "holm") -> np.ndarray:
    """Adjusted p-values, same shape as ``pvalues``; NaN entries stay NaN and are not counted.

    ``"holm"`` controls the family-wise error rate (Holm 1979, step-down Bonferroni);
    ``"bh"`` controls the false discovery rate for independent or positively dependent tests
    (Benjamini & Hochberg 1995, step-up). The family is every non-NaN entry of the table.
    """
    check_choice(method, "method", METHODS)
    try:
        p = np.array(pvalues, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"pvalues must be numbers: {err}") from None
    flat = p.reshape(-1)
    present = ~np.isnan(flat)
    bad = present & ((flat < 0) | (flat > 1))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"pvalues must lie in [0, 1]; entry {i} is {flat[i]}")
    values = flat[present]
    m = values.size
    if m == 0:
        return p
    order = np.argsort(values, kind="stable")
    ranked = values[order]
    rank = np.arange(1, m + 1)
    if method == "holm":
        adjusted = np.maximum.accumulate(np.minimum(1.0, (m - rank + 1) * ranked))
    else:
        adjusted = np.minimum.accumulate((m / rank * ranked)[::-1])[::-1]
        adjusted = np.minimum(1.0, adjusted)
    out = np.empty(m)
    out[order] = adjusted
    flat[present] = out
    return p
