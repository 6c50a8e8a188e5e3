"""What the endpointer decides on, per VAD frame: webrtcvad's speech flag and the frame's energy.

A batch of frames is an (n, frame length) int16 array. Both measures are computed a batch at a
time, calling webrtcvad's C function and numpy directly: the endpointer runs them on every frame
of every channel and must stay far faster than real time.
"""

from __future__ import annotations

import numpy as np
import webrtcvad
from _webrtcvad import process as _vad_process

try:  # np.einsum(...) is this plus a Python layer that costs as much again on a small batch
    from numpy._core.multiarray import c_einsum as _einsum
except ImportError:  # numpy < 2
    _einsum = np.einsum

from turnscope.capture.frames import SAMPLE_RATE


class FrameClassifier:
    """webrtcvad at ``aggressiveness`` over frames of ``frame_ms``, and their energies."""

    def __init__(self, aggressiveness: int, frame_ms: int) -> None:
        self._vad = webrtcvad.Vad(aggressiveness)
        self._handle = self._vad._vad  # the C handle: per-frame calls skip the Python wrapper
        self.frame_len = SAMPLE_RATE * frame_ms // 1000
        # float32 like the energies it scales, so every energy is the float32 product.
        self._energy_scale = np.float32(1.0 / (32768.0 * 32768.0 * self.frame_len))

    def speech(self, frames: np.ndarray) -> list[bool]:
        """webrtcvad's decision for each frame."""
        data = frames.tobytes()  # one contiguous copy, whatever the caller's array layout
        size, flen, handle = 2 * self.frame_len, self.frame_len, self._handle
        if len(frames) == 2:  # a live call's 20 ms: spelt out, a comprehension costs as much
            return [
                _vad_process(handle, SAMPLE_RATE, data[:size], flen),
                _vad_process(handle, SAMPLE_RATE, data[size:], flen),
            ]
        return [
            _vad_process(handle, SAMPLE_RATE, data[k : k + size], flen)
            for k in range(0, len(data), size)
        ]

    def energies(self, frames: np.ndarray) -> list[float]:
        """Mean square of each frame in float audio units (float32 values, as floats)."""
        f = frames.astype(np.float32)
        # One einsum for the batch: its float32 sums are what the gate and refinement have always
        # seen (no other numpy reduction adds in the same order), whatever the batch size.
        return (_einsum("ij,ij->i", f, f) * self._energy_scale).tolist()

    def last(self, frame: np.ndarray) -> tuple[float, bool]:
        """Energy and decision of the stream's zero-padded last frame, one (frame length,) array.
        Its energy is a float64 mean, as it has always been."""
        energy = float(np.mean((frame / 32768.0) ** 2))
        return energy, self._vad.is_speech(frame.tobytes(), SAMPLE_RATE)
