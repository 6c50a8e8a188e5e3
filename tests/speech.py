"""Real speech for tests: espeak-ng clips trimmed to their voiced extent, cached per session."""

from __future__ import annotations

import io
import subprocess
from functools import lru_cache

import numpy as np
import soundfile as sf
import soxr

SR = 16000


@lru_cache(maxsize=64)
def clip(text: str, voice: str = "en-us") -> np.ndarray:
    """float32 16 kHz speech, trimmed to the first/last sample above -60 dBFS."""
    wav = subprocess.run(
        ["espeak-ng", "-v", voice, "--stdout", text], capture_output=True, check=True
    ).stdout
    x, rate = sf.read(io.BytesIO(wav), dtype="float32")
    x = soxr.resample(x, rate, SR).astype(np.float32)
    idx = np.flatnonzero(np.abs(x) > 1e-3)
    return x[idx[0] : idx[-1] + 1]


def place(total_ms: float, *items: tuple[float, np.ndarray]) -> np.ndarray:
    """A channel of ``total_ms`` silence with clips placed at the given start times (ms)."""
    out = np.zeros(int(total_ms * SR / 1000), dtype=np.float32)
    for start_ms, x in items:
        s = int(start_ms * SR / 1000)
        out[s : s + len(x)] += x[: len(out) - s]
    return out


def ms(x: np.ndarray) -> float:
    return len(x) * 1000 / SR
