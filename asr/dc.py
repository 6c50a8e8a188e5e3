"""A channel's DC offset, tracked frame by frame and taken out before anything reads the audio.

A recording with a DC offset (a cheap sound card, a bad resampler) carries a constant level that
the energy gate, the background level and boundary refinement would all take for sound: at 10%
of full scale it hides every word (measured: every turn missed). The offset is the running mean
of the frames' means over about five seconds; frames are corrected only once it is audible, so clean
audio passes bit for bit.
"""

from __future__ import annotations

import numpy as np

_FRAMES = 500  # the running mean's reach, in frames (5 s of 10 ms frames: smooth over speech)
_SETTLED = 50  # frames before the running mean is trusted
_AUDIBLE = 160.0  # int16 units (0.5% of full scale, -46 dBFS): smaller offsets are left alone


class DcTracker:
    """Removes one channel's DC offset from int16 frames, in stream order."""

    def __init__(self) -> None:
        self._dc = 0.0
        self._n = 0
        self.largest = 0.0  # the largest offset seen, in int16 units (for the audio checks)

    def remove(self, frames: np.ndarray) -> np.ndarray:
        """``frames`` (n, frame length) with the offset as of each frame subtracted."""
        means = frames.mean(axis=1).tolist()
        offsets = []
        dc, n = self._dc, self._n
        for m in means:
            n += 1
            dc += (m - dc) / (n if n < _FRAMES else _FRAMES)
            offsets.append(dc)
        self._dc, self._n = dc, n
        if n < _SETTLED:  # a few frames' means are the sound's own low end, not an offset
            return frames
        worst = max(abs(o) for o in offsets)
        self.largest = max(self.largest, abs(dc))
        if worst < _AUDIBLE:
            return frames
        shift = np.rint(np.asarray(offsets))[:, None]
        return np.clip(frames - shift, -32768, 32767).astype(np.int16)
