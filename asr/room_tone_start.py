"""A live speech start moved past a recording's room tone (issue 28).

A recorded prompt played into a channel of digital silence brings its own room tone: the VAD
opens on it 265-290 ms before the first word, and a caller's barge-in ("600 ms into the agent's
turn") or the live view counting from there would be early by that much. At turn close
``stretch.find_stretch`` puts the boundary where the speech rises out of that tone; the live
start is told at once (nothing waits on this) and moved once the speech has risen.

A start that opens on a sound which came on out of digital silence inside the pre-roll, at a
level well under the channel's speech so far, is watched: when a frame rises ``RISE_DB`` over
the opening, the audio so far is read as at turn close (or, the speech not at its peak yet, for
where it rose out of the tone: ``stretch.rise_start``), and a start found past the step up is
told as ``StartMoved``. Nothing found within ``SETTLE_MS`` of the rise, no rise within
``WATCH_MS``, or the utterance over first: the start stands.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from turnscope.asr.noise import SILENT
from turnscope.asr.settings import RefineSettings
from turnscope.asr.stretch import find_stretch, rise_start, stretch_spans
from turnscope.capture.frames import SAMPLE_RATE

__all__ = ["StartWatch", "watch_start"]

RISE_DB = 10.0  # a frame this far above the opening's median: the speech, if that was room tone
SETTLE_MS = 300  # after the rise, the head is read for this long ...
READ_MS = 60  # ... from this long after it (the speech's envelope under way) ...
EVERY_MS = 40  # ... this often (each read is a turn close's work on the audio so far)
WATCH_MS = 1200  # no rise by then: the start stands
SILENT_FRAMES = 3  # frames of digital silence in the pre-roll, then the sound to the onset
MOVED_MS = 50  # a start found this far past the step up is out of the room tone
UNDER_SPEECH_DB = 20.0  # the opening this far under the channel's loudest speech so far


@dataclass
class StartWatch:
    """A start told at the VAD's onset that may be room tone: where the sound came on, and
    what would be the speech's rise."""

    onset: int  # call-clock sample of the VAD's onset
    head: int  # call-clock sample where the channel stepped up out of digital silence
    rise_energy: float  # a frame at least this loud is the rise
    rise_at: int | None = None  # call-clock sample when the rise was seen
    read_at: int = 0  # call-clock sample of the next read

    def due(self, energy: float, pos: int) -> bool:
        """Whether the frame ending at ``pos`` (of ``energy``) needs a decision."""
        return (
            self.rise_at is not None
            or energy >= self.rise_energy
            or pos - self.onset >= WATCH_MS * SAMPLE_RATE // 1000
        )

    def decide(
        self,
        runs: Sequence[np.ndarray],
        energies: Sequence[float],
        base: int,
        spans: Sequence[Sequence[int]],
        pos: int,
        refine: RefineSettings,
    ) -> tuple[bool, int | None]:
        """Whether the watch is over, and the speech's start it found (call-clock sample; None:
        the start told stands). ``runs``: the utterance's frames so far from ``base``;
        ``spans``: its spans (an open one ends at ``pos``)."""
        if self.rise_at is None:
            if pos - self.onset >= WATCH_MS * SAMPLE_RATE // 1000:
                return True, None
            self.rise_at = pos
            self.read_at = pos + READ_MS * SAMPLE_RATE // 1000
        if pos - self.rise_at >= SETTLE_MS * SAMPLE_RATE // 1000:
            return True, None
        if pos < self.read_at:
            return False, None
        self.read_at = pos + EVERY_MS * SAMPLE_RATE // 1000
        frames = np.concatenate(runs) if len(runs) > 1 else runs[0]
        flen, pcm = frames.shape[1], frames.reshape(-1)
        # As at turn close; else (the speech not at its peak yet) where it rose out of the tone.
        stretch = find_stretch(pcm, flen, max(energies, default=0.0))
        if stretch is not None and stretch.head is not None:
            closed = [[s, e if e >= 0 else pos] for s, e in spans]
            found = stretch_spans(stretch, base, closed, refine)
            start = found[0][0] if found else None
        else:
            rose = rise_start(pcm, flen, self.head - base, self.rise_at - base, refine.window_ms)
            start = None if rose is None else base + rose
        # Still at the step up: read again (more speech, surer).
        if start is not None and start - self.head >= MOVED_MS * SAMPLE_RATE // 1000:
            return True, start
        return False, None


def watch_start(
    onset: int, base: int, flen: int, energies: Sequence[float], loudest: float
) -> StartWatch | None:
    """A watch on the start if the utterance (frames from ``base``, their ``energies``) opened at
    ``onset`` on a sound that came on out of digital silence inside the pre-roll and holds a
    level ``UNDER_SPEECH_DB`` under the channel's ``loudest`` frame so far (0: none yet)."""
    silent = [i for i, e in enumerate(energies) if e < SILENT]
    if len(silent) < SILENT_FRAMES or silent[-SILENT_FRAMES] != silent[-1] - SILENT_FRAMES + 1:
        return None  # no run of digital silence just before the sound
    step = silent[-1] + 1
    opening = sorted(energies[step:])
    if not opening or base + step * flen > onset:
        return None
    level = opening[len(opening) // 2]
    if loudest > 0 and level > loudest * 10 ** (-UNDER_SPEECH_DB / 10):
        return None
    return StartWatch(onset, base + step * flen, level * 10 ** (RISE_DB / 10))
