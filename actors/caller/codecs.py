"""The caller's telephone line: a band and a codec, run before the call on each line's audio and
on the background bed (never on the call's clock).

- band: 8 kHz, the G.712 filter (300-3400 Hz) on the way in and out;
- g711 / g711a: the band and G.711 mu-law / A-law (FFmpeg's codecs, through PyAV);
- amr-nb: 8 kHz, AMR-NB at 12.2 kbit/s (FFmpeg's libopencore_amrnb); where FFmpeg lacks it, the
  band alone, and the record says so;
- opus: 16 kHz Opus (libopus) at 10 kbit/s.
A codec's delay (its look-ahead, measured once on a click) is taken out, so the coded speech
starts where the speech did: the caller's truth stays the speech's own extent. Speech and
background go through the codec apart and are summed as they go out: a codec's treatment of
speech in noise is approximated by its treatment of each.
"""

from __future__ import annotations

import functools

import numpy as np
import soxr

from turnscope.actors.caller.acoustic_keys import Telephone
from turnscope.actors.caller.conditions import PHONE_BAND_HZ, PHONE_RATE, bandpass_taps

SR = 16000
OPUS_KBPS = 10
AMR_BPS = 12200
CODEC_RATE = {Telephone.AMR_NB: PHONE_RATE, Telephone.OPUS: SR}
CODEC_NAME = {
    Telephone.G711: "pcm_mulaw",
    Telephone.G711A: "pcm_alaw",
    Telephone.AMR_NB: "libopencore_amrnb",
    Telephone.OPUS: "libopus",
}


def available(line: Telephone) -> bool:
    """Whether this FFmpeg has the line's codec (the band needs none)."""
    if line is Telephone.BAND:
        return True
    import av

    try:
        av.CodecContext.create(CODEC_NAME[line], "w")
    except Exception:  # PyAV's UnknownCodecError and the like: this FFmpeg lacks it
        return False
    return True


def _roundtrip(x: np.ndarray, rate: int, name: str, bit_rate: int | None) -> np.ndarray:
    """``x`` (float, ``rate``) encoded and decoded by FFmpeg's ``name``, as float."""
    import av

    pcm = np.clip(np.round(x * 32767.0), -32768, 32767).astype(np.int16)
    enc = av.CodecContext.create(name, "w")
    enc.sample_rate = rate
    enc.layout = "mono"
    enc.format = "s16"
    if bit_rate:
        enc.bit_rate = bit_rate
    enc.open()
    size = enc.frame_size or 160
    padded = np.concatenate([pcm, np.zeros((-pcm.size) % size, np.int16)])
    packets = []
    for k in range(0, padded.size, size):
        frame = av.AudioFrame.from_ndarray(padded[None, k : k + size], format="s16", layout="mono")
        frame.sample_rate = rate
        frame.pts = k
        packets += enc.encode(frame)
    packets += enc.encode(None)
    dec = av.CodecContext.create(name.replace("libopencore_amrnb", "amrnb"), "r")
    dec.sample_rate = rate
    dec.layout = "mono"
    out = []
    got = rate
    for p in packets:
        for f in dec.decode(p):
            a = f.to_ndarray().reshape(-1)
            out.append(a.astype(np.float64) / 32768.0 if a.dtype == np.int16 else a)
            got = f.sample_rate  # libopus decodes at 48 kHz whatever it was given
    y = np.asarray(np.concatenate(out) if out else np.zeros(0), dtype=np.float64)
    return y if got == rate else soxr.resample(y, got, rate, quality="HQ")


@functools.lru_cache(maxsize=8)
def _delay(line: Telephone) -> int:
    """The codec's delay in its own samples: the lag at which a noise burst comes out."""
    rate = CODEC_RATE.get(line, PHONE_RATE)
    rng = np.random.default_rng(0)
    burst = np.zeros(rate)
    burst[rate // 10 : rate // 2] = 0.3 * rng.standard_normal(rate // 2 - rate // 10)
    if rate == PHONE_RATE:
        burst = np.convolve(burst, bandpass_taps(PHONE_RATE, *PHONE_BAND_HZ), mode="same")
    bit_rate = OPUS_KBPS * 1000 if line is Telephone.OPUS else AMR_BPS
    y = _roundtrip(burst, rate, CODEC_NAME[line], bit_rate if line in CODEC_RATE else None)
    most = rate // 10  # no telephone codec delays more than 100 ms
    scores = [float(np.dot(y[k : k + burst.size - most], burst[:-most])) for k in range(most)]
    return int(np.argmax(scores))


def _coded(x: np.ndarray, line: Telephone, rate: int, delay: int) -> np.ndarray:
    bit_rate = OPUS_KBPS * 1000 if line is Telephone.OPUS else AMR_BPS
    y = _roundtrip(x, rate, CODEC_NAME[line], bit_rate if line in CODEC_RATE else None)
    y = y[delay : delay + x.size]
    return np.concatenate([y, np.zeros(x.size - y.size)])


def telephone(x: np.ndarray, line: Telephone) -> np.ndarray:
    """16 kHz ``x`` through the caller's ``line``, back at 16 kHz, the same length, aligned."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return x.astype(np.float32)
    if line is Telephone.OPUS:
        y = _coded(x, line, SR, _delay(line)) if available(line) else x
        return np.clip(y, -1, 1).astype(np.float32)
    y = soxr.resample(x, SR, PHONE_RATE, quality="HQ")
    taps = bandpass_taps(PHONE_RATE, *PHONE_BAND_HZ)  # 'same': symmetric taps, no delay
    y = np.convolve(y, taps, mode="same")
    if line is not Telephone.BAND and available(line):
        y = _coded(y, line, PHONE_RATE, _delay(line))
        y = np.convolve(y, taps, mode="same")
    y = soxr.resample(y, PHONE_RATE, SR, quality="HQ")
    out = np.zeros(x.size, np.float32)
    out[: min(x.size, y.size)] = np.clip(y[: x.size], -1.0, 1.0)
    return out
