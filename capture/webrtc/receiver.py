"""Receiving a remote audio track onto the local call clock (used by both ends of a call).

The stream is anchored where its most promptly read frame of the first half second arrived
(that half second is held, then placed); later frames follow their RTP timestamps, so a pts jump
is lost audio (a gap on the clock) and a lasting rise in arrival delay (a jitter buffer that grew
after loss) is re-anchored and reported instead of being silently absorbed. A lasting fall (every
frame for a second came well before its place: the start was read late, together, or the sender
burst ahead) is caught up as a listener's playout does, by dropping frames of the stream's silence.

Why not the first frame alone: a frame is timed when the event loop reads it, and at a call's
start the loop is often busy (other calls setting up): the whole call's audio was then placed
late by that much, at both ends of a call (benchmarks/scale.py, the load rows). Why catch up
too: the anchor moves at most ANCHOR_FIX_MAX_MS, and a loop held up longer at the start (a
process starting beside the call) left the rest of a call placed that much late: every reply's
delivery 130 ms longer and the agent's stop after a barge-in heard as late (a demo that failed
its barge-in in a test run, 2026-12-07); at the other end, the reference agent placed the
caller's speech late and yielded as late (a 300 ms stall as a call began: 137 ms).
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack

from turnscope.capture.clock import CallClock
from turnscope.capture.file.decode import Resampler
from turnscope.capture.frames import SAMPLE_RATE, PcmFrame, to_int16
from turnscope.capture.source import SourceNote

LATENCY_STEP_MS = 40.0  # a lasting rise in arrival delay larger than this is re-anchored
LATENCY_WINDOW = 50  # frames (about 1 s) over which the minimum delay is taken
ANCHOR_WINDOW_MS = 500.0  # audio held at the start, to anchor on its most promptly read frame
# An earlier anchor by more than this is not loop lateness but a sender that bursts ahead of
# real time (a listener's playout would start at the first frame): moved at most this much.
ANCHOR_FIX_MAX_MS = 100.0
# A frame no louder than this (-50 dBFS peak) is silence a late stream may drop to catch up.
CATCH_UP_PEAK = 10 ** (-50 / 20)


@dataclass(frozen=True)
class PlacedGap:
    """A jump in the stream's RTP time as placed on the call clock: silence from ``start_ms``
    to ``end_ms``; ``pts`` is the RTP time of the frame after it (what the receive buffer
    keys the packets it gave up by: webrtc/jitter.py)."""

    pts: int
    start_ms: float
    end_ms: float


@dataclass
class ReceiveStats:
    """What the receive loop saw: frames, gaps in their RTP timestamps, delay steps, format.

    A gap is audio lost in transit or audio the agent never sent (DTX in a pause, a sender
    that skipped frames): the RTP sequence numbers tell the two apart, not the timestamps
    (webrtc/call.py reads them from the receiver's RTP statistics)."""

    frames: int = 0
    gaps: int = 0
    gap_frames: int = 0
    gap_ms: float = 0.0
    frame_ms: float = 20.0  # the last frame's duration
    gap_log: list[PlacedGap] = field(default_factory=list)  # every gap, where it was placed
    end_pts: int | None = None  # the RTP time just after the last frame placed
    late_reanchors: list[dict[str, float]] = field(default_factory=list)
    # Each lasting fall in delay: where (call ms) and how far ahead of their place frames came.
    catch_ups: list[dict[str, float]] = field(default_factory=list)
    caught_up_ms: float = 0.0  # the stream's silence dropped to catch up
    first_frame_ms: float | None = None
    anchor_fix_ms: float = 0.0  # how much earlier than its first frame the stream was placed
    sample_rate: int | None = None
    channels: int | None = None


def placement_notes(stats: ReceiveStats) -> list[tuple[SourceNote, str]]:
    """What a call says of where a received stream was placed: each lasting rise in its delay
    (re-anchored), and its start placed late until it caught up in its silence."""
    notes = []
    if stats.late_reanchors:
        notes.append((SourceNote.AGENT_DELAY_ROSE,
            f"agent audio delay rose {len(stats.late_reanchors)} time(s) during the call "
            f"(largest step {max(r['step_ms'] for r in stats.late_reanchors):.0f} ms); "
            "later audio is placed where it arrived"))  # fmt: skip
    if stats.catch_ups:
        ahead = max(c["ahead_ms"] for c in stats.catch_ups)
        done = [c["caught_up_at_ms"] for c in stats.catch_ups if "caught_up_at_ms" in c]
        until = (
            f"until {done[-1] / 1000:.1f} s, where it caught up in its silence"
            if len(done) == len(stats.catch_ups)
            else "from where it fell behind to the end: it had no silence to catch up in"
        )
        notes.append((SourceNote.AGENT_CAUGHT_UP,
            f"the agent's audio came up to {ahead:.0f} ms before its place (read late at the "
            f"start, or sent ahead): placed that much late {until}"))  # fmt: skip
    return notes


def _mono(frame) -> np.ndarray:  # type: ignore[no-untyped-def]
    """float32 mono of an s16 frame (packed or planar); the channels' mean, in float32: numpy's
    ``mean(axis=...)`` was 5x slower on these 20 ms frames, and this runs 50 times a second
    per call."""
    data = frame.to_ndarray()
    chans = len(frame.layout.channels)
    lanes = data if frame.format.is_planar else data.reshape(-1, chans).T
    mono = lanes[0].astype(np.float32)
    for lane in lanes[1:]:
        mono += lane
    mono *= 1.0 / (32768.0 * chans)
    return mono


async def _recv(track: MediaStreamTrack, timeout_s: float):  # type: ignore[no-untyped-def]
    if sys.version_info >= (3, 11):
        # A timeout scope, not wait_for: no task per frame (50 a second per call).
        async with asyncio.timeout(timeout_s):
            return await track.recv()
    return await asyncio.wait_for(track.recv(), timeout_s)


class Placer:
    """Places a stream's decoded frames on the call clock (no event loop: ``push`` each frame
    with the call-clock ms it was read at, ``flush`` at the end); placed frames go to ``emit``.
    """

    def __init__(self, channel: str, emit: Callable[[PcmFrame], None], stats: ReceiveStats):
        self.channel = channel
        self.emit = emit
        self.stats = stats
        self.resampler: Resampler | None = None
        self.anchor = 0  # call-clock sample (16 kHz) of the first sample of the current run
        self.run_pts0 = 0  # pts at the start of the current run
        self.expected_pts: int | None = None
        self.written = 0  # 16 kHz samples placed in the current run
        self.delays: deque[float] = deque(maxlen=LATENCY_WINDOW)
        self.held: list[PcmFrame] | None = []  # the start, until anchored (then None)
        self.earliest_ms = 0.0  # the smallest delay of a held frame (the first one's is 0)
        self.first_pts = 0
        self.flushed = False
        self.ahead_ms = 0.0  # how much earlier the stream is still to be placed (its silence)

    def push(self, pts: int, rate: int, mono: np.ndarray, arrival_ms: float, at: float) -> None:
        """One decoded frame (float32 mono at ``rate``, its RTP ``pts``), read ``arrival_ms``
        into the call (``at``: the same moment as loop time, kept on the frames)."""
        if self.flushed:
            return
        if self.expected_pts is None or pts > self.expected_pts:
            if self.expected_pts is None:
                self.anchor = max(0, round(arrival_ms * SAMPLE_RATE / 1000))
                self.stats.first_frame_ms = arrival_ms
                self.first_pts = pts
            else:
                lost = pts - self.expected_pts
                self.stats.gaps += 1
                self.stats.gap_ms += lost * 1000 / rate
                self.stats.gap_frames += max(1, round(lost / len(mono)))
                self._end_run(at)
                start = self.anchor + round(
                    (self.expected_pts - self.run_pts0) * SAMPLE_RATE / rate
                )
                self.anchor += round((pts - self.run_pts0) * SAMPLE_RATE / rate)
                self.stats.gap_log.append(
                    PlacedGap(pts, start * 1000 / SAMPLE_RATE, self.anchor * 1000 / SAMPLE_RATE)
                )
            self._new_run(pts, rate)
        elif pts < self.expected_pts:
            return  # a duplicate or reordered frame: already placed
        elif self.resampler is None:  # drained in a pause: the stream goes on, in a new run
            self.anchor += round((pts - self.run_pts0) * SAMPLE_RATE / rate)
            self._new_run(pts, rate)
        self.expected_pts = pts + len(mono)
        self.stats.end_pts = self.expected_pts
        self.stats.frame_ms = len(mono) * 1000 / rate
        offset = round((pts - self.run_pts0) * SAMPLE_RATE / rate)
        placed_ms = (self.anchor + offset) * 1000 / SAMPLE_RATE
        self.delays.append(arrival_ms - placed_ms)
        if self.held is not None:
            self.earliest_ms = min(self.earliest_ms, self.delays[-1])
        if len(self.delays) == LATENCY_WINDOW and min(self.delays) > LATENCY_STEP_MS:
            step = min(self.delays)
            self.stats.late_reanchors.append(
                {"at_ms": round(placed_ms, 1), "step_ms": round(step, 1)}
            )
            self._end_run(at)
            self.anchor += offset + round(step * SAMPLE_RATE / 1000)
            self._new_run(pts, rate)
            self._settle(placed_ms)
        elif self._ahead(placed_ms) and self._drop(mono, pts, rate, at, placed_ms):
            return
        assert self.resampler is not None
        self._out(self.resampler(mono), at)
        if self.held is not None and (self.expected_pts - self.first_pts) * 1000 / rate >= (
            ANCHOR_WINDOW_MS
        ):
            self.release()

    def _ahead(self, placed_ms: float) -> bool:
        """Whether the stream is placed late: every frame of the last full window came over
        LATENCY_STEP_MS before its place. By how much (the earliest frame's lead) is kept until
        that much silence is dropped, or a full window shows no lead."""
        if self.held is None and len(self.delays) == LATENCY_WINDOW:
            lead = -min(self.delays) if max(self.delays) < -LATENCY_STEP_MS else 0.0
            if not lead:
                self._settle(placed_ms)
            elif not self.ahead_ms:
                self.stats.catch_ups.append(
                    {"at_ms": round(placed_ms, 1), "ahead_ms": round(lead, 1)}
                )
            self.ahead_ms = lead
        return self.ahead_ms > 0

    def _drop(self, mono: np.ndarray, pts: int, rate: int, at: float, placed_ms: float) -> bool:
        """Drop a silent frame of a stream placed late (the next one goes where it would have):
        the stream moves a frame earlier, as a listener's playout catches up in a pause."""
        frame_ms = len(mono) * 1000 / rate
        if frame_ms > self.ahead_ms:  # within a frame of where it arrives: no nearer
            self._settle(placed_ms)
            return False
        if not len(mono) or float(np.max(np.abs(mono))) > CATCH_UP_PEAK:
            return False
        self._end_run(at)
        self.anchor += self.written
        self._new_run(pts + len(mono), rate)
        self.ahead_ms -= frame_ms
        self.stats.caught_up_ms += frame_ms
        if self.ahead_ms < frame_ms:
            self._settle(self.anchor * 1000 / SAMPLE_RATE)
        return True

    def _settle(self, at_ms: float) -> None:
        """The stream is placed where it arrives from ``at_ms`` on: a catch-up pending ends."""
        pending = self.stats.catch_ups[-1] if self.stats.catch_ups else {}
        if pending and "caught_up_at_ms" not in pending:
            pending["caught_up_at_ms"] = round(at_ms, 1)
        self.ahead_ms = 0.0

    def release(self) -> None:
        """Anchor on the most promptly read frame held (its delay the smallest), and emit what
        was held."""
        if self.held is None:
            return
        fix = min(ANCHOR_FIX_MAX_MS, -self.earliest_ms)
        shift = min(self.anchor, round(fix * SAMPLE_RATE / 1000))
        shift_ms = shift * 1000 / SAMPLE_RATE
        self.anchor -= shift
        self.stats.anchor_fix_ms = round(shift_ms, 1)
        for i in range(len(self.delays)):
            self.delays[i] += shift_ms
        # every gap so far was placed while the start was held: it moves with the start
        self.stats.gap_log[:] = [
            dataclasses.replace(g, start_ms=g.start_ms - shift_ms, end_ms=g.end_ms - shift_ms)
            for g in self.stats.gap_log
        ]
        held, self.held = self.held, None
        for frame in held:
            self.emit(dataclasses.replace(frame, start=frame.start - shift))

    @property
    def settled(self) -> int:
        """The call-clock sample nothing more can come before: the current run's start (what
        is before it was placed, or is a gap no frame will fill: frames from the past are
        dropped). 0 while the start is held to be anchored."""
        return 0 if self.held is not None else self.anchor

    def drain(self, at: float | None) -> None:
        """Place what the resampler still holds (a lone frame, a DTX sender's refresh, is all
        held until the next one comes), before silence is given after it (webrtc/quiet.py)."""
        if self.held is None and self.resampler is not None:
            self._end_run(at)
            self.resampler = None

    def flush(self, at: float | None) -> None:
        """The stream ended: place the resampler's tail and whatever is still held."""
        self.flushed = True
        if self.resampler is not None:
            self._end_run(at)
            self.resampler = None
        self.release()

    def _new_run(self, pts: int, rate: int) -> None:
        self.run_pts0, self.written = pts, 0
        self.resampler = Resampler(rate, SAMPLE_RATE)
        self.delays.clear()

    def _end_run(self, at: float | None) -> None:
        if self.resampler is not None:
            self._out(self.resampler(np.zeros(0, np.float32), last=True), at)

    def _out(self, audio: np.ndarray, at: float | None) -> None:
        if not len(audio):
            return
        frame = PcmFrame(self.channel, self.anchor + self.written, to_int16(audio), received_at=at)
        self.written += len(audio)
        if self.held is None:
            self.emit(frame)
        else:
            self.held.append(frame)


async def receive_track(
    track: MediaStreamTrack,
    clock: CallClock,
    placer: Placer,
    *,
    media_timeout_s: float,
    playout_ms: float = 0.0,
) -> Literal["timeout", "ended"]:
    """Read ``track`` until it ends or goes quiet, placing its frames on ``clock``; the owner
    flushes ``placer`` if it stops listening first (a call it ends)."""
    loop = asyncio.get_running_loop()
    stats = placer.stats
    last: float | None = None
    try:
        while True:
            try:
                frame = await _recv(track, media_timeout_s)
            except (asyncio.TimeoutError, TimeoutError):
                return "timeout"
            except MediaStreamError:
                return "ended"
            last = loop.time()
            mono = _mono(frame)
            stats.frames += 1
            stats.sample_rate, stats.channels = frame.sample_rate, len(frame.layout.channels)
            placer.push(
                int(frame.pts), frame.sample_rate, mono, clock.to_ms(last) + playout_ms, last
            )
    finally:
        placer.flush(last)
