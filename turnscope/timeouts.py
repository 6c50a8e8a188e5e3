"""How long turnscope waits on a network peer that took the connection and says nothing (a Ray
address that is not Ray, an object store that never answers): its own bound, one line when it
passes, never minutes of silence. ``TURNSCOPE_NETWORK_TIMEOUT_S`` replaces every such bound (a
slow link wants more; the tests want less)."""

from __future__ import annotations

import math
import os

from turnscope.errors import InputError

ENV = "TURNSCOPE_NETWORK_TIMEOUT_S"


def network_timeout_s(default: float) -> float:
    """``default`` seconds, or the environment's ``TURNSCOPE_NETWORK_TIMEOUT_S`` when set (a
    value that is not a positive finite number is bad input, named)."""
    raw = os.environ.get(ENV)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise InputError(
            f"{ENV}={raw[:40]!r} is not a number of seconds",
            fix=f"set {ENV} to a positive number (e.g. 30), or unset it",
        )
    return value
