"""The corpus's acoustic conditions: pink noise at a chosen SNR, and a telephone channel
(8 kHz, the G.712 band 300-3400 Hz, G.711 mu-law through ffmpeg's codec)."""

from __future__ import annotations

import numpy as np
import soxr

PHONE_RATE = 8000
PHONE_BAND_HZ = (300.0, 3400.0)


def pink_noise(n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` samples of unit-RMS pink (1/f power) noise, shaped in the frequency domain."""
    if n == 0:
        return np.zeros(0)
    spectrum = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n)
    spectrum[1:] /= np.sqrt(f[1:])
    spectrum[0] = 0.0
    y = np.fft.irfft(spectrum, n)
    return y / np.sqrt(np.mean(y * y))


def bandpass_taps(rate: int, low: float, high: float) -> np.ndarray:
    # Kaiser-windowed sinc, about 80 dB down 100 Hz outside the band. ffmpeg's highpass/lowpass
    # are 2-pole and would leave audible energy above 3.6 kHz.
    n = 401
    t = np.arange(n) - (n - 1) / 2
    edges = (low - 50.0, high + 50.0)  # -6 dB points: the transition is centred outside the band
    taps = (2 * edges[1] / rate) * np.sinc(2 * edges[1] / rate * t) - (2 * edges[0] / rate) * (
        np.sinc(2 * edges[0] / rate * t)
    )
    return taps * np.kaiser(n, 7.857)


def mulaw_roundtrip(x: np.ndarray, rate: int) -> np.ndarray:
    """Encode and decode ``x`` with ffmpeg's G.711 mu-law codec (through PyAV)."""
    import av

    pcm = np.clip(np.round(x * 32767.0), -32768, 32767).astype(np.int16)
    encoder = av.CodecContext.create("pcm_mulaw", "w")
    encoder.sample_rate = rate
    encoder.layout = "mono"
    encoder.format = "s16"
    frame = av.AudioFrame.from_ndarray(pcm[None, :], format="s16", layout="mono")
    frame.sample_rate = rate
    packets = [*encoder.encode(frame), *encoder.encode(None)]
    decoder = av.CodecContext.create("pcm_mulaw", "r")
    decoder.sample_rate = rate
    decoder.layout = "mono"
    out = [f.to_ndarray().reshape(-1) for p in packets for f in decoder.decode(p)]
    decoded = np.concatenate(out) if out else np.zeros(0, np.int16)
    return decoded.astype(np.float64) / 32768.0


def telephone_channel(x: np.ndarray, sample_rate: int) -> np.ndarray:
    """``x`` through a telephone channel, returned at ``sample_rate`` with the same length.

    8 kHz, the G.712 send filter (300-3400 Hz), G.711 mu-law, the G.712 receive filter.
    """
    y = soxr.resample(np.asarray(x, dtype=np.float64), sample_rate, PHONE_RATE, quality="HQ")
    taps = bandpass_taps(PHONE_RATE, *PHONE_BAND_HZ)
    y = np.convolve(y, taps, mode="same")
    y = np.convolve(mulaw_roundtrip(y, PHONE_RATE), taps, mode="same")
    y = soxr.resample(y, PHONE_RATE, sample_rate, quality="HQ")
    out = np.zeros(len(x), dtype=np.float32)
    out[: min(len(x), y.size)] = np.clip(y[: len(x)], -1.0, 1.0)
    return out
