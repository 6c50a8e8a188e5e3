"""The room the caller speaks in: a generated impulse response (small, office, hall) or a user's.

A generated response is the direct sound at sample 0, then exponentially decaying noise (the
reverberation, its RT60 the room's), starting a few ms later (the first reflections) and losing
its highs as it decays (air and walls absorb them). Its direct-to-reverberant ratio is the
room's. Seeded. A user's response (mono, any rate) is cut to start at its peak (the direct
sound), so the speech is not delayed, and to 2 s.

Convolved speech keeps its length: the first ``len(x)`` samples are the speech, the rest its tail
(what the room adds after the speech stops, sent after the line: `acoustics.py`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

from turnscope.actors.caller.acoustic_keys import Room, file_stamp
from turnscope.errors import InputError
from turnscope.jsonio import native_path

SR = 16000
MAX_IR_S = 2.0


@dataclass(frozen=True)
class RoomShape:
    rt60_s: float
    drr_db: float  # direct-to-reverberant energy ratio
    first_ms: float  # the first reflection's delay


ROOMS = {
    Room.SMALL: RoomShape(0.3, 6.0, 3.0),
    Room.OFFICE: RoomShape(0.6, 2.0, 6.0),
    Room.HALL: RoomShape(1.4, -3.0, 15.0),
}


def impulse_response(reverb: str, seed: int) -> np.ndarray:
    """The impulse response ``reverb`` names (a room or a file) at 16 kHz, direct sound first
    (cached per process; a file edited since is read again)."""
    return _impulse_response(reverb, seed, file_stamp(reverb))


@functools.lru_cache(maxsize=16)
def _impulse_response(reverb: str, seed: int, _stamp: tuple[int, int] | None) -> np.ndarray:
    if reverb in {r.value for r in Room}:
        ir = _generated(ROOMS[Room(reverb)], np.random.default_rng([seed, 17]))
    else:
        ir = _read(Path(reverb))
    ir.flags.writeable = False
    return ir


def _generated(room: RoomShape, rng: np.random.Generator) -> np.ndarray:
    n = round(min(MAX_IR_S, 1.2 * room.rt60_s) * SR)
    t = np.arange(n) / SR
    tail = rng.standard_normal(n) * np.exp(-6.908 * t / room.rt60_s)  # -60 dB at RT60
    tail[: round(room.first_ms * SR / 1000)] = 0.0
    # Highs decay faster: a one-pole low-pass whose corner falls from 8 to 2 kHz along the tail.
    corner = 8000.0 * (0.25 ** (t / room.rt60_s).clip(0, 1))
    a = np.exp(-2 * np.pi * corner / SR)
    y = np.empty(n)
    prev = 0.0
    for k in range(n):
        prev = (1 - a[k]) * tail[k] + a[k] * prev
        y[k] = prev
    y *= np.sqrt(10 ** (-room.drr_db / 10) / max(float(np.sum(y * y)), 1e-12))
    y[0] = 1.0  # the direct sound, energy 1
    return (y / np.sqrt(np.sum(y * y))).astype(np.float32)  # the speech's energy is kept


def _read(path: Path) -> np.ndarray:
    try:
        audio, rate = sf.read(native_path(path), dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, OSError) as exc:
        raise InputError(f"cannot read the impulse response: {exc}", path=path) from None
    x = audio[:, 0].astype(np.float64)
    if rate != SR:
        x = soxr.resample(x, rate, SR, quality="HQ")
    peak = int(np.argmax(np.abs(x)))
    x = x[peak : peak + round(MAX_IR_S * SR)]
    energy = float(np.sum(x * x))
    if energy <= 0:
        raise InputError("the impulse response is silent", path=path, fix="give a measured one")
    return (x / np.sqrt(energy)).astype(np.float32)


def reverberate(x: np.ndarray, ir: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``x`` in the room: (the speech, ``len(x)`` samples; its tail after it)."""
    n = x.size + ir.size - 1
    size = 1 << (n - 1).bit_length()
    y = np.fft.irfft(np.fft.rfft(x, size) * np.fft.rfft(ir, size), size)[:n]
    return y[: x.size].astype(np.float32), y[x.size :].astype(np.float32)
