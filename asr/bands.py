"""Band levels of short windows of speech: what a turn's spectral end and start are read from.

Six bands, 150 Hz-7.6 kHz, of 20 ms Hann windows: a fricative lies at 2-5 kHz and over, a
vowel's formants at 1-3 kHz, where pink and most room noise is weaker than over the full band,
so a quiet sound under the noise's full-band level can still stand out of it in its own band.
"""

from __future__ import annotations

import itertools

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from turnscope.capture.frames import SAMPLE_RATE

__all__ = ["HOP", "WIN", "band_levels", "follow", "full_level", "heard", "windows"]

WIN = SAMPLE_RATE * 20 // 1000
HOP = SAMPLE_RATE * 10 // 1000  # the hop a boundary is followed at; levels are read every WIN
_EDGES_HZ = (150, 500, 1000, 2000, 3200, 5000, 7600)
_BANDS_DB = 25.0  # bands whose peak is further than this under the loudest band's are not read
# A consonant's closure (the "l" before "...self"'s "f" under pink noise at 15 dB: 60-110 ms;
# the "t" of "stop") may pause the evidence this long, when what lies past it lasts _RUN_FRAMES
# (a fricative: 50-150 ms; the noise's own swings over the margin are a frame or two). Measured
# on ends (accuracy.py --real-only, boundary median/p90): gap 6 / run 1: 15 dB 22.6/95, 10 dB
# 30.2/118, as recorded 15.3/55; gap 8 / run 3: 25.0/86, 28.2/97, 15.8/46.
_GAP_FRAMES = 8
_RUN_FRAMES = 3

_FREQS = np.fft.rfftfreq(WIN, 1.0 / SAMPLE_RATE)
_PAIRS = tuple(itertools.pairwise(_EDGES_HZ))
# Bins to bands, scaled so int16 squares come out in float audio units.
_SUM = np.zeros((len(_FREQS), len(_PAIRS)), dtype=np.float32)
for _k, (_lo, _hi) in enumerate(_PAIRS):
    _SUM[np.searchsorted(_FREQS, _lo) : np.searchsorted(_FREQS, _hi), _k] = 2.0**-30
_WINDOW = np.hanning(WIN).astype(np.float32)


def band_levels(frames: np.ndarray) -> np.ndarray:
    """dB level of each band, (n, bands), of (n, 20 ms) windows of int16 audio (float32
    throughout: a few per turn boundary, cheap beside the VAD)."""
    spectrum = np.fft.rfft(frames.astype(np.float32) * _WINDOW, axis=1)
    power = spectrum.real**2 + spectrum.imag**2
    return 10.0 * np.log10(np.maximum(power @ _SUM, 1e-14))


def full_level(levels: np.ndarray) -> np.ndarray:
    """Each window's level over all the bands, dB."""
    return 10.0 * np.log10(np.power(10.0, levels / 10.0).sum(axis=1))


def windows(pcm: np.ndarray, start: int, n: int, hop: int) -> np.ndarray:
    """``n`` windows of ``pcm`` from ``start``, ``hop`` apart, as an (n, WIN) view."""
    return sliding_window_view(pcm[start : start + (n - 1) * hop + WIN], WIN)[::hop]


def heard(
    levels: np.ndarray, said: np.ndarray, background: np.ndarray, margin_db: float, below_db: float
) -> list[bool] | None:
    """For each window of ``levels``, whether some band is both ``margin_db`` over that band's
    background (its 90th percentile in ``background``) and within ``below_db`` of the speech's
    own level in it (the loudest of ``said``, the words beside the boundary, and ``levels``);
    None when nothing of the words stands out of the background: no shape to follow."""
    loud = np.sort(background, axis=0)[len(background) * 9 // 10]  # each band's loud end
    peaks = np.maximum(said.max(axis=0, initial=-140.0), levels.max(axis=0))
    over = (levels >= loud + margin_db) & (levels >= peaks - below_db)
    # Bands the speech barely reaches are not read (a telephone recording's above 3.4 kHz).
    found = over[:, peaks >= peaks.max() - _BANDS_DB].any(axis=1).tolist()
    if True not in found and not (said >= loud + margin_db).any():
        return None
    return found


def follow(evidence: list[bool], k: int) -> int:
    """The last window the speech reaches, following ``evidence`` from window ``k`` (``k - 1``,
    speech already, when it reaches none): across pauses of up to _GAP_FRAMES to runs of
    _RUN_FRAMES, or straight on."""
    last = k - 1
    while k < len(evidence):
        nxt = next(
            (j for j in range(k, min(len(evidence), k + _GAP_FRAMES + 1)) if evidence[j]), None
        )
        if nxt is None:
            break
        run = nxt
        while run < len(evidence) and evidence[run]:
            run += 1
        if nxt == k or run - nxt >= _RUN_FRAMES:
            last = run - 1
        k = run
    return last
