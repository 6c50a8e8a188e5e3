"""Background beds for the caller's line: generated (street, office, car, babble), seeded, or a
user's recording; each a seamless loop of unit RMS at 16 kHz.

- street: traffic rumble (brown noise) swelling as vehicles pass (every 2-6 s), over pink noise;
- office: ventilation hum (low-passed pink noise) and bursts of typing;
- car: engine harmonics (about 30 Hz and up, wandering) over road noise below 300 Hz;
- babble: six espeak-ng voices, each talking on (sentences from a fixed list, never the
  scenario's), summed: many talkers, few words made out.
A loop is 12 s; its last 250 ms cross-fade into its first, so it repeats without a click.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

from turnscope.actors.caller.acoustic_keys import NOISE_FILE_MIN_RATE, NoiseKind, file_stamp
from turnscope.actors.caller.conditions import pink_noise
from turnscope.errors import InputError
from turnscope.jsonio import native_path

SR = 16000
LOOP_S = 12.0
FADE_S = 0.25
BABBLE_VOICES = ("en-gb", "en-us+f3", "en-gb-x-rp", "en-us+m3", "en-029", "en-gb-scotland")
BABBLE_TEXTS = (
    "I told her the meeting had moved to Thursday afternoon.",
    "We could take the train if the weather turns bad again.",
    "Did you see how many people came to the market this morning?",
    "The new place on the corner does a very good breakfast.",
    "He said the parcel would arrive before the end of the week.",
    "My sister is moving to a flat near the river next month.",
    "They never answer the phone when you actually need them.",
    "Honestly I think the second film was better than the first.",
)


def unit(x: np.ndarray) -> np.ndarray:
    """``x`` scaled to unit RMS (a silent ``x`` stays silent)."""
    rms = float(np.sqrt(np.mean(np.square(x, dtype=np.float64)))) if x.size else 0.0
    return (x / rms if rms > 0 else x).astype(np.float32)


def loop(x: np.ndarray, n: int) -> np.ndarray:
    """The first ``n`` samples of ``x`` (at least ``n`` + the fade long) as a seamless loop: its
    end cross-fades into its start."""
    fade = min(round(FADE_S * SR), n // 4, max(0, x.size - n))
    out = x[:n].astype(np.float64)
    if fade:
        ramp = np.linspace(0.0, 1.0, fade)
        # Sample n-1 is followed by sample 0, which now continues x[n:]: no step at the seam.
        out[:fade] = x[:fade] * ramp + x[n : n + fade] * (1 - ramp)
    return unit(out)


def _shaped(n: int, rng: np.random.Generator, exponent: float, low: float, high: float):
    """Gaussian noise with power falling as 1/f^exponent between ``low`` and ``high`` Hz."""
    spectrum = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n, 1 / SR)
    gain = np.zeros_like(f)
    band = (f >= low) & (f <= high)
    gain[band] = f[band] ** (-exponent / 2)
    return unit(np.fft.irfft(spectrum * gain, n))


def _envelope(n: int, rng: np.random.Generator, every_s: tuple[float, float], width_s: float):
    """Bumps of a random height at random intervals: something passing, someone typing."""
    t = np.arange(n) / SR
    env = np.zeros(n)
    at = rng.uniform(0, every_s[1])
    while at < n / SR + width_s:
        env += rng.uniform(0.5, 1.5) * np.exp(-0.5 * ((t - at) / width_s) ** 2)
        at += rng.uniform(*every_s)
    return env


def street(n: int, rng: np.random.Generator) -> np.ndarray:
    traffic = _shaped(n, rng, 2.0, 20, 4000) * (0.3 + _envelope(n, rng, (2.0, 6.0), 0.8))
    return unit(traffic + 0.5 * pink_noise(n, rng))


def office(n: int, rng: np.random.Generator) -> np.ndarray:
    hum = _shaped(n, rng, 1.0, 40, 1500)
    clicks = np.zeros(n)
    at = 0.0
    while at < n / SR:
        if rng.random() < 0.5:  # a burst of typing: keys 80-200 ms apart for 1-3 s
            end = at + rng.uniform(1.0, 3.0)
            while at < min(end, n / SR):
                k = int(at * SR)
                m = min(n - k, int(0.012 * SR))
                click = rng.standard_normal(m) * np.exp(-np.arange(m) / (0.002 * SR))
                clicks[k : k + m] += rng.uniform(0.5, 1.0) * click
                at += rng.uniform(0.08, 0.2)
        at += rng.uniform(0.5, 2.5)
    return unit(hum + 0.6 * unit(np.diff(clicks, prepend=0.0)))  # clicks are bright: a high-pass


def car(n: int, rng: np.random.Generator) -> np.ndarray:
    t = np.arange(n) / SR
    f0 = 32.0 + 3.0 * np.sin(2 * np.pi * t / rng.uniform(4.0, 9.0))  # the engine wanders
    phase = 2 * np.pi * np.cumsum(f0) / SR
    engine = sum(np.sin(k * phase + rng.uniform(0, 2 * np.pi)) / k for k in range(1, 7))
    road = _shaped(n, rng, 1.5, 20, 300)
    return unit(0.6 * unit(engine) + road + 0.15 * pink_noise(n, rng))


def babble(n: int, rng: np.random.Generator) -> np.ndarray:
    from turnscope.actors.caller.speech import speak  # espeak-ng, as every caller line

    mix = np.zeros(n)
    for voice in BABBLE_VOICES:
        talk: list[np.ndarray] = []
        size = 0
        for k in rng.permutation(len(BABBLE_TEXTS)).tolist() * 4:
            if size >= n + SR:
                break
            x = speak(BABBLE_TEXTS[k], voice=voice)
            gap = np.zeros(int(rng.uniform(0.1, 0.5) * SR), np.float32)
            talk += [x, gap]
            size += x.size + gap.size
        stream = np.concatenate(talk)
        start = int(rng.integers(0, max(1, stream.size - n)))
        mix += unit(np.resize(stream[start:], n))
    return unit(mix)


GENERATORS = {
    NoiseKind.STREET: street,
    NoiseKind.OFFICE: office,
    NoiseKind.CAR: car,
    NoiseKind.BABBLE: babble,
}


def bed(noise: str, seed: int) -> np.ndarray:
    """The background ``noise`` names (a kind or a file) as a unit-RMS 16 kHz loop (read-only,
    cached per process: a load run's calls share it; a file edited since is read again)."""
    return _bed(noise, seed, file_stamp(noise))


@functools.lru_cache(maxsize=16)
def _bed(noise: str, seed: int, _stamp: tuple[int, int] | None) -> np.ndarray:
    n = round(LOOP_S * SR)
    if noise in {k.value for k in NoiseKind}:
        rng = np.random.default_rng([seed, list(NoiseKind).index(NoiseKind(noise))])
        x = loop(GENERATORS[NoiseKind(noise)](n + round(FADE_S * SR), rng), n)
    else:
        x = noise_file(Path(noise))
    x.flags.writeable = False
    return x


def noise_file(path: Path) -> np.ndarray:
    """A user's noise recording: mono (channels mixed), 16 kHz, a loop of its whole length."""
    try:
        audio, rate = sf.read(native_path(path), dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, OSError) as exc:
        raise InputError(f"cannot read the noise file: {exc}", path=path) from None
    if rate < NOISE_FILE_MIN_RATE:
        raise InputError(
            f"the noise file is at {rate} Hz", path=path, fix="give one at 8000 Hz or more"
        )
    if audio.shape[1] > 2:
        raise InputError(
            f"the noise file has {audio.shape[1]} channels", path=path, fix="give mono or stereo"
        )
    x = audio.mean(axis=1)
    if rate != SR:
        x = soxr.resample(x, rate, SR, quality="HQ")
    if x.size < SR + round(FADE_S * SR):
        raise InputError("the noise is shorter than 1.25 s", path=path, fix="give a longer one")
    if not np.any(np.abs(x) > 1e-4):
        raise InputError("the noise file is silent", path=path, fix="give a recording of noise")
    return loop(x, x.size - round(FADE_S * SR))
