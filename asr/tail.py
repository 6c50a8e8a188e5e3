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

import numpy as np

from turnscope.asr.bands import HOP as _HOP
from turnscope.asr.bands import WIN as _WIN
from turnscope.asr.bands import band_levels, follow, full_level, heard, windows
from turnscope.capture.frames import SAMPLE_RATE

_WORDS_MS = 400  # the sentence's last words, before the refined end: their own band levels
_NEAR_MS = 50  # the end is followed from this far before the refined end ...
_REACH_MS = 250  # ... to this far past it
_GUARD_MS = 250  # the background is read from this far past the VAD's last voiced frame
_BG_FRAMES = (8, 15)  # 160-300 ms of it (non-overlapping windows), or the envelope's end stands
_RESOLUTION = _HOP  # a move shorter than a hop says nothing finer than the envelope does
# The background after the turn this far under everything past the end: the channel stepped down
# from the turn's own floor (a recorded reply's room tone, then digital silence on a phone line:
# judged against the silence, the room tone stood out in every band and ends ran 250 ms late).
_STEP_DB = 10.0


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
    frames = [windows(pcm, first, n_words, _WIN)] if n_words else []
    frames += [windows(pcm, near, n_near, _HOP), windows(pcm, bg_from, n_bg, _WIN)]
    levels = band_levels(np.concatenate(frames))
    said, levels, background = np.split(levels, [n_words, n_words + n_near])
    starts = near + _HOP * np.arange(n_near)
    if full_level(levels).min() > float(np.median(full_level(background))) + _STEP_DB:
        return None  # the end sits on a floor of its own (a recording's room tone): stretch.py's
    evidence = heard(levels, said, background, margin_db, below_db)
    if evidence is None:
        return None
    centres = starts + _WIN // 2
    at = int(np.searchsorted(centres, end, side="right"))  # frames centred at or before the end
    last = follow(evidence, at)  # the envelope's end is speech: follow it from there
    moved = int(centres[last]) + _HOP // 2
    return moved if moved >= end + _RESOLUTION else None
