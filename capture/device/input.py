"""Recording from a sound device: blocks reach the event loop with the monotonic time of their
first sample (from PortAudio's ADC times, see device_clock.py), then are placed on a call clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from turnscope.capture.clock import CallClock
from turnscope.capture.device.stream import DeviceStream
from turnscope.capture.file.decode import Resampler
from turnscope.capture.frames import SAMPLE_RATE, PcmFrame, to_int16


@dataclass(slots=True)
class Block:
    """Device-rate float audio of one callback: ``pcm`` (frames, channels), the device index of
    its first sample, that sample's monotonic time (None before the stream clock is anchored),
    the clock run it belongs to, and when the callback ran."""

    pcm: np.ndarray
    n: int
    t: float | None
    run: int
    arrived: float


class InputCapture(DeviceStream):
    """An input stream; ``listeners`` get every Block on the event loop."""

    kind = "input"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.listeners: list[Callable[[Block], None]] = []

    def _callback(self, indata: np.ndarray, frames: int, time_info: Any, status: Any) -> None:
        now = time.monotonic()
        n = self._n
        self._n += frames
        if status:
            self._count(status)
        t = self.clock.observe(n, time_info.inputBufferAdcTime, time_info.currentTime, now)
        self._tick(now)
        self._buffered(t, now)
        self._post(self._deliver, Block(indata.copy(), n, t, self.clock.run, now))

    def _deliver(self, block: Block) -> None:
        for listener in self.listeners:
            listener(block)


class ChannelPlacer:
    """Turns one channel's device blocks into 16 kHz PcmFrames on a call clock.

    The first block of each clock run is placed at its time minus ``correction_s`` (the
    calibrated latency PortAudio's times leave out); the rest of the run follows by sample count,
    so a run is contiguous. Blocks before the call's origin are dropped.
    """

    def __init__(
        self,
        channel: str,
        rate: int,
        clock: CallClock,
        emit: Callable[[PcmFrame], None],
        *,
        correction_s: float = 0.0,
    ) -> None:
        self.channel = channel
        self.rate = rate
        self.clock = clock
        self.emit = emit
        self.correction_s = correction_s
        self.blocks = 0
        self._run: int | None = None
        self._anchor = 0
        self._written = 0
        self._resampler: Resampler | None = None
        self._arrived = 0.0

    def push(self, mono: np.ndarray, t: float | None, run: int, arrived: float) -> None:
        origin = self.clock.origin
        if t is None or origin is None:
            return
        self.blocks += 1
        self._arrived = arrived
        if run != self._run:
            self.flush()
            self._run = run
            self._anchor = round((t - self.correction_s - origin) * SAMPLE_RATE)
            self._written = 0
            self._resampler = Resampler(self.rate, SAMPLE_RATE)
        assert self._resampler is not None
        self._out(self._resampler(mono))

    def _out(self, audio: np.ndarray) -> None:
        start = self._anchor + self._written
        self._written += len(audio)
        if start < 0:
            audio = audio[-start:]
            start = 0
        if len(audio):
            self.emit(PcmFrame(self.channel, start, to_int16(audio), received_at=self._arrived))

    def flush(self) -> None:
        """The end of a run (or of the call): what the resampler still holds."""
        if self._resampler is not None:
            self._out(self._resampler(np.zeros(0, np.float32), last=True))
            self._resampler = None
        self._run = None  # whatever comes next starts a new run
