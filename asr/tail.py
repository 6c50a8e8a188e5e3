"""A turn's end judged by the speech's spectral shape against the background after it.

Under loud steady noise the envelope threshold sits far above the speech's own quiet end (the
background's loud moments plus a margin), so the last syllable of a sentence, a final fricative
or a fading consonant, falls under it and the turn ends 100-175 ms early (real speech at 15 dB
SNR: "...himself", "...ledgers"). A listener still hears that syllable: it stands out of the
noise in the bands where it lies (a fricative at 2-5 kHz, a vowel's formants at 1-3 kHz), where
the noise is weaker than over the full band. ``spectral_end`` reads band levels (20 ms windows,
a 10 ms hop) over the sentence's last words and past the refined end, and follows the speech
while some band is both over that band's background (its loud end, read in the audio the
end-of-turn silence kept after the turn) and within reach of the sentence's own level in that
band (a reverberant or decaying tail 20 dB under the words is not heard as speech, however far
it is over the floor). The end only moves later: where the envelope already found speech it
stays.
"""

from __future__ import annotations

import itertools

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from turnscope.capture.frames import SAMPLE_RATE

_WIN = SAMPLE_RATE * 20 // 1000
_HOP = SAMPLE_RATE * 10 // 1000  # the hop the end is followed at; levels are read every _WIN
_EDGES_HZ = (150, 500, 1000, 2000, 3200, 5000, 7600)
_WORDS_MS = 400  # the sentence's last words, before the refined end: their own band levels
_NEAR_MS = 50  # the end is followed from this far before the refined end ...
_REACH_MS = 250  # ... to this far past it
# A final consonant's closure (the "l" before "...self"'s "f" under pink noise at 15 dB: 60-110
# ms) may pause the evidence this long, when what follows lasts _RUN_FRAMES (a fricative: 50-150
# ms; the noise's own swings over the margin are a frame or two). Measured (accuracy.py
# --real-only, boundary median/p90): gap 6 / run 1: 15 dB 22.6/95, 10 dB 30.2/118, as recorded
# 15.3/55; gap 8 / run 3: 25.0/86, 28.2/97, 15.8/46 (the quiet ends robustly found).
_GAP_FRAMES = 8
_RUN_FRAMES = 3
_BANDS_DB = 25.0  # bands whose peak is further than this under the loudest band's are not read
_GUARD_MS = 250  # the background is read from this far past the VAD's last voiced frame
_BG_FRAMES = (8, 15)  # 160-300 ms of it (non-overlapping windows), or the envelope's end stands
_RESOLUTION = _HOP  # a move shorter than a hop says nothing finer than the envelope does
# The background after the turn this far under everything past the end: the channel stepped down
# from the turn's own floor (a recorded reply's room tone, then digital silence on a phone line:
# judged against the silence, the room tone stood out in every band and ends ran 250 ms late).
_STEP_DB = 10.0

_FREQS = np.fft.rfftfreq(_WIN, 1.0 / SAMPLE_RATE)
_PAIRS = tuple(itertools.pairwise(_EDGES_HZ))
# Bins to bands, scaled so int16 squares come out in float audio units.
_SUM = np.zeros((len(_FREQS), len(_PAIRS)), dtype=np.float32)
for _k, (_lo, _hi) in enumerate(_PAIRS):
    _SUM[np.searchsorted(_FREQS, _lo) : np.searchsorted(_FREQS, _hi), _k] = 2.0**-30
_WINDOW = np.hanning(_WIN).astype(np.float32)


def band_levels(frames: np.ndarray) -> np.ndarray:
    """dB level of each band, (n, bands), of (n, 20 ms) windows of int16 audio (float32
    throughout: a few per turn end, cheap beside the VAD)."""
    spectrum = np.fft.rfft(frames.astype(np.float32) * _WINDOW, axis=1)
    power = spectrum.real**2 + spectrum.imag**2
    return 10.0 * np.log10(np.maximum(power @ _SUM, 1e-14))


def _full(levels: np.ndarray) -> np.ndarray:
    """Each frame's level over all the bands, dB."""
    return 10.0 * np.log10(np.power(10.0, levels / 10.0).sum(axis=1))


def _windows(pcm: np.ndarray, start: int, n: int, hop: int) -> np.ndarray:
    """``n`` windows of ``pcm`` from ``start``, ``hop`` apart, as an (n, _WIN) view."""
    return sliding_window_view(pcm[start : start + (n - 1) * hop + _WIN], _WIN)[::hop]


def spectral_end(
    pcm: np.ndarray, end: int, vad_end: int, margin_db: float, below_db: float
) -> int | None:
    """Where band evidence of speech that reaches the refined ``end`` (a sample index into the
    utterance's ``pcm``) stops, if that is later than ``end``; None otherwise, or when there is
    too little background after the VAD's last voiced frame ``vad_end`` to judge against."""
    bg_from = vad_end + SAMPLE_RATE * _GUARD_MS // 1000
    n_bg = min(_BG_FRAMES[1], (len(pcm) - bg_from) // _WIN)
    near = max(0, end - SAMPLE_RATE * _NEAR_MS // 1000 - _WIN // 2)
    hi = min(end + SAMPLE_RATE * _REACH_MS // 1000, bg_from) - _WIN // 2
    if n_bg < _BG_FRAMES[0] or hi <= near:
        return None
    first = max(0, end - SAMPLE_RATE * _WORDS_MS // 1000)
    n_words, n_near = -(-(near - first) // _WIN), -(-(hi - near) // _HOP)
    frames = [_windows(pcm, first, n_words, _WIN)] if n_words else []
    frames += [_windows(pcm, near, n_near, _HOP), _windows(pcm, bg_from, n_bg, _WIN)]
    levels = band_levels(np.concatenate(frames))
    said, levels, background = np.split(levels, [n_words, n_words + n_near])
    starts = near + _HOP * np.arange(n_near)
    if _full(levels).min() > float(np.median(_full(background))) + _STEP_DB:
        return None  # the end sits on a floor of its own (a recording's room tone): stretch.py's
    loud = np.sort(background, axis=0)[n_bg * 9 // 10]  # each band's loud end
    peaks = np.maximum(said.max(axis=0, initial=-140.0), levels.max(axis=0))  # the words' own
    heard = (levels >= loud + margin_db) & (levels >= peaks - below_db)
    # Bands the speech barely reaches are not read (a telephone recording's above 3.4 kHz).
    evidence = heard[:, peaks >= peaks.max() - _BANDS_DB].any(axis=1).tolist()
    if True not in evidence and not (said >= loud + margin_db).any():
        return None  # nothing of the words stands out: no shape to follow
    centres = starts + _WIN // 2
    at = int(np.searchsorted(centres, end, side="right"))  # frames centred at or before the end
    last, k = at - 1, at  # the envelope's end is speech: follow it from there
    while k < len(evidence):  # across pauses of up to _GAP_FRAMES to runs of _RUN_FRAMES
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
    moved = int(centres[last]) + _HOP // 2
    return moved if moved >= end + _RESOLUTION else None
