"""Axis scales for the pages' charts: round tick values and their labels in ms and s."""

from __future__ import annotations

import math

STEPS = (1.0, 2.0, 2.5, 5.0)


def nice_step(span: float, ticks: int = 5) -> float:
    """A round step (1, 2, 2.5 or 5 times a power of ten) giving about ``ticks`` ticks."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / max(1, ticks)
    power = 10.0 ** math.floor(math.log10(raw))
    return next((s * power for s in STEPS if s * power >= raw), 10 * power)


def ticks(top: float, count: int = 5) -> list[float]:
    """0, step, 2 step ... up to the first tick at or above ``top``."""
    step = nice_step(top, count)
    n = max(1, math.ceil(top / step - 1e-9))
    return [round(k * step, 6) for k in range(n + 1)]


def ms_label(ms: float) -> str:
    """``250 ms`` below a second, ``1.5 s`` from one."""
    if abs(ms) < 1000:
        return f"{ms:.0f} ms"
    return f"{ms / 1000:.3g} s"


def s_label(s: float) -> str:
    """Seconds on a time axis: ``0 s``, ``7.5 s``, ``2 min`` past two minutes when round."""
    if s >= 120 and s % 60 == 0:
        return f"{s / 60:g} min"
    return f"{s:g} s"
