"""A turn's start judged by the speech's spectral shape against the background before it.

Under loud steady noise the envelope threshold sits over a word's quiet onset, so a turn that
opens on a fricative or a stop's burst starts at its first vowel: a caller's "stop" at 10 dB
SNR was found 105 ms late, and a barge-in that late no longer overlaps the agent it cut. The
"s" still stands out of the noise where it lies (pink noise is weakest at 5-7.6 kHz).
``spectral_start`` mirrors tail.py's end: band levels (20 ms windows, a 10 ms hop) before the
refined start, against each band's background in the pre-roll before them, followed back while
some band is over that background and within reach of the first words' own level, across a
stop's closure. The start only moves earlier: where the envelope already found speech it stays.
"""

from __future__ import annotations

import numpy as np

from turnscope.asr.bands import HOP, WIN, band_levels, follow, full_level, heard, windows
from turnscope.capture.frames import SAMPLE_RATE

__all__ = ["spectral_start"]

_WORDS_MS = 400  # the first words, after the refined start: their own band levels
_NEAR_MS = 50  # the start is followed from this far after the refined start ...
_REACH_MS = 150  # ... to this far before it (an "s" and a "t"'s closure)
_BG_FRAMES = (8, 30)  # 90-300 ms of pre-roll before that (windows a hop apart), or it stands
# The background before the turn this far under everything in reach of the start: the channel
# stepped up onto the turn's own floor (a recorded reply's room tone after digital silence),
# which stretch.py reads; against the silence the tone would stand out in every band.
_STEP_DB = 10.0


def spectral_start(pcm: np.ndarray, start: int, margin_db: float, below_db: float) -> int | None:
    """Where band evidence of speech that reaches back from the refined ``start`` (a sample
    index into the utterance's ``pcm``, its pre-roll first) begins, if that is earlier than
    ``start``; None otherwise, or when there is too little pre-roll to judge against."""
    lo = start - SAMPLE_RATE * _REACH_MS // 1000 - WIN // 2
    hi = min(start + SAMPLE_RATE * _NEAR_MS // 1000 - WIN // 2, len(pcm) - WIN + 1)
    n_bg = min(_BG_FRAMES[1], (lo - WIN) // HOP + 1) if lo >= WIN else 0
    n_words = min(SAMPLE_RATE * _WORDS_MS // 1000, len(pcm) - start) // WIN
    if n_bg < _BG_FRAMES[0] or hi <= lo or n_words < 1:
        return None
    n_near = -(-(hi - lo) // HOP)
    bg_first = lo - WIN - (n_bg - 1) * HOP  # the background's windows end where the reach begins
    levels = band_levels(
        np.concatenate(
            [
                windows(pcm, start, n_words, WIN),
                windows(pcm, lo, n_near, HOP),
                windows(pcm, bg_first, n_bg, HOP),
            ]
        )
    )
    said, levels, background = np.split(levels, [n_words, n_words + n_near])
    if full_level(levels).min() > float(np.median(full_level(background))) + _STEP_DB:
        return None  # the start sits on a floor of its own (a recording's room tone)
    evidence = heard(levels, said, background, margin_db, below_db)
    if evidence is None:
        return None
    centres = lo + WIN // 2 + HOP * np.arange(n_near)
    at = int(np.searchsorted(centres, start, side="left"))  # frames centred before the start
    # Followed backwards: the frames centred at or after the start are speech already.
    first = n_near - 1 - follow(evidence[::-1], n_near - at)
    moved = int(centres[first]) - HOP // 2
    return moved if moved <= start - HOP else None
