"""Speech clips for synthesized calls: text-to-speech (espeak-ng or a Piper voice, `voices/`)
and recorded clips, trimmed.

Audio comes back as float32 mono in [-1, 1]: `speak`/`load_clip` trimmed to the voiced extent,
`synthesize`/`read_clip` as a `Clip` that knows its voiced extent (what `turnscope synth`
places, so that ground truth is the voiced extent of the audio on the call clock).

Voiced extent (`voiced_extent`): with w the number of samples in 5 ms and E(n) the RMS of the
window x[n : n + w], the threshold is 40 dB below the utterance's peak window RMS, max E. The
extent starts at the first sample whose trailing window (the 5 ms ending at it, x[n-w+1 : n+1])
exceeds the threshold and ends one past the last sample whose leading window (the 5 ms starting
at it, x[n : n+w]) exceeds it; x is zero outside its samples. Trailing/leading windows make the
extent of a burst with abrupt edges exactly the burst, where a centred window would widen it by
2.5 ms on each side.
"""

from __future__ import annotations

import functools
import shutil  # noqa: F401 (tests patch speech.shutil.which to hide espeak-ng)
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf
import soxr

from turnscope.actors.caller.voices import espeak, piper
from turnscope.actors.caller.voices.espeak import (  # noqa: F401 (this module's names)
    ESPEAK,
    INSTALL_FIX,
    english_voices,
)
from turnscope.actors.caller.voices.spec import Engine, VoiceProblem, VoiceRef, parse_voice
from turnscope.errors import InputError
from turnscope.jsonio import native_path

WINDOW_S = 0.005
FLOOR_DB = 40.0


def _window_power(x: np.ndarray, sample_rate: int) -> tuple[np.ndarray, int]:
    """Mean square of every 5 ms window of ``x`` zero-padded by w - 1 on each side, and w.

    Entry j is the window ending at sample j of ``x`` (and starting at sample j - w + 1).
    """
    w = max(1, min(round(WINDOW_S * sample_rate), x.size))
    xp = np.concatenate((np.zeros(w - 1), x, np.zeros(w - 1)))
    c = np.concatenate(([0.0], np.cumsum(xp * xp)))
    return (c[w:] - c[:-w]) / w, w


def peak_window_rms(x: np.ndarray, sample_rate: int) -> float:
    """The largest 5 ms window RMS of ``x``: the 0 dB reference of its voiced extent."""
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    if x.size == 0:
        return 0.0
    power, _ = _window_power(x, sample_rate)
    return float(np.sqrt(max(0.0, float(power.max()))))


def voiced_extent(
    x: np.ndarray, sample_rate: int, *, peak_rms: float | None = None
) -> tuple[int, int]:
    """``(start, end)`` sample indices (end exclusive) of the voiced extent of ``x``.

    See the module docstring for the definition. ``peak_rms`` replaces the peak window RMS of
    ``x`` as the 0 dB reference (used to re-trim a cut clip against its whole utterance).
    Returns ``(0, 0)`` when nothing exceeds the threshold (silence, an empty array).
    """
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    if x.size == 0:
        return 0, 0
    power, w = _window_power(x, sample_rate)
    ref = float(power.max()) if peak_rms is None else float(peak_rms) ** 2
    above = np.flatnonzero(power > ref * 10 ** (-FLOOR_DB / 10))
    if ref <= 0 or above.size == 0:
        return 0, 0
    # above[0] is the first window ending at a sample; above[-1] - (w - 1) the last one starting.
    return int(above[0]), int(above[-1]) - (w - 1) + 1


def trim(x: np.ndarray, sample_rate: int) -> np.ndarray:
    """``x`` cut to its voiced extent (an empty array when it is silent)."""
    start, end = voiced_extent(x, sample_rate)
    return x[start:end]


def check_voice(voice: str) -> None:
    """Raise InputError unless ``voice`` can speak: an espeak-ng voice espeak-ng knows, or an
    installed Piper voice / an existing Piper voice file (see `voices.spec`)."""
    ref = _ref(voice)
    if ref.engine is Engine.ESPEAK:
        espeak.check_voice(ref.name)


def _ref(voice: str) -> VoiceRef:
    try:
        return parse_voice(voice)
    except VoiceProblem as exc:
        raise InputError(str(exc)) from None


def describe(voice: str, rate_wpm: int | None, pitch: int | None) -> dict[str, Any] | None:
    """What the bundle records of ``voice`` with these settings; None for a Piper voice this
    process never loaded (it spoke nothing; loading it now could stall a live call)."""
    ref = _ref(voice)
    if ref.engine is Engine.ESPEAK:
        return espeak.describe(ref.name, rate_wpm, pitch)
    loaded = piper.loaded(ref)
    return None if loaded is None else loaded.describe(rate_wpm)


@dataclass(frozen=True, eq=False)
class Clip:
    """Speech with its voiced extent: ``audio[start:end]`` is the voiced extent of ``audio``.

    Up to 5 ms of the quiet onset and decay stay around it, so that measuring the voiced
    extent of the clip where it is placed (in silence) gives back exactly ``start``/``end``;
    a hard-trimmed clip would re-measure up to a couple of ms shorter, its edge windows no
    longer seeing the onset and decay.
    """

    audio: np.ndarray  # float32 mono in [-1, 1]
    start: int
    end: int

    @property
    def voiced(self) -> np.ndarray:
        return self.audio[self.start : self.end]


def _to_clip(x: np.ndarray, sample_rate: int) -> Clip | None:
    x = np.clip(x, -1.0, 1.0).astype(np.float32)
    start, end = voiced_extent(x, sample_rate)
    if end == 0:
        return None
    margin = round(WINDOW_S * sample_rate)
    lo, hi = max(0, start - margin), min(x.size, end + margin)
    audio = x[lo:hi]
    audio.flags.writeable = False  # shared by the cache
    return Clip(audio, start - lo, end - lo)


@functools.lru_cache(maxsize=512)
def _synthesize(text: str, voice: str, rate_wpm: int | None, pitch: int | None, sr: int) -> Clip:
    ref = _ref(voice)
    if ref.engine is Engine.ESPEAK:
        x, rate = espeak.speak(text, ref.name, rate_wpm, pitch)
    else:  # pitch is espeak-ng's alone (CallerSpec refuses it with a Piper caller voice)
        x, rate = piper.load(ref).speak(text, rate_wpm)
    if rate != sr:
        x = soxr.resample(x, rate, sr, quality="HQ")
    clip = _to_clip(x, sr)
    if clip is None:
        raise InputError(f"{ref.engine.value} produced no audible speech for {text!r}")
    return clip


def synthesize(
    text: str,
    *,
    voice: str = "en-us",
    rate_wpm: int | None = None,
    pitch: int | None = None,
    sample_rate: int = 16000,
) -> Clip:
    """``text`` spoken in ``voice`` (espeak-ng or Piper, see `voices.spec`) as a `Clip` (cached
    per process; the audio is read-only)."""
    return _synthesize(text, voice, rate_wpm, pitch, sample_rate)


def speak(
    text: str,
    *,
    voice: str = "en-us",
    rate_wpm: int | None = None,
    pitch: int | None = None,
    sample_rate: int = 16000,
) -> np.ndarray:
    """``text`` spoken in ``voice``: float32 mono in [-1, 1] at ``sample_rate``, trimmed to
    its voiced extent.

    ``rate_wpm`` is espeak-ng's ``-s`` (words per minute, default 175; a Piper voice's pace
    scaled by 175 / rate_wpm), ``pitch`` espeak-ng's ``-p`` (0-99, default 50).
    Results are cached per process; each call returns a fresh copy.
    Raises EnvironmentProblem without espeak-ng, InputError for an unknown voice.
    """
    clip = synthesize(text, voice=voice, rate_wpm=rate_wpm, pitch=pitch, sample_rate=sample_rate)
    return clip.voiced.copy()


def read_clip(path: str | Path, sample_rate: int) -> Clip:
    """A recorded utterance as a `Clip`: mixed to mono, resampled to ``sample_rate``."""
    p = Path(path)
    if not p.is_file():
        raise InputError("no such audio file", path=p, fix="check the path")
    try:
        audio, rate = sf.read(native_path(p), dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError) as exc:
        reason = getattr(exc, "error_string", None) or str(exc)  # no repr of its name
        raise InputError(f"cannot read audio: {reason}", path=p, fix="give a WAV or FLAC") from None
    x = audio.mean(axis=1)
    if rate != sample_rate:
        x = soxr.resample(x, rate, sample_rate, quality="HQ")
    clip = _to_clip(x, sample_rate)
    if clip is None:
        raise InputError(
            "the recording is silent", path=p, fix="give a recording of the line spoken"
        )
    return clip


def load_clip(path: str | Path, sample_rate: int) -> np.ndarray:
    """A recorded utterance: mixed to mono, resampled to ``sample_rate``, trimmed like `speak`."""
    return read_clip(path, sample_rate).voiced.copy()
