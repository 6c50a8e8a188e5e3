"""Percentiles across a load run's calls (the report's, and each hop's)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel


class Percentiles(BaseModel):
    n: int
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    max: float | None = None

    @classmethod
    def of(cls, values: Sequence[float]) -> Percentiles:
        if not values:
            return cls(n=0)
        p50, p90, p99 = (round(float(v), 1) for v in np.percentile(values, [50, 90, 99]))
        return cls(n=len(values), p50=p50, p90=p90, p99=p99, max=round(float(max(values)), 1))
