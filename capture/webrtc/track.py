"""An outgoing audio track that is never silent on the wire: it plays clips, and silence between.

Used by the scripted caller and by the reference agent. It paces itself by the call clock (20 ms
frames at 16 kHz), so the time a sample is sent is known exactly; every clip's true send start
and stop are logged (the ground truth a test compares measurements against). ``Player`` is what
the caller and the agent need from it (capture/player.py); a sound device's output is another.
"""

from __future__ import annotations

import asyncio
import fractions
from collections.abc import Callable

import numpy as np
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack
from av import AudioFrame
from av.packet import Packet

from turnscope.capture.clock import CallClock
from turnscope.capture.frames import SAMPLE_RATE
from turnscope.capture.player import ClipPlayer, ClipQueue, count_late
from turnscope.capture.webrtc.opus import OpusPackets

FRAME = SAMPLE_RATE // 50  # 20 ms
TIME_BASE = fractions.Fraction(1, SAMPLE_RATE)


class PlaybackTrack(ClipPlayer, MediaStreamTrack):
    """A continuous 16 kHz mono track playing queued clips on the call clock."""

    kind = "audio"
    lead_ms = 0.0  # a clip goes out with the next 20 ms frame

    def __init__(
        self,
        clock: CallClock,
        *,
        on_sent: Callable[[int, np.ndarray, float], None] | None = None,
        drop: Callable[[int, np.ndarray], bool] | None = None,
        codec: Callable[[], str | None] | None = None,
    ) -> None:
        super().__init__()
        # The negotiated codec, asked when the first frame goes out: with Opus the track hands
        # aiortc packets it encoded itself (opus_packets.py), otherwise frames.
        self.codec = codec
        self._opus: OpusPackets | None = None
        self.clock = clock
        self.on_sent = on_sent  # (start sample, pcm, loop time) for every frame that went out
        self.drop = drop  # (frame index, its PCM) -> True to leave it unsent (DTX in a pause)
        self.clips = ClipQueue(FRAME)
        self._pts: int | None = None
        self._frames = 0
        self.max_lag_ms = 0.0  # how late (vs the call clock) a frame was handed over, at worst
        self.late_frames = 0  # frames handed over more than LATE_MS late
        self.late_at: list[tuple[float, float]] = []  # (call-clock ms, lag ms) of each of them

    @property
    def speaking(self) -> bool:
        return self.current is not None

    @property
    def position(self) -> int:
        """Call-clock sample index of the next frame to be sent."""
        return self._pts or 0

    async def recv(self) -> AudioFrame | Packet:
        if self.readyState != "live":
            raise MediaStreamError
        loop = asyncio.get_running_loop()
        origin = self.clock.start()
        if self._pts is None:
            if self.codec is not None and self.codec() == "audio/opus":
                self._opus = OpusPackets(SAMPLE_RATE)
            # The first frame is placed on the 20 ms grid of the call clock.
            self._pts = max(0, round((loop.time() - origin) * SAMPLE_RATE / FRAME)) * FRAME
        pts = self._pts
        wait = origin + pts / SAMPLE_RATE - loop.time()
        if wait > 0:
            await asyncio.sleep(wait)
        now = loop.time()
        self.max_lag_ms = max(self.max_lag_ms, -wait * 1000)
        count_late(self, pts * 1000 / SAMPLE_RATE, -wait * 1000)
        pcm = self.clips.next_frame(pts, now)
        self._pts += FRAME
        index = self._frames
        self._frames += 1
        if self.on_sent is not None:
            self.on_sent(pts, pcm, loop.time())
        frame = AudioFrame(format="s16", layout="mono", samples=FRAME)
        frame.planes[0].update(pcm.tobytes())
        frame.sample_rate = SAMPLE_RATE
        frame.pts = pts
        frame.time_base = TIME_BASE
        packet = self._opus.encode(frame) if self._opus is not None else None
        if (self.drop is not None and self.drop(index, pcm)) or (self._opus and packet is None):
            # Left unsent (the next frame carries a later pts, the sequence numbers go on, as
            # a DTX sender's do), or the encoder is still filling its look-ahead.
            return await self.recv()
        return packet if packet is not None else frame

    def stop(self) -> None:
        self.silence()
        super().stop()
