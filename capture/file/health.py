"""What decoding a recording finds about it: NaN samples, clipping, a DC offset (removed
before the VAD), a mains hum; and the decode loop that applies it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from turnscope.capture.file.decode import AudioReader, Resampler, open_audio
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
# It is the mean of the whole file (a pass of its own): a running estimate took the slow swings
# of 1/f noise at 10 dB SNR for an offset, and moved speech onsets by 100 ms.
DC_LIMIT = 0.002
SILENCE_LEVEL = 1e-4  # below this (-80 dBFS) a sample is digital silence
HUM_SECONDS = 30  # the stretch of each file searched for a mains hum
HUM_PEAK = 30.0  # its 50/60 Hz power over the median of the 30-250 Hz band around it
HUM_LEVEL = 0.003  # and its amplitude (about -50 dBFS)


@dataclass
class Column:
    """One picked channel of a file at its own rate: its DC offset, removed once it shows,
    and its low-frequency spectrum over the first seconds, for a mains hum."""

    rate: int
    dc: float = 0.0  # the file's offset on this channel, removed when above DC_LIMIT
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
        if self.removing:
            x = x - np.float32(self.dc)
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

    @property
    def removing(self) -> bool:
        return abs(self.dc) > DC_LIMIT

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


def file_means(path: Path, picks: list[int]) -> list[float]:
    """Each picked channel's mean over the whole file (its DC offset), in a pass of its own."""
    reader = open_audio(path)
    totals = np.zeros(len(picks))
    count = 0
    for block in reader.blocks():
        block = np.where(np.isfinite(block), block, 0.0)
        cols = [block.mean(axis=1) if p < 0 else block[:, p] for p in picks]
        totals += [float(np.sum(c, dtype=np.float64)) for c in cols]
        count += len(block)
    return [float(t / count) if count else 0.0 for t in totals]


def decoded(reader: AudioReader, picks: list[int], health: Health) -> Iterator[list[np.ndarray]]:
    """Per decoded block, one 16 kHz float array per picked channel (-1 = mix of all), its DC
    offset removed once one shows."""
    resamplers = [Resampler(reader.rate, SAMPLE_RATE) for _ in picks]
    health.columns = [Column(reader.rate, dc) for dc in file_means(reader.path, picks)]
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
