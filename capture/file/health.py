"""What decoding a recording finds about it: NaN samples, clipping, a DC offset (removed
before the VAD once it shows), a mains hum; and the decode loop that applies it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from turnscope.capture.file.decode import AudioReader, Resampler
from turnscope.capture.frames import SAMPLE_RATE

CLIP_LEVEL = 0.999
CLIP_WARN_SHARE = 0.001
MISMATCH_WARN_MS = 100
# A channel this much shorter than the other (and at most SHORT_SHARE of it) is missing audio.
SHORT_CHANNEL_MS = 5000
SHORT_SHARE = 0.5
MIN_RATE = 8000  # below the telephone band, speech is not intelligible
# A DC offset shifts every frame's energy off the noise floor the VAD gate measures against
# (at +0.05, 4 of 9 turns were found; at +0.2, none): above this it is removed before the VAD.
DC_LIMIT = 0.002
DC_SMOOTHING = 0.2  # weight of each decoded block's mean in the running estimate
SILENCE_LEVEL = 1e-4  # below this (-80 dBFS) a sample is digital silence
HUM_SECONDS = 30  # the stretch of each file searched for a mains hum
HUM_PEAK = 30.0  # its 50/60 Hz power over the median of the 30-250 Hz band around it
HUM_LEVEL = 0.003  # and its amplitude (about -50 dBFS)


@dataclass
class Column:
    """One picked channel of a file at its own rate: its DC offset, removed once it shows,
    and its low-frequency spectrum over the first seconds, for a mains hum."""

    rate: int
    dc: float | None = None
    removing: bool = False
    dc_max: float = 0.0
    power: np.ndarray | None = None
    seconds: int = 0
    samples: int = 0
    last_sound: int = 0  # one past the last sample that is not (near) digital silence
    _pending: list[np.ndarray] = field(default_factory=list)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if not len(x):
            return x
        loud = np.flatnonzero(np.abs(x) > SILENCE_LEVEL)
        if len(loud):
            self.last_sound = self.samples + int(loud[-1]) + 1
        self.samples += len(x)
        mean = float(x.mean())
        self.dc = mean if self.dc is None else (1 - DC_SMOOTHING) * self.dc + DC_SMOOTHING * mean
        self.removing = self.removing or abs(self.dc) > DC_LIMIT
        if self.removing:
            x = x - np.float32(self.dc)
            self.dc_max = max(self.dc_max, abs(self.dc))
        if self.seconds < HUM_SECONDS:
            self._spectrum(x)
        return x

    def _spectrum(self, x: np.ndarray) -> None:
        self._pending.append(x)
        have = sum(len(p) for p in self._pending)
        while have >= self.rate and self.seconds < HUM_SECONDS:
            data = np.concatenate(self._pending)
            second, rest = data[: self.rate], data[self.rate :]
            spec = np.abs(np.fft.rfft(second.astype(np.float64))[:251]) ** 2  # 1 Hz bins
            self.power = spec if self.power is None else self.power + spec
            self.seconds += 1
            self._pending, have = ([rest] if len(rest) else []), len(rest)

    def hum_hz(self) -> tuple[int, float] | None:
        """The mains frequency and its amplitude, when a hum stands out."""
        if self.power is None or len(self.power) < 251:
            return None
        for f0 in (50, 60):
            band = np.r_[self.power[30 : f0 - 2], self.power[f0 + 3 : 251]]
            peak = self.power[f0 - 1 : f0 + 2].max()
            amplitude = 2 * np.sqrt(peak / self.seconds) / self.rate
            if peak > HUM_PEAK * max(float(np.median(band)), 1e-20) and amplitude > HUM_LEVEL:
                return f0, float(amplitude)
        return None


@dataclass
class Health:
    """What decoding one file found: odd samples, a DC offset, a hum."""

    samples: int = 0
    nan: int = 0
    clipped: int = 0
    columns: list[Column] = field(default_factory=list)


def decoded(reader: AudioReader, picks: list[int], health: Health) -> Iterator[list[np.ndarray]]:
    """Per decoded block, one 16 kHz float array per picked channel (-1 = mix of all), its DC
    offset removed once one shows."""
    resamplers = [Resampler(reader.rate, SAMPLE_RATE) for _ in picks]
    health.columns = [Column(reader.rate) for _ in picks]
    for block in reader.blocks():
        bad = ~np.isfinite(block)
        if bad.any():
            health.nan += int(bad.sum())
            block = np.where(bad, 0.0, block).astype(np.float32)
        health.samples += block.size
        health.clipped += int(np.count_nonzero(np.abs(block) >= CLIP_LEVEL))
        cols = [block.mean(axis=1) if p < 0 else block[:, p] for p in picks]
        yield [r(col(c)) for r, col, c in zip(resamplers, health.columns, cols, strict=True)]
    yield [r(np.zeros(0, dtype=np.float32), last=True) for r in resamplers]
