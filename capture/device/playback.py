"""Playing clips through a sound device, with the same interface as the WebRTC PlaybackTrack.

A clip handed over at loop time t starts exactly when the DAC plays t + ``lead_ms`` (the block
and sample are chosen in the callback from the stream clock), so when a line goes out does not
depend on this run's buffer latency or on where the callback's block boundaries fall; ``stop``
likewise cuts at the sample the DAC plays at the asked time. The callback only slices prepared
arrays (clips are resampled to the device rate when queued); start and end times go back to the
loop, which logs them on the call clock (SendRecord, as the WebRTC track does), and every block
that was played goes to ``listeners`` (the caller channel of a device call).

A caller's acoustics (``bed``, set by actors/caller/acoustics.py before the call, as on a WebRTC
or phone-line caller's queue): from the call clock's start every block gets the bed's samples
for its place in the call (background, lost packets), and a clip's ``tail`` (its room) goes out
after it; both in the callback, by slicing and adding only.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import soxr

from turnscope.capture.clock import CallClock
from turnscope.capture.device.input import Block
from turnscope.capture.device.io import Device
from turnscope.capture.device.stream import DeviceStream
from turnscope.capture.frames import SAMPLE_RATE, to_float32, to_int16
from turnscope.capture.player import Playback, SendRecord

DEFAULT_LEAD_MS = 200.0  # more than the <= 120 ms the callback runs ahead of the DAC, plus a block


class DeviceBed(Protocol):
    """What the caller's channel carries besides its clips, at the device rate (positions are
    samples from the call's start): actors/caller/acoustics.py's ``Bed``."""

    def mix_at(self, frame: np.ndarray, first: int) -> np.ndarray: ...

    def after_at(self, tail: np.ndarray, first: int) -> None: ...


@dataclass(eq=False)  # compared by identity (the audio arrays make field equality ambiguous)
class DeviceClip(Playback):
    """A clip on a device: its samples at the device rate and its planned start (monotonic)."""

    frames: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32), repr=False)
    start_at: float = 0.0
    stop_time: float | None = None  # monotonic time the DAC should stop playing it
    logged: bool = True  # False for calibration markers: not part of the call
    started_t: float | None = None  # monotonic DAC time of its first sample, once rendered
    ended_t: float | None = None
    handed_at: float | None = None  # when the callback that rendered its start ran
    dpos: int = 0  # device-rate samples rendered so far
    first_n: int | None = None  # stream sample index of its first and (once ended) last sample
    end_n: int | None = None
    tail_pcm: np.ndarray | None = None  # int16 at the device rate: the room after the clip

    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def stop(self, after_ms: float = 0.0) -> None:
        """Stop playing this clip when the DAC reaches ``after_ms`` from now."""
        at = time.monotonic() + after_ms / 1000
        self.stop_time = at if self.stop_time is None else min(self.stop_time, at)


class DevicePlayer(DeviceStream):
    """A mono output stream playing queued clips at planned DAC times (the ``Player`` protocol)."""

    kind = "output"

    def __init__(
        self,
        device: Device,
        rate: int,
        *,
        option: str,
        clock: CallClock,
        lead_ms: float = DEFAULT_LEAD_MS,
    ) -> None:
        super().__init__(device, rate, 1, option=option)
        self.call_clock = clock
        self.lead_ms = lead_ms
        self.log: list[SendRecord] = []
        self.max_lag_ms = 0.0  # how late a clip started against its planned time, at worst
        self.late_starts = 0
        self.ahead_ms = 0.0  # how far ahead of the DAC the callback runs, at most
        self.listeners: list[Callable[[Block], None]] = []
        self._queue: deque[DeviceClip] = deque()
        self._logged: list[DeviceClip] = []
        self._lock = threading.Lock()  # the queue is shared with the audio thread
        self._muted = False
        self.bed: DeviceBed | None = None  # the caller's acoustics, mixed from the call's start
        self._bed_n0: int | None = None  # the stream sample at the call clock's sample 0

    # -- the Player interface (event loop) -------------------------------------------------------

    @property
    def current(self) -> Playback | None:
        """The clip playing or about to, within the lead (as the agent sees its own speech): a
        reply queued for later is not speech yet, so a caller starting then is no barge-in."""
        soon = time.monotonic() + self.lead_ms / 1000
        with self._lock:
            return next((c for c in self._queue if c.logged and c.start_at <= soon), None)

    @property
    def speaking(self) -> bool:
        return self.current is not None

    @property
    def idle(self) -> bool:
        """Nothing playing and nothing queued."""
        with self._lock:
            return not self._queue

    def play(self, audio: np.ndarray, label: str, at_ms: float | None = None) -> Playback:
        """Queue a clip (float or int16, 16 kHz mono) to start at ``at_ms`` on the call clock,
        or ``lead_ms`` from now if that is later."""
        pcm = audio if audio.dtype == np.int16 else to_int16(audio)
        frames = to_float32(pcm)
        if self.rate != SAMPLE_RATE:
            frames = soxr.resample(frames, SAMPLE_RATE, self.rate, quality="HQ")
        start = time.monotonic() + self.lead_ms / 1000
        if at_ms is not None and self.call_clock.origin is not None:
            start = max(start, self.call_clock.origin + at_ms / 1000)
        clip = DeviceClip(label, pcm, self._future(), frames=frames, start_at=start)
        tail = getattr(audio, "tail", None)  # a caller line's room (actors/caller/acoustics)
        if tail is not None and self.bed is not None:
            x = np.asarray(tail, np.float32)
            if self.rate != SAMPLE_RATE:
                x = soxr.resample(x, SAMPLE_RATE, self.rate, quality="HQ")
            clip.tail_pcm = to_int16(x)
        return self._enqueue(clip)

    def play_raw(self, frames: np.ndarray, at: float) -> DeviceClip:
        """Play device-rate float samples from monotonic time ``at`` (not logged: a marker)."""
        clip = DeviceClip("", np.zeros(0, np.int16), self._future(), logged=False)
        clip.frames = frames.astype(np.float32)
        clip.start_at = at
        self._enqueue(clip)
        return clip

    def silence(self) -> None:
        """Drop whatever is queued and stop the current clip now."""
        with self._lock:
            keep = [c for c in self._queue if c.started_t is not None]
            dropped = [c for c in self._queue if c.started_t is None]
            self._queue.clear()
            self._queue.extend(keep)
        for clip in keep:
            clip.stop()
        for clip in dropped:
            if not clip.done.done():
                clip.done.set_result(False)

    def stop(self) -> None:
        """Go silent for good (the stream keeps running, as a muted line would)."""
        self._muted = True
        self.silence()

    def resume(self) -> None:
        """Accept clips again after ``stop`` (a new call on the same device)."""
        self._muted = False

    def _future(self) -> asyncio.Future:
        return asyncio.get_running_loop().create_future()

    def _enqueue(self, clip: DeviceClip) -> DeviceClip:
        if self._muted or self._closing:
            clip.done.set_result(False)
            return clip
        with self._lock:
            self._queue.append(clip)
        return clip

    # -- the audio thread ------------------------------------------------------------------------

    def _callback(self, outdata: np.ndarray, frames: int, time_info: Any, status: Any) -> None:
        now = time.monotonic()
        n = self._n
        self._n += frames
        priming = False
        if status:
            self._count(status)
            priming = bool(status.priming_output)
        t = None
        if not priming:
            t = self.clock.observe(n, time_info.outputBufferDacTime, time_info.currentTime, now)
            self._tick(now)
            self._buffered(t, now)
        out = outdata[:, 0]
        out.fill(0.0)
        events: list[tuple[Any, ...]] = []
        if t is not None and self._queue:
            self.ahead_ms = max(self.ahead_ms, (t - now) * 1000)
            with self._lock:
                self._render(out, n, t, now, events)
        if t is not None and self.bed is not None:
            self._mix_bed(out, n, t)
        self._post(self._delivered, Block(outdata.copy(), n, t, self.clock.run, now), events)

    def _render(
        self, out: np.ndarray, n: int, t: float, now: float, events: list[tuple[Any, ...]]
    ) -> None:
        """Mix queued clips into this block (DAC time ``t`` for sample 0); one clip at a time."""
        frames = len(out)
        rate = self.rate
        filled = 0
        while self._queue and filled < frames:
            clip = self._queue[0]
            if clip.started_t is None:
                k = math.ceil((clip.start_at - t) * rate - 1e-6)
                if k >= frames:
                    break  # starts in a later block
                k = max(k, filled)
                clip.started_t = t + k / rate
                clip.first_n = n + k
                clip.handed_at = now
                events.append(("start", clip))
            else:
                k = filled
            limit = len(clip.frames)
            if clip.stop_time is not None:
                cut = clip.dpos + max(0, math.ceil((clip.stop_time - (t + k / rate)) * rate))
                limit = min(limit, cut)
            take = max(0, min(frames - k, limit - clip.dpos))
            out[k : k + take] = clip.frames[clip.dpos : clip.dpos + take]
            clip.dpos += take
            clip.pos = clip.dpos * SAMPLE_RATE // rate
            if clip.dpos < limit:
                break  # continues in the next block
            clip.ended_t = t + (k + take) / rate
            clip.end_n = n + k + take
            if clip.tail_pcm is not None and limit == len(clip.frames):
                self._tail_after(clip.tail_pcm, clip.end_n, t, n)
            events.append(("end", clip, limit < len(clip.frames)))
            self._queue.popleft()
            filled = k + take

    def _bed_start(self, n: int, t: float) -> int | None:
        """The stream sample at the call clock's sample 0 (fixed once known: the bed's samples
        follow the stream's, never a re-estimated time), None before the call starts."""
        origin = self.call_clock.origin
        if self._bed_n0 is None and origin is not None:
            self._bed_n0 = n - round((t - origin) * self.rate)
        return self._bed_n0

    def _tail_after(self, tail: np.ndarray, at_n: int, t: float, n: int) -> None:
        n0 = self._bed_start(n, t)
        if self.bed is not None and n0 is not None:
            self.bed.after_at(tail, at_n - n0)

    def _mix_bed(self, out: np.ndarray, n: int, t: float) -> None:
        """The bed's samples for this block (stream samples ``n``..., DAC time ``t``)."""
        n0 = self._bed_start(n, t)
        if self.bed is None or n0 is None:
            return
        lo = max(0, n0 - n)  # the block's samples before the call's start carry no bed
        if lo < len(out):
            mixed = self.bed.mix_at(to_int16(out[lo:]), n + lo - n0)
            out[lo:] = to_float32(mixed)

    # -- back on the event loop ------------------------------------------------------------------

    def _delivered(self, block: Block, events: list[tuple[Any, ...]]) -> None:
        for event in events:
            if event[0] == "start":
                self._started(event[1])
            else:
                self._ended_clip(event[1], event[2])
        for listener in self.listeners:
            listener(block)

    def _to_sample(self, t: float) -> int:
        return round((t - self.call_clock.start()) * SAMPLE_RATE)

    def _started(self, clip: DeviceClip) -> None:
        assert clip.started_t is not None
        lag = (clip.started_t - clip.start_at) * 1000
        if lag > 1.0:
            self.late_starts += 1
        self.max_lag_ms = max(self.max_lag_ms, lag)
        if clip.logged:
            rec = SendRecord(clip.label, self._to_sample(clip.started_t))
            rec.start_sent_at = clip.started_t
            clip.record = rec
            self.log.append(rec)
            self._logged.append(clip)

    def _ended_clip(self, clip: DeviceClip, early: bool) -> None:
        rec = clip.record
        if rec is not None and clip.ended_t is not None:
            rec.end = self._to_sample(clip.ended_t)
            rec.end_sent_at = clip.ended_t
            rec.stopped_early = early
        if not clip.done.done():
            clip.done.set_result(not early)

    def refresh_log(self) -> None:
        """Re-time every logged clip edge by the stream clock as known now: an underflow moves
        the samples after it, and the clock learns that only some callbacks later."""
        for clip in self._logged:
            rec = clip.record
            if rec is None:
                continue
            for which, n in (("start", clip.first_n), ("end", clip.end_n)):
                t = None if n is None else self.clock.time_of(n)
                if t is None:
                    continue
                if which == "start":
                    rec.start, rec.start_sent_at = self._to_sample(t), t
                elif rec.end is not None:
                    rec.end, rec.end_sent_at = self._to_sample(t), t

    def close(self) -> None:
        super().close()
        with self._lock:
            pending = list(self._queue)
            self._queue.clear()
        for clip in pending:
            if not clip.done.done():
                with contextlib.suppress(RuntimeError):  # its loop may be gone already
                    clip.done.set_result(False)

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "lead_ms": self.lead_ms,
            "dac_ahead_ms": round(self.ahead_ms, 1),
            "late_starts": self.late_starts,
            "max_start_lag_ms": round(self.max_lag_ms, 1),
        }
