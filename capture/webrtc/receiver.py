"""Receiving a remote audio track onto the local call clock (used by both ends of a call).

The first frame is anchored where it arrived; later frames follow their RTP timestamps, so a pts
jump is lost audio (a gap on the clock) and a lasting rise in arrival delay (a jitter buffer that
grew after loss) is re-anchored and reported instead of being silently absorbed.
"""

from __future__ import annotations

import asyncio
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

LATENCY_STEP_MS = 40.0  # a lasting rise in arrival delay larger than this is re-anchored
LATENCY_WINDOW = 50  # frames (about 1 s) over which the minimum delay is taken


@dataclass
class ReceiveStats:
    """What the receive loop saw: frames, losses, delay steps, format."""

    frames: int = 0
    lost_frames: int = 0
    lost_ms: float = 0.0
    late_reanchors: list[dict[str, float]] = field(default_factory=list)
    first_frame_ms: float | None = None
    sample_rate: int | None = None
    channels: int | None = None


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


async def receive_track(
    track: MediaStreamTrack,
    clock: CallClock,
    channel: str,
    emit: Callable[[PcmFrame], None],
    stats: ReceiveStats,
    *,
    media_timeout_s: float,
) -> Literal["timeout", "ended"]:
    """Read ``track`` until it ends or goes quiet, emitting 16 kHz frames on ``clock``."""
    loop = asyncio.get_running_loop()
    resampler: Resampler | None = None
    anchor = 0  # call-clock sample (16 kHz) of the first sample of the current run
    run_pts0 = 0  # pts at the start of the current run
    expected_pts: int | None = None
    written = 0  # 16 kHz samples emitted in the current run
    delays: deque[float] = deque(maxlen=LATENCY_WINDOW)

    def out(start: int, audio: np.ndarray, at: float) -> None:
        if len(audio):
            emit(PcmFrame(channel, start, to_int16(audio), received_at=at))

    while True:
        try:
            frame = await _recv(track, media_timeout_s)
        except (asyncio.TimeoutError, TimeoutError):
            return "timeout"
        except MediaStreamError:
            return "ended"
        arrival = loop.time()
        rate = frame.sample_rate
        mono = _mono(frame)
        stats.frames += 1
        stats.sample_rate, stats.channels = rate, len(frame.layout.channels)
        pts = int(frame.pts)
        if expected_pts is None or pts > expected_pts:
            if expected_pts is None:
                anchor = max(0, round(clock.to_ms(arrival) * SAMPLE_RATE / 1000))
                stats.first_frame_ms = clock.to_ms(arrival)
            else:
                lost = pts - expected_pts
                stats.lost_ms += lost * 1000 / rate
                stats.lost_frames += max(1, round(lost / len(mono)))
                if resampler is not None:
                    out(anchor + written, resampler(np.zeros(0, np.float32), last=True), arrival)
                anchor += round((pts - run_pts0) * SAMPLE_RATE / rate)
            run_pts0, written = pts, 0
            resampler = Resampler(rate, SAMPLE_RATE)
            delays.clear()
        elif pts < expected_pts:
            continue  # a duplicate or reordered frame: already placed
        assert resampler is not None
        expected_pts = pts + len(mono)
        placed_ms = (anchor + (pts - run_pts0) * SAMPLE_RATE / rate) * 1000 / SAMPLE_RATE
        delays.append(clock.to_ms(arrival) - placed_ms)
        if len(delays) == LATENCY_WINDOW and min(delays) > LATENCY_STEP_MS:
            step = min(delays)
            stats.late_reanchors.append({"at_ms": round(placed_ms, 1), "step_ms": round(step, 1)})
            out(anchor + written, resampler(np.zeros(0, np.float32), last=True), arrival)
            anchor += round((pts - run_pts0) * SAMPLE_RATE / rate) + round(
                step * SAMPLE_RATE / 1000
            )
            run_pts0, written = pts, 0
            resampler = Resampler(rate, SAMPLE_RATE)
            delays.clear()
        audio = resampler(mono)
        out(anchor + written, audio, arrival)
        written += len(audio)
