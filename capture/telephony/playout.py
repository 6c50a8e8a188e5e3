"""The carrier's playout buffer: what the caller hears of the agent, on the call clock.

An agent sends audio faster than real time and in chunks of any size; the carrier queues it and
plays it out at 8 kHz. Audio reaching an empty buffer starts playing where it arrived; audio
reaching a busy one plays after what is queued. ``clear`` drops everything not yet played at the
moment it arrives (the caller hears the agent stop there), and a ``mark`` is due once the audio
queued before it has played (at once on a clear). Plain code, no event loop: positions are
line samples (8 kHz) on the call clock.
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass, field

import numpy as np

# Audio arriving this soon after the buffer ran dry is the same speech starved (an underrun
# the caller hears as a gap), not a new utterance.
UNDERRUN_GAP = 1600  # 200 ms at 8 kHz
# Audio arriving this soon after the end of what was queued continues it without a gap: a
# carrier's jitter buffer absorbs that much (an agent pacing itself in real time arrives a few
# ms late now and then).
JITTER = 80  # 10 ms
# How many chunks read on time the agent's lead is judged from (its recent pace, not the call's).
LEAD_SEEN = 25


def plays_from(arrived: float, queued_end: float | None, jitter: float = JITTER) -> float:
    """Where audio arriving at ``arrived`` starts to play: straight after the audio queued
    before it, when it comes before that ends or within ``jitter`` of its end; else where it
    arrived. Any unit, one for all three (the reference agent models its carrier with it)."""
    if queued_end is not None and arrived <= queued_end + jitter:
        return queued_end
    return arrived


@dataclass
class Chunk:
    """Queued agent audio: where it plays and when it arrived (line samples)."""

    start: int
    pcm: np.ndarray
    arrived: int

    @property
    def end(self) -> int:
        return self.start + len(self.pcm)


@dataclass
class Cleared:
    """A clear: when it arrived and how much unplayed audio it dropped (line samples)."""

    at: int
    dropped: int


@dataclass
class Playout:
    """The playout buffer; ``render(until)`` returns what played since the last call."""

    rendered: int = 0  # line samples played (and returned) so far
    queue: list[Chunk] = field(default_factory=list)
    marks: list[tuple[int, str]] = field(default_factory=list)  # (due at, name)
    clears: list[Cleared] = field(default_factory=list)
    underruns: int = 0
    max_depth: int = 0  # most audio queued ahead of the playout, line samples
    played: int = 0  # line samples of agent audio played
    last_end: int = 0  # where the audio queued last ends (0: none yet)
    # Where turnscope's own event loop was held up from, while it has not caught up (None: it
    # is on time). What the agent sent meanwhile sat unread in the socket: see ``push``.
    held_since: int | None = None
    # A new utterance read while held up, chunk by chunk (placed again as each one comes).
    _burst: list[Chunk] = field(default_factory=list, repr=False)
    # How far ahead of its playout each chunk read on time that continued the queue came (line
    # samples): the agent's lead, which ``_early`` allows for.
    _leads: deque[int] = field(default_factory=lambda: deque(maxlen=LEAD_SEEN), repr=False)

    def hold(self, since: int) -> None:
        """Turnscope's loop is running late, from ``since`` (line samples) on."""
        if self.held_since is None:
            self.held_since = since

    def resume(self) -> None:
        """Turnscope's loop is on time again."""
        self.held_since = None
        self._burst = []

    @property
    def end(self) -> int:
        """Where the next audio would start if it arrived now-ish: after the queue."""
        return self.queue[-1].end if self.queue else self.rendered

    def push(self, now: int, pcm: np.ndarray) -> Chunk:
        """Agent audio arriving at ``now``. Read while turnscope's loop was held up, it may have
        arrived any time since the hold began (the gap is turnscope's, not the agent's): if what
        was queued before it ran out after that, it plays straight on from there (an 85 ms hold
        mid-reply put a pipecat bot's reply end 25-41 ms late and counted two underruns); if it
        begins an utterance, that begins as late as the audio read with it allows (``_early``)."""
        now = max(now, self.rendered)
        tail = self.queue[-1].end if self.queue else self.last_end
        arrived = now
        if self.held_since is not None and self.last_end and tail >= self.held_since - JITTER:
            arrived = min(now, tail)
        start = max(int(plays_from(arrived, tail if self.last_end else None)), self.rendered)
        if start == arrived and self.last_end and 0 < arrived - tail <= UNDERRUN_GAP:
            self.underruns += 1  # it did not continue what played: a gap the caller hears
        chunk = Chunk(start, pcm, now)
        self.queue.append(chunk)
        if self.held_since is not None:
            self._early(chunk, now, self.held_since)  # may move ``chunk`` earlier, in place
        elif self.last_end and start == tail:
            self._leads.append(max(0, start - now))
        self.last_end = chunk.end
        self.max_depth = max(self.max_depth, chunk.end - now)
        return chunk

    def lead(self, chunk: int) -> int:
        """How far ahead of its playout the agent sends (line samples): the median of the chunks
        read on time that continued the queue; one ``chunk`` before any (pipecat runs one chunk
        ahead; a real-time agent is then placed up to a chunk late, never early)."""
        return round(statistics.median(self._leads)) if self._leads else chunk

    def _early(self, chunk: Chunk, now: int, held_since: int) -> None:
        """An utterance begun while turnscope's loop was held up, placed as late as the audio
        read with it allows: an agent keeps what it has sent ``lead`` ahead of its playout, so
        the audio before the last chunk read, less that lead, was on its way that long before
        ``now``; never before the hold began. (Without the lead, pipecat's first two chunks,
        sent together, put a reply begun in a 25 ms hold-up 25 ms early.)"""
        if chunk.start == now:
            self._burst = [chunk]
        elif self._burst and chunk.start == self._burst[-1].end:
            self._burst.append(chunk)
        else:
            return
        ahead = sum(len(c.pcm) for c in self._burst[:-1]) - self.lead(len(self._burst[0].pcm))
        start = max(held_since, self.rendered, now - ahead)
        shift = self._burst[0].start - start
        if shift > 0:
            lo, hi = self._burst[0].start, self._burst[-2].end if len(self._burst) > 1 else 0
            for c in self._burst:
                c.start -= shift
            # a mark read between the burst's chunks is due when what precedes it has played
            self.marks = [
                (max(at - shift, self.rendered) if lo < at <= hi else at, name)
                for at, name in self.marks
            ]

    def mark(self, now: int, name: str) -> int:
        """A mark arriving at ``now``: due when the audio queued before it has played."""
        due = max(self.end, now, self.rendered)
        self.marks.append((due, name))
        return due

    def clear(self, now: int) -> list[str]:
        """Drop the unplayed audio at ``now``; the marks pending, echoed at once."""
        now = max(now, self.rendered)
        dropped = 0
        kept: list[Chunk] = []
        for c in self.queue:
            if c.start >= now:
                dropped += len(c.pcm)
            elif c.end > now:
                dropped += c.end - now
                kept.append(Chunk(c.start, c.pcm[: now - c.start], c.arrived))
            else:
                kept.append(c)
        self.queue = kept
        self.last_end = min(self.last_end, now)
        self.clears.append(Cleared(now, dropped))
        names = [name for _, name in self.marks]
        self.marks.clear()
        return names

    def render(self, until: int) -> np.ndarray:
        """The samples played from ``rendered`` up to ``until`` (silence where nothing was)."""
        n = max(0, until - self.rendered)
        out = np.zeros(n, dtype=np.int16)
        if n == 0:
            return out
        lo, hi = self.rendered, self.rendered + n
        keep: list[Chunk] = []
        for c in self.queue:
            a, b = max(c.start, lo), min(c.end, hi)
            if b > a:
                out[a - lo : b - lo] = c.pcm[a - c.start : b - c.start]
                self.played += b - a
            if c.end > hi:
                keep.append(c)
        self.queue = keep
        self.rendered = hi
        return out

    def due_marks(self) -> list[str]:
        """Marks whose audio has played by now (removed)."""
        due = [name for at, name in self.marks if at <= self.rendered]
        self.marks = [(at, name) for at, name in self.marks if at > self.rendered]
        return due
