"""A babble's nearer talkers are background, not the speaker: ``LoudMoments`` judges each span
as it closes against the loud end of the channel's background (``noise.NoiseLevel``'s 90th
percentile of its recent silence). Energies are mean squares per frame, in float audio units.
"""

from __future__ import annotations

from collections import deque

from turnscope.asr.refine import Background

__all__ = ["LoudMoments"]

# A channel's background loud end judges its spans only this far under the speaker's level:
# six-talker babble at 15 dB SNR is 20-25 dB under a caller's loudest frames; a background
# learnt on a channel heard mostly as speech is within 2-4 dB of it.
_CLEAR = 10 ** (12.0 / 10)
# ... and only where its loud end keeps this close to its median: six-talker babble 2.6-4.1 dB;
# real speech over 10 dB pink noise 4.6-6.4 dB (its quieter words' remnants in the "silence",
# its own quiet spans 4-6 dB over that loud end).
_SPREAD_DB = 4.5
_PEAKS = 5  # the last utterances whose loudest frames set the speaker's level


class LoudMoments:
    """Judges a span as it closes: one whose loudest frame never rises ``over_db`` over the
    background's loud end (``NoiseLevel``'s 90th percentile) is the background's own loud
    moment (a babble's nearer talker), not the speaker. Judged only where that loud end can be
    trusted: the background is one steady sound (its loud end within ``_SPREAD_DB`` of its
    median; remnants of words in a channel's "silence" spread it wider) and the speaker stands
    well clear of it (``_CLEAR``). The speaker's level: the low median of the loudest frames of
    the channel's last utterances and of the open one, so one loud click does not set it, and
    a channel heard mostly as speech (a short excerpt, an agent that never pauses: its
    "background" its own quieter words) is never judged."""

    def __init__(self, over_db: float, flen: int) -> None:
        self.enabled = over_db > 0
        self._flen = flen  # samples per frame
        self._ratio = 10 ** (over_db / 10)
        self._peaks: deque[float] = deque(maxlen=_PEAKS)

    def heard(self, loudest: float) -> None:
        """An utterance was kept: its loudest frame (``loudest``) is the speaker's."""
        self._peaks.append(loudest)

    def is_background(
        self, background: Background | None, span: list[int], energies: list[float], base: int
    ) -> bool:
        """Whether the closed ``span`` (samples; ``energies`` its open utterance's frames' from
        sample ``base``) is the background's loud moment."""
        if not self.enabled or background is None:
            return False
        if background.upper_db - background.median_db > _SPREAD_DB:
            return False  # a loud end set by remnants of words: no measure of the background
        flen = self._flen
        frames = energies[max(0, (span[0] - base) // flen) : -(-(span[1] - base) // flen)]
        if not frames:
            return False
        levels = sorted([*self._peaks, max(energies)])  # the open utterance's loudest so far
        upper = 10 ** (background.upper_db / 10)
        return (
            upper * _CLEAR <= levels[(len(levels) - 1) // 2] and max(frames) < upper * self._ratio
        )

    def lead(
        self,
        background: Background | None,
        spans: list[list[int]],
        energies: list[float],
        base: int,
    ) -> list[list[int]]:
        """An utterance's spans at its close without the leading ones that were the background's
        loud moments: judged again, the speaker's level now known (the first turn of a call
        that a babble burst opened before the caller spoke)."""
        while len(spans) > 1 and self.is_background(background, spans[0], energies, base):
            spans = spans[1:]
        return spans
