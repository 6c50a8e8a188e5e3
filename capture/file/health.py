"""What decoding a recording finds about it: NaN samples, clipping, a DC offset and a mains hum
(both removed before the VAD); and the decode loop that applies it."""

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
# A run of exact zeros this long (digital silence, not a zero crossing) means the channel has no
# one offset: a recording played into a call brings its offset and the silence around it has
# none. The whole file's mean would lift that silence off zero (a -48 dBFS floor where the
# endpointer reads digital silence) and make a replay hear what the live call did not.
SILENT_RUN_S = 0.05
SILENCE_LEVEL = 1e-4  # below this (-80 dBFS) a sample is digital silence
HUM_SECONDS = 30  # the stretch of each file searched for a mains hum
HUM_PEAK = 30.0  # its 50/60 Hz power over the median of the 30-250 Hz band around it
HUM_LEVEL = 0.003  # and its amplitude (about -50 dBFS)


def rate_problem(rate: int, what: str) -> str | None:
    """What is wrong with a recording at ``rate`` Hz that turnscope reads speech or noise from
    (a noise bed, a line's clip, a call to re-drive): below the telephone band, refused."""
    if rate < MIN_RATE:
        return f"the {what} is at {rate} Hz: give one at {MIN_RATE} Hz or more"
    return None


@dataclass
class Column:
    """One picked channel of a file at its own rate: its DC offset and its mains hum (from the
    survey of the whole file), removed from the audio as it is decoded."""

    rate: int
    dc: float = 0.0  # the file's offset on this channel, removed when above DC_LIMIT
    silent: bool = False  # it holds digital silence: its offset is left as recorded
    power: np.ndarray | None = None  # low-frequency spectrum over the first seconds, 1 Hz bins
    seconds: int = 0
    samples: int = 0
    last_sound: int = 0  # one past the last sample that is not (near) digital silence
    _filter: HumFilter | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        hum = self.hum_hz()
        if hum is not None:
            self._filter = HumFilter(self.rate, hum[0])

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if not len(x):
            return x
        loud = np.flatnonzero(np.abs(x) > SILENCE_LEVEL)
        if len(loud):
            self.last_sound = self.samples + int(loud[-1]) + 1
        self.samples += len(x)
        if self.removing:
            x = x - np.float32(self.dc)
        if self._filter is not None:
            x = self._filter(x)
        return x

    @property
    def offset(self) -> bool:
        """The channel has a DC offset worth saying."""
        return abs(self.dc) > DC_LIMIT

    @property
    def removing(self) -> bool:
        return self.offset and not self.silent

    def hum_hz(self) -> tuple[int, float] | None:
        """The mains frequency and its amplitude, when a hum stands out."""
        if self.power is None or len(self.power) < 251 or not self.seconds:
            return None
        for f0 in (50, 60):
            band = np.r_[self.power[30 : f0 - 2], self.power[f0 + 3 : 251]]
            peak = self.power[f0 - 1 : f0 + 2].max()
            amplitude = 2 * np.sqrt(peak / self.seconds) / self.rate
            if peak > HUM_PEAK * max(float(np.median(band)), 1e-20) and amplitude > HUM_LEVEL:
                return f0, float(amplitude)
        return None


class HumFilter:
    """Notches at a mains frequency and its first harmonics (ffmpeg's band-reject biquads,
    through PyAV), streaming: as many samples out as in. A hum is steady energy the energy gate
    and refinement would read as a loud background (at -34 dBFS, turn boundaries were off by
    150-550 ms); speech loses only the narrow bands around 50-300 Hz."""

    HARMONICS = 5

    def __init__(self, rate: int, f0: int) -> None:
        import av

        self._av = av
        self.rate = rate
        self._graph = av.filter.Graph()
        node = self._graph.add_abuffer(sample_rate=rate, format="flt", layout="mono")
        for k in range(1, self.HARMONICS + 1):
            if k * f0 >= rate / 2:
                break
            notch = self._graph.add("bandreject", f"f={k * f0}:width_type=h:w=6")
            node.link_to(notch)
            node = notch
        sink = self._graph.add("abuffersink")
        node.link_to(sink)
        self._graph.configure()
        self._pts = 0

    def __call__(self, x: np.ndarray) -> np.ndarray:
        av = self._av
        frame = av.AudioFrame.from_ndarray(
            np.ascontiguousarray(x, dtype=np.float32)[None, :], format="flt", layout="mono"
        )
        frame.sample_rate = self.rate
        frame.pts = self._pts
        self._pts += len(x)
        self._graph.push(frame)
        out = []
        while True:
            try:
                out.append(self._graph.pull().to_ndarray().reshape(-1))
            except (av.BlockingIOError, av.EOFError):
                break
        return np.concatenate(out) if out else np.zeros(0, dtype=np.float32)


@dataclass
class Health:
    """What decoding one file found: odd samples, a DC offset, a hum."""

    samples: int = 0
    nan: int = 0
    clipped: int = 0
    columns: list[Column] = field(default_factory=list)


def survey(path: Path, picks: list[int], rate: int) -> list[Column]:
    """Each picked channel's mean over the whole file (its DC offset) and its low-frequency
    spectrum over the first HUM_SECONDS (a mains hum), in a pass of its own: both are known
    before the first sample reaches the VAD."""
    reader = open_audio(path)
    totals = np.zeros(len(picks))
    count = 0
    zeros = [_ZeroRuns(int(SILENT_RUN_S * rate)) for _ in picks]
    power: list[np.ndarray | None] = [None] * len(picks)
    pending: list[list[np.ndarray]] = [[] for _ in picks]
    seconds = 0
    for block in reader.blocks():
        block = np.where(np.isfinite(block), block, 0.0)
        cols = [block.mean(axis=1) if p < 0 else block[:, p] for p in picks]
        totals += [float(np.sum(c, dtype=np.float64)) for c in cols]
        for z, c in zip(zeros, cols, strict=True):
            z.add(c)
        count += len(block)
        if seconds < HUM_SECONDS:
            for k, c in enumerate(cols):
                pending[k].append(c)
            while seconds < HUM_SECONDS and sum(len(p) for p in pending[0]) >= rate:
                for k in range(len(picks)):
                    data = np.concatenate(pending[k])
                    second, rest = data[:rate], data[rate:]
                    spec = np.abs(np.fft.rfft(second.astype(np.float64))[:251]) ** 2  # 1 Hz
                    power[k] = spec if power[k] is None else power[k] + spec
                    pending[k] = [rest] if len(rest) else []
                seconds += 1
    means = [float(t / count) if count else 0.0 for t in totals]
    return [
        Column(rate, dc, z.found, pw, seconds)
        for dc, z, pw in zip(means, zeros, power, strict=True)
    ]


class _ZeroRuns:
    """Whether a stream, block by block, holds a run of at least ``n`` exact zeros."""

    def __init__(self, n: int) -> None:
        self.n = max(1, n)
        self.found = False
        self._run = 0  # zeros at the end of the blocks so far

    def add(self, x: np.ndarray) -> None:
        if self.found or not len(x):
            return
        sound = np.flatnonzero(x)
        if not len(sound):
            self._run += len(x)
        else:
            gaps = np.diff(sound) - 1
            longest = max(self._run + int(sound[0]), int(gaps.max()) if len(gaps) else 0)
            self._run = len(x) - 1 - int(sound[-1])
            self.found = longest >= self.n
        self.found = self.found or self._run >= self.n


def decoded(reader: AudioReader, picks: list[int], health: Health) -> Iterator[list[np.ndarray]]:
    """Per decoded block, one 16 kHz float array per picked channel (-1 = mix of all), its DC
    offset removed once one shows."""
    resamplers = [Resampler(reader.rate, SAMPLE_RATE) for _ in picks]
    health.columns = survey(reader.path, picks, reader.rate)
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
