"""How the findings write numbers: one wording for every interval, estimate and range (p-values:
``report.formatting.p_text``, shared with the tables)."""

from __future__ import annotations

import math

from biastransfer.report.formatting import p_text

__all__ = ["estimate", "interval", "p_text", "value_range"]


def interval(low: float, high: float, level: float | None = None, digits: int = 2) -> str:
    """``95% CI [0.12, 0.80]`` (``[0.12, 0.80]`` without a level); empty when a bound is unknown."""
    if low is None or high is None or math.isnan(float(low)) or math.isnan(float(high)):
        return ""
    bounds = f"[{float(low):.{digits}f}, {float(high):.{digits}f}]"
    return bounds if level is None else f"{float(level):.0%} CI {bounds}"


def estimate(symbol: str, value: float, low: float = math.nan, high: float = math.nan, **kw) -> str:
    """``d = 1.27 [0.62, 1.64]``: a named estimate and its :func:`interval` (``level``, ``digits``)."""
    bounds = interval(low, high, **kw)
    return f"{symbol} = {float(value):.{kw.get('digits', 2)}f}" + (f" {bounds}" if bounds else "")


def value_range(low: float, high: float, digits: int = 2) -> str:
    """A range of values (over seeds, layers or models), never an interval: ``0.12 to 0.80``."""
    return f"{float(low):.{digits}f} to {float(high):.{digits}f}"
