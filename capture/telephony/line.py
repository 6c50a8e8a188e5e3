"""The phone line's two directions at 8 kHz: the caller's clips going out through the codec
(``LinePlayer``, a ``Player``) and line audio brought to the pipeline's 16 kHz (``Upsampler``)."""

from __future__ import annotations

import av
import numpy as np
import soxr
from av import AudioFrame

from turnscope.capture.frames import SAMPLE_RATE, to_float32, to_int16
from turnscope.capture.player import ClipPlayer, ClipQueue
from turnscope.capture.telephony.codec import LINE_RATE, Codec

FRAME = LINE_RATE // 50  # 20 ms of line samples: one media message
STEP = SAMPLE_RATE // LINE_RATE  # call-clock samples per line sample


def to_line(audio: np.ndarray, codec: Codec) -> np.ndarray:
    """16 kHz audio (float or int16) as the line carries it: 8 kHz, through the codec."""
    x = to_float32(audio) if audio.dtype == np.int16 else audio.astype(np.float32)
    return codec.line(to_int16(soxr.resample(x, SAMPLE_RATE, LINE_RATE, quality="HQ")))


class LinePlayer(ClipPlayer):
    """Clips played into the line, one 20 ms frame per ``frame(position, now)``; every clip's
    first and last sample logged on the call clock (the caller channel's ground truth)."""

    lead_ms = 0.0  # a clip goes out with the next media message

    def __init__(self, codec: Codec) -> None:
        self.codec = codec
        self.clips = ClipQueue(FRAME, LINE_RATE)
        self.max_lag_ms = 0.0
        self.late_frames = 0
        self.late_at: list[tuple[float, float]] = []  # (call-clock ms, lag ms) of late frames

    def _clip(self, audio: np.ndarray) -> np.ndarray:
        return to_line(audio, self.codec)  # it goes out as the line carries it

    def stop(self) -> None:
        self.clips.silence()

    def frame(self, position: int, now: float) -> np.ndarray:
        """The line samples of the media message whose first sample is call-clock ``position``."""
        return self.clips.next_frame(position, now)


class Upsampler:
    """8 kHz line audio to 16 kHz, streamed (FFmpeg's resampler: aligned, 1 ms behind)."""

    def __init__(self) -> None:
        self._resampler = av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
        self._pts = 0

    def push(self, pcm: np.ndarray) -> np.ndarray:
        if len(pcm) == 0:
            return np.zeros(0, np.int16)
        frame = AudioFrame.from_ndarray(pcm.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = LINE_RATE
        frame.pts = self._pts
        self._pts += len(pcm)
        return self._join(self._resampler.resample(frame))

    def flush(self) -> np.ndarray:
        """The samples still held back (once, at the end)."""
        try:
            return self._join(self._resampler.resample(None))
        except (av.error.EOFError, ValueError):
            return np.zeros(0, np.int16)

    @staticmethod
    def _join(frames: list[AudioFrame]) -> np.ndarray:
        parts = [f.to_ndarray().reshape(-1) for f in frames]
        return np.concatenate(parts).astype(np.int16) if parts else np.zeros(0, np.int16)
