"""What plays clips into a call: the ``Player`` interface (a WebRTC track, a sound device),
the clip being played and the record of when it really went out."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from turnscope.capture.frames import SAMPLE_RATE, samples_to_ms, to_int16


@dataclass
class SendRecord:
    """When a clip really went out: call-clock sample indices of its first and last sample."""

    label: str
    start: int
    end: int | None = None
    stopped_early: bool = False
    start_sent_at: float | None = None  # loop time its first sample was handed to the encoder
    end_sent_at: float | None = None  # ... and its last

    @property
    def start_ms(self) -> float:
        return samples_to_ms(self.start)

    @property
    def end_ms(self) -> float | None:
        return None if self.end is None else samples_to_ms(self.end)

    def to_dict(self) -> dict:
        return {
            "label": self.label,
            "start_ms": round(samples_to_ms(self.start), 1),
            "end_ms": None if self.end is None else round(samples_to_ms(self.end), 1),
            "stopped_early": self.stopped_early,
        }


@dataclass
class Playback:
    """A clip being played; await ``done`` or call ``stop()``."""

    label: str
    audio: np.ndarray  # int16
    done: asyncio.Future = field(repr=False)
    record: SendRecord | None = None
    pos: int = 0
    stop_at: int | None = None  # sample index into audio where to stop (barge-in yield)
    rate: int = SAMPLE_RATE  # of ``audio``
    due: int | None = None  # call-clock sample it starts at, not before (None: the next frame)
    # What the room adds after the clip (a caller's reverberation): goes out after it, through
    # the queue's bed, outside its send record (the clip is the speech's own extent).
    tail: np.ndarray | None = None

    def stop(self, after_ms: float = 0.0) -> None:
        """Stop sending this clip ``after_ms`` from now (0: at the next frame)."""
        cut = self.pos + int(after_ms * self.rate / 1000)
        self.stop_at = cut if self.stop_at is None else min(self.stop_at, cut)


LATE_MS = 20.0  # a caller frame sent this much after its time counts as late
MAX_SEND_LAG_MS = 200.0  # a caller frame this late makes the call's timing evidence degraded
MAX_LATE_LOGGED = 5000  # late frames remembered per call (each: when, how late)
MAX_LATE_REPORTED = 500  # of those, written into a call's source details


class LateFrames(Protocol):
    late_frames: int
    late_at: list[tuple[float, float]]


def count_late(track: LateFrames, at_ms: float, lag_ms: float) -> None:
    """Count the frame due at ``at_ms`` (call clock) as late if it went out more than LATE_MS
    after its time, and remember when and by how much: a reply timed from a caller turn that
    ended then is off by up to that (turnscope load says so)."""
    if lag_ms > LATE_MS:
        track.late_frames += 1
        if len(track.late_at) < MAX_LATE_LOGGED:
            track.late_at.append((round(at_ms, 1), round(lag_ms, 1)))


class Bed(Protocol):
    """What a caller's channel carries besides its clips (actors/caller/acoustics.py): a
    background, the clips' tails, lost packets; prepared before the call, mixed per frame."""

    def mix(self, frame: np.ndarray, position: int) -> np.ndarray: ...

    def after(self, tail: np.ndarray, at: int) -> None: ...


class Player(Protocol):
    """Plays clips into a call and logs when each really went out."""

    log: list[SendRecord]
    max_lag_ms: float
    lead_ms: float  # a clip handed over now starts this much later (fixed, so it can be planned)

    @property
    def current(self) -> Playback | None: ...

    @property
    def idle(self) -> bool:
        """Nothing playing and nothing queued."""
        ...

    def play(self, audio: np.ndarray, label: str, at_ms: float | None = None) -> Playback:
        """Queue a clip to start ``at_ms`` on the call clock (or as soon as it can, if that has
        passed or is None)."""
        ...

    def silence(self) -> None: ...

    def stop(self) -> None: ...


class ClipQueue:
    """Clips queued for a paced sender, cut into frames of ``frame`` samples at ``rate``.

    ``take(position)`` fills the next frame (silence where nothing plays) and logs each clip's
    first and last sample on the call clock: ``position`` is the frame's first sample there, one
    sample at ``rate`` being ``SAMPLE_RATE // rate`` call-clock samples. A clip with a start
    sample waits for it, and starts on it, inside a frame if need be: when it goes out then
    does not depend on when the event loop got round to queueing it.
    """

    def __init__(self, frame: int, rate: int = SAMPLE_RATE) -> None:
        self.frame = frame
        self.rate = rate
        self.step = SAMPLE_RATE // rate
        self.log: list[SendRecord] = []
        self.current: Playback | None = None
        self._queue: list[Playback] = []
        self.bed: Bed | None = None

    def play(self, pcm: np.ndarray, label: str, due: int | None = None) -> Playback:
        """Queue an int16 clip at ``rate``, to start at call-clock sample ``due``."""
        item = Playback(
            label,
            pcm,
            asyncio.get_running_loop().create_future(),
            rate=self.rate,
            due=due,
        )
        self._queue.append(item)
        return item

    @property
    def idle(self) -> bool:
        """Nothing playing and nothing queued."""
        return self.current is None and not self._queue

    def silence(self) -> None:
        """Drop whatever is queued and stop the current clip now."""
        for item in self._queue:
            if not item.done.done():
                item.done.set_result(False)
        self._queue.clear()
        if self.current:
            self.current.stop()

    def take(self, position: int) -> np.ndarray:
        out = np.zeros(self.frame, dtype=np.int16)
        filled = 0
        while filled < self.frame:
            if self.current is None:
                if not self._queue:
                    break
                due = self._queue[0].due
                if due is not None:
                    wait = -(-(due - position) // self.step)  # queue samples, rounded up
                    if wait >= self.frame:
                        break
                    filled = max(filled, wait)
                self.current = self._queue.pop(0)
                rec = SendRecord(self.current.label, position + filled * self.step)
                self.current.record = rec
                self.log.append(rec)
            item = self.current
            limit = len(item.audio) if item.stop_at is None else min(item.stop_at, len(item.audio))
            take = min(self.frame - filled, limit - item.pos)
            if take > 0:
                out[filled : filled + take] = item.audio[item.pos : item.pos + take]
                item.pos += take
                filled += take
            if item.pos >= limit:
                assert item.record is not None
                item.record.end = position + filled * self.step
                item.record.stopped_early = limit < len(item.audio)
                if not item.done.done():
                    item.done.set_result(not item.record.stopped_early)
                if self.bed is not None and item.tail is not None and limit == len(item.audio):
                    self.bed.after(item.tail, item.record.end)
                self.current = None
        return out if self.bed is None else self.bed.mix(out, position)

    def stamp(
        self, open_before: SendRecord | None, log_from: int, position: int, now: float
    ) -> None:
        """Real send times of clip edges in the frame at ``position`` (its samples leave
        together, at ``now``, spread over the frame's length)."""
        span = self.frame * self.step
        for rec in ([open_before] if open_before else []) + self.log[log_from:]:
            if rec.start_sent_at is None and position <= rec.start < position + span:
                rec.start_sent_at = now + (rec.start - position) / SAMPLE_RATE
            if rec.end is not None and rec.end_sent_at is None:
                rec.end_sent_at = now + (rec.end - position) / SAMPLE_RATE

    def next_frame(self, position: int, now: float) -> np.ndarray:
        """``take`` and ``stamp`` together: the frame at ``position``, handed over at ``now``."""
        log_from = len(self.log)
        open_before = self.current.record if self.current is not None else None
        pcm = self.take(position)
        self.stamp(open_before, log_from, position, now)
        return pcm


class ClipPlayer:
    """What every paced sender over a ``ClipQueue`` shares (a WebRTC track, a phone line):
    the ``Player`` calls; ``_clip`` turns a 16 kHz clip into the queue's samples."""

    clips: ClipQueue

    @property
    def current(self) -> Playback | None:
        return self.clips.current

    @property
    def log(self) -> list[SendRecord]:
        return self.clips.log

    @property
    def idle(self) -> bool:
        return self.clips.idle

    def play(self, audio: np.ndarray, label: str, at_ms: float | None = None) -> Playback:
        """Queue a clip (float or int16, 16 kHz mono), to start ``at_ms`` on the call clock."""
        start = None if at_ms is None else round(at_ms * SAMPLE_RATE / 1000)
        item = self.clips.play(self._clip(audio), label, start)
        tail = getattr(audio, "tail", None)  # a caller line's room (actors/caller/acoustics)
        if tail is not None:
            item.tail = self._clip(tail)
        return item

    def silence(self) -> None:
        """Drop whatever is queued and stop the current clip now."""
        self.clips.silence()

    def _clip(self, audio: np.ndarray) -> np.ndarray:
        return audio if audio.dtype == np.int16 else to_int16(audio)


def sent_too_late(max_lag_ms: float) -> str | None:
    """The degraded reason of a call whose caller audio went out over MAX_SEND_LAG_MS late: the
    caller channel records each frame at its planned time, the agent heard it this much later,
    so latencies measured from caller turns are off by up to that."""
    if max_lag_ms <= MAX_SEND_LAG_MS:
        return None
    return (
        f"the caller's audio went out up to {max_lag_ms:.0f} ms late (the machine was too busy: "
        "fewer concurrent calls, or a faster machine)"
    )
