"""The one median every figure turnscope prints or writes is taken with (the mean of the middle
two for an even count, as ``statistics.median`` and numpy's 50th percentile take it)."""

from __future__ import annotations

import statistics
from collections.abc import Iterable

__all__ = ["median"]


def median(values: Iterable[float]) -> float | None:
    """The median of ``values``; None when there are none."""
    xs = list(values)
    return float(statistics.median(xs)) if xs else None
