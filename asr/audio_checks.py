"""What is odd about a channel's audio as the pipeline hears it, said as warnings: long digital
silence inside the call, a loud constant background.

``AudioChecks`` is fed every frame of one channel (a few numpy reductions per frame) and says at
the end what a user should know before trusting the boundaries measured on it. What decoding a
file finds (NaN samples, clipping, a DC offset, a mains hum) the file source says itself
(capture/file/health.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from turnscope.capture.frames import SAMPLE_RATE

_SILENCE_S = 2.0  # a run of exact zeros at least this long, between sounds
_LOUD_DB = -35.0  # a background median above this is loud


@dataclass
class _Run:
    start: int = 0
    length: int = 0


class AudioChecks:
    """Accumulates one channel's audio statistics frame by frame. Digital silence counts between
    sounds only: before the first, a call is starting; after the last, it has ended."""

    def __init__(self, channel: str) -> None:
        self.channel = channel
        self._heard = False
        self._zeros = _Run()
        self._longest = _Run()

    def add(self, start: int, pcm: np.ndarray) -> None:
        """One frame of int16 PCM starting at call-clock sample ``start``."""
        if not len(pcm):
            return
        nonzero = np.flatnonzero(pcm)
        lead = int(nonzero[0]) if len(nonzero) else len(pcm)  # zeros before the first sound
        run = self._zeros
        if lead and not run.length:
            run.start = start
        run.length += lead
        if not len(nonzero):
            return
        self._close(run)
        self._heard = True
        tail = len(pcm) - 1 - int(nonzero[-1])
        self._zeros = _Run(start + len(pcm) - tail, tail)

    def _close(self, run: _Run) -> None:
        # Silence before the first sound is how calls start; only silence after it counts.
        if self._heard and run.length > self._longest.length:
            self._longest = _Run(run.start, run.length)

    def problems(self, background_db: float | None = None) -> list[str]:
        """Warnings about this channel's audio (empty when nothing was odd). ``background_db`` is
        the endpointer's background level, when known."""
        out = []
        ch = f"the {self.channel} channel"
        if self._longest.length >= _SILENCE_S * SAMPLE_RATE:
            at = self._longest.start / SAMPLE_RATE
            out.append(
                f"{ch} holds {self._longest.length / SAMPLE_RATE:.1f} s of digital silence "
                f"(exact zeros) from {at:.1f} s: lost audio or a muted line?"
            )
        if background_db is not None and background_db > _LOUD_DB:
            out.append(
                f"{ch} has a loud constant background ({background_db:.0f} dBFS): quiet speech "
                "under it is not heard, boundaries may be late or early"
            )
        return out
