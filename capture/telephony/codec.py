"""The line's audio codecs: G.711 mu-law and A-law (PyAV's encoders, as lookup tables) and the
raw 16-bit PCM Exotel streams, all at 8 kHz."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from typing import Literal

import av
import numpy as np
from av import AudioFrame

LINE_RATE = 8000
CodecName = Literal["mulaw", "alaw", "pcm16"]
_FFMPEG = {"mulaw": "pcm_mulaw", "alaw": "pcm_alaw"}
# 16-bit PCM read as G.711 decodes to rough noise: every other byte (the low one) is random,
# so the sample-to-sample steps are larger than the samples (mean |step| / mean |sample|).
# So does a compressed file's data. Right audio's fricatives are rough too, so one message is a
# guess; the call counts them (benchmarks/payloads.py, 20 ms messages over 1.4: mu-law speech
# 4.1% espeak-ng, 5.7% Piper, 6.6% real people; their PCM16 sent raw 77-94%, MP3 frames 56-69%).
ROUGHNESS = 1.4
# A file's own first bytes (a 4-byte magic, or an ID3v2 tag's 10-byte header: see
# ``_file_header``). Not an MP3 frame's 2-byte sync: mu-law near silence is 0xFF then 0xF0-0xFE,
# so a reply's message began so (1 in 1100 of espeak-ng's) and degraded a good call; an MP3
# without a tag decodes as noise, 56-69% of its messages.
CONTAINERS = (b"RIFF", b"OggS", b"fLaC")


def _file_header(payload: bytes) -> bool:
    """A WAV, Ogg or FLAC file's magic, or a whole ID3v2 header (version 2-4, revision 0, the
    size's four bytes under 0x80): three letters alone are 1 in 2^24 of random audio bytes."""
    if payload.startswith(CONTAINERS):
        return True
    head = payload[:10]
    return (
        len(head) == 10
        and head.startswith(b"ID3")
        and head[3] in (2, 3, 4)
        and head[4] == 0
        and all(b < 0x80 for b in head[6:10])
    )


class NotAudio(StrEnum):
    """Why a payload is not audio in the line's codec; all but NOISE are certain at once."""

    EMPTY = "empty"
    ODD_BYTES = "odd_bytes"
    FILE_HEADER = "file_header"
    NOISE = "noise"  # decodes as noise: a guess, trusted only when it is most of the media


@cache
def _tables(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(encode: 65536 bytes indexed by int16 + 32768, decode: 256 int16) from FFmpeg's codec."""
    ffmpeg = _FFMPEG[name]
    values = np.arange(-32768, 32768, dtype=np.int16)
    enc = av.CodecContext.create(ffmpeg, "w")
    enc.sample_rate, enc.format, enc.layout = LINE_RATE, "s16", "mono"
    frame = AudioFrame.from_ndarray(values.reshape(1, -1), format="s16", layout="mono")
    frame.sample_rate = LINE_RATE
    encoded = b"".join(bytes(p) for p in [*enc.encode(frame), *enc.encode(None)])
    dec = av.CodecContext.create(ffmpeg, "r")
    dec.sample_rate, dec.layout = LINE_RATE, "mono"
    decoded = np.concatenate(
        [f.to_ndarray().reshape(-1) for f in dec.decode(av.Packet(bytes(range(256))))]
    )
    return np.frombuffer(encoded, np.uint8).copy(), decoded.astype(np.int16)


@dataclass(frozen=True)
class Codec:
    """One line codec: int16 samples at 8 kHz to payload bytes and back."""

    name: CodecName

    @property
    def bytes_per_sample(self) -> int:
        return 2 if self.name == "pcm16" else 1

    def encode(self, pcm: np.ndarray) -> bytes:
        if self.name == "pcm16":
            return pcm.astype("<i2").tobytes()
        table, _ = _tables(self.name)
        return table[pcm.astype(np.int32) + 32768].tobytes()

    def decode(self, payload: bytes) -> np.ndarray:
        if self.name == "pcm16":
            return np.frombuffer(payload[: len(payload) // 2 * 2], "<i2").astype(np.int16)
        _, table = _tables(self.name)
        return table[np.frombuffer(payload, np.uint8)]

    def line(self, pcm: np.ndarray) -> np.ndarray:
        """What the line carries of ``pcm``: encoded and decoded (the codec's quantisation)."""
        return pcm if self.name == "pcm16" else self.decode(self.encode(pcm))

    def problem(self, payload: bytes) -> str | None:
        """Why ``payload`` is not audio in this codec, in words, or None."""
        found = self.diagnose(payload)
        return None if found is None else found[1]

    def diagnose(self, payload: bytes) -> tuple[NotAudio, str] | None:
        """Why ``payload`` is not audio in this codec (the code and the words), or None."""
        if not payload:
            return NotAudio.EMPTY, "an empty payload"
        if self.name == "pcm16" and len(payload) % 2:
            return NotAudio.ODD_BYTES, f"an odd byte count ({len(payload)}) for 16-bit PCM"
        if _file_header(payload):
            return (
                NotAudio.FILE_HEADER,
                "a file header (a WAV/Ogg/MP3/FLAC file sent instead of raw samples)",
            )
        if self.name != "pcm16" and len(payload) >= 80:
            x = self.decode(payload).astype(np.float32)
            level = float(np.mean(np.abs(x)))
            if level > 50 and float(np.mean(np.abs(np.diff(x)))) > ROUGHNESS * level:
                return NotAudio.NOISE, f"noise when decoded as {self.name} (16-bit PCM sent raw?)"
        return None


def codec(name: str) -> Codec:
    if name not in ("mulaw", "alaw", "pcm16"):
        raise ValueError(f"unknown line codec {name!r}")
    return Codec(name)  # type: ignore[arg-type]
