"""The frame: timestamped PCM of one channel on the call clock. Every source produces these."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# Re-exported: most stages name the channels from here.
from turnscope.capture.channels import AGENT as AGENT
from turnscope.capture.channels import CALLER as CALLER
from turnscope.capture.channels import CHANNELS as CHANNELS

SAMPLE_RATE = 16000


@dataclass(frozen=True, slots=True)
class PcmFrame:
    """Mono 16-bit PCM of one channel, placed on the call clock.

    ``start`` is the index of the first sample on the call clock at SAMPLE_RATE (sample 0 is the
    call's origin), so replayed and live audio are placed exactly, without float drift.
    ``received_at`` is the monotonic wall time the frame reached turnscope (live sources only).
    """

    channel: str
    start: int
    pcm: np.ndarray  # int16, shape (n,)
    received_at: float | None = field(default=None, compare=False)

    @property
    def end(self) -> int:
        return self.start + len(self.pcm)

    @property
    def start_ms(self) -> float:
        return self.start * 1000.0 / SAMPLE_RATE

    @property
    def end_ms(self) -> float:
        return self.end * 1000.0 / SAMPLE_RATE


def samples_to_ms(samples: int | float) -> float:
    """A sample index at SAMPLE_RATE to call-clock milliseconds."""
    return samples * 1000.0 / SAMPLE_RATE


def to_int16(audio: np.ndarray) -> np.ndarray:
    """Float audio in [-1, 1] to int16, clipping (not wrapping) out-of-range samples."""
    return (np.clip(audio, -1.0, 1.0) * 32767.0).round().astype(np.int16)


def to_float32(pcm: np.ndarray) -> np.ndarray:
    """int16 PCM to float32 in [-1, 1]."""
    return pcm.astype(np.float32) / 32768.0
