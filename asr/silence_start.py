"""A turn's start after digital silence: the quiet first sound of a word heard against silence.

Refinement's threshold (the speech's peak less ``below_peak_db``, 40 dB) sits right on a quiet
first consonant such as espeak-ng's "th" on a phone line; whether webrtcvad flagged it then
depended on where it fell against the 10 ms frames, and the reference agent's first prompt
started 76 ms late in 4 of 10 phone-line calls. Against digital silence a listener hears it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["from_silence"]

# Digital silence on the envelope (-100 dBFS: asr/noise.py's SILENT; Opus near-silence is -110).
_SILENT_DB = -100.0
_UNDER_THRESHOLD_DB = 12.0  # the quiet sound at most this far under the threshold
_LEAD = 20  # hops (ms): digital silence this close before it (a band filter's ringing is shorter)


def from_silence(env: np.ndarray, onset: int, thresh: float, within: int, half: int) -> int:
    """The onset moved back over a quiet first sound that comes straight out of digital silence:
    sound no more than ``_UNDER_THRESHOLD_DB`` under the threshold, continuous into the speech,
    shorter than ``within`` hops, after a pause that is digital silence within ``_LEAD`` hops
    (a band filter's ringing before an onset is shorter). espeak-ng's "th" of "Thank you" on a
    phone line, 40 dB under the vowel, was counted or not by where it fell against the VAD's
    frames: the start 76 ms late in 4 of 10 phone-line calls. Longer sound before an onset
    (room tone, a line's noise, a breath) is left to the rules that judge it. ``half``: hops the
    envelope's window reaches ahead of its centre (the sound's first sample is that far past
    the first hop that hears it)."""
    audible = thresh - _UNDER_THRESHOLD_DB
    k = onset
    while k > 0 and onset - k < within and env[k - 1] > audible:
        k -= 1
    if k == onset or k == 0 or env[k - 1] > audible:
        return onset
    before = env[max(0, k - _LEAD) : k]
    if float(before.max()) > audible or float(before.min()) > _SILENT_DB:
        return onset
    return min(onset, k + half)
