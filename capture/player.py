"""What plays clips into a call: the ``Player`` interface (a WebRTC track, a sound device),
the clip being played and the record of when it really went out."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from turnscope.capture.frames import SAMPLE_RATE, samples_to_ms


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

    def stop(self, after_ms: float = 0.0) -> None:
        """Stop sending this clip ``after_ms`` from now (0: at the next frame)."""
        cut = self.pos + int(after_ms * SAMPLE_RATE / 1000)
        self.stop_at = cut if self.stop_at is None else min(self.stop_at, cut)


class Player(Protocol):
    """Plays clips into a call and logs when each really went out."""

    log: list[SendRecord]
    max_lag_ms: float
    lead_ms: float  # a clip handed over now starts this much later (fixed, so it can be planned)

    @property
    def current(self) -> Playback | None: ...

    def play(self, audio: np.ndarray, label: str) -> Playback: ...

    def silence(self) -> None: ...

    def stop(self) -> None: ...
