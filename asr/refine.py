"""Boundary refinement: move a VAD frame boundary to where the speech envelope really starts/ends.

webrtcvad decides per 10-30 ms frame and needs a few voiced frames before it commits, so its
boundaries are quantised and late. Within the neighbourhood of a VAD boundary, the first/last
point where a short RMS envelope rises above a threshold is a much better estimate. The threshold
is relative to the utterance's own peak (so it means "audible relative to this speech") but never
below the channel's noise floor plus a margin (so noise does not extend the boundary).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from turnscope.capture.frames import SAMPLE_RATE

HOP = SAMPLE_RATE // 1000  # 1 ms
_FLOOR_DB = -120.0


def envelope_db(
    audio: np.ndarray, window_ms: float, lo: int = 0, hi: int | None = None
) -> np.ndarray:
    """RMS envelope in dBFS, one value per 1 ms hop, each the RMS of the window centred there.

    ``env[k]`` describes the audio around sample ``lo + k * HOP``; only ``[lo, hi)`` is
    computed (the windows still see the samples around it), so refining a boundary costs the
    same however long the utterance is.
    """
    n = len(audio)
    hi = n if hi is None else min(hi, n)
    lo = max(0, lo)
    if hi <= lo:
        return np.zeros(0)
    win = max(1, int(round(window_ms * SAMPLE_RATE / 1000)))
    half = win // 2
    a, b = max(0, lo - half), min(n, hi - half + win)
    x = audio[a:b].astype(np.float64)
    csum = np.concatenate([[0.0], np.cumsum(x * x)])
    centres = np.arange(lo, hi, HOP)
    left = np.clip(centres - half, a, b) - a
    right = np.clip(centres - half + win, a, b) - a
    energy = (csum[right] - csum[left]) / win
    return 10.0 * np.log10(np.maximum(energy, 1e-12))


def energy_db(mean_square: float) -> float:
    """Mean square of float audio in [-1, 1] to dBFS."""
    return 10.0 * math.log10(mean_square) if mean_square > 1e-12 else _FLOOR_DB


@dataclass(frozen=True)
class RefineParams:
    below_peak_db: float
    noise_margin_db: float
    search_ms: int
    max_dip_ms: float


def threshold_db(peak_db: float, noise_db: float | None, p: RefineParams) -> float:
    """The envelope level that counts as speech for this utterance on this channel."""
    t = peak_db - p.below_peak_db
    if noise_db is not None:
        t = max(t, noise_db + p.noise_margin_db)
    return t


def refine_start(env: np.ndarray, coarse: int, thresh: float, p: RefineParams) -> int:
    """Refined onset (in env hops) near the VAD onset hop ``coarse``.

    Anchor at the first hop at/after ``coarse`` above the threshold, then walk back across the
    speech (tolerating dips up to max_dip_ms) to the earliest hop above it.
    """
    n = len(env)
    if n == 0:
        return coarse
    lo = max(0, coarse - p.search_ms)
    hi = min(n - 1, coarse + p.search_ms)
    above = np.flatnonzero(env[coarse : hi + 1] >= thresh) if coarse < n else np.empty(0)
    if len(above) == 0:
        # Nothing above the threshold after the VAD onset: maybe the onset was before it.
        before = np.flatnonzero(env[lo : min(coarse, n)] >= thresh)
        if len(before) == 0:
            return coarse
        anchor = lo + int(before[-1])
    else:
        anchor = coarse + int(above[0])
    best = anchor
    dip = 0
    for k in range(anchor - 1, lo - 1, -1):
        if env[k] >= thresh:
            best, dip = k, 0
        else:
            dip += 1
            if dip > p.max_dip_ms:
                break
    return best


def refine_end(env: np.ndarray, coarse: int, thresh: float, p: RefineParams) -> int:
    """Refined offset (in env hops, exclusive) near the VAD offset hop ``coarse``."""
    n = len(env)
    if n == 0:
        return coarse
    lo = max(0, coarse - p.search_ms)
    hi = min(n - 1, coarse + p.search_ms)
    above = np.flatnonzero(env[lo : min(coarse, n)] >= thresh)
    if len(above) == 0:
        after = np.flatnonzero(env[min(coarse, n - 1) : hi + 1] >= thresh)
        if len(after) == 0:
            return coarse
        anchor = min(coarse, n - 1) + int(after[0])
    else:
        anchor = lo + int(above[-1])
    best = anchor
    dip = 0
    for k in range(anchor + 1, hi + 1):
        if env[k] >= thresh:
            best, dip = k, 0
        else:
            dip += 1
            if dip > p.max_dip_ms:
                break
    return best + 1
