"""Streaming audio decoding: any file libsndfile or FFmpeg (PyAV) reads, in blocks, any rate.

Blocks are float32 of shape (n, channels) at the file's own rate; resampling is soxr's job
(``Resampler``). Nothing here holds a whole file in memory.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

from turnscope.errors import InputError
from turnscope.jsonio import native_path

BLOCK_SECONDS = 1.0
# MPEG audio goes to FFmpeg, not libsndfile: libsndfile's libmpg123 prints every frame it finds
# odd straight to the process's stderr (14 lines on one replay), which PyAV keeps quiet; the
# samples are the same (to float rounding, gapless trimming included).
MPEG_SUFFIXES = (".mp3", ".mp2", ".mpga")
_OGG_TAIL = 65307  # the largest Ogg page: the last one starts within this many bytes of the end
_OGG_EOS = 0x04  # header_type flag of a logical stream's last page
_MP3_FIRST_FRAME = 4096  # where an MP3's Xing/Info/VBRI header sits (in its first frame)


@dataclass
class AudioReader:
    """An opened audio file: its rate, channel count, length if known, and a block iterator."""

    path: Path
    rate: int
    channels: int
    frames: int | None
    decoder: str  # "libsndfile" or "ffmpeg"
    _iter: Iterator[np.ndarray] | None = None
    truncated: str | None = None  # set when decoding stopped early on an error
    declared_frames: int | None = None  # what a header claims (more than there is: cut off)
    unended: bool = False  # an Ogg stream without its end-of-stream page: cut off

    def blocks(self) -> Iterator[np.ndarray]:
        """float32 blocks of shape (n, channels); stops early (and sets .truncated) on a
        decoding error after some audio was read."""
        assert self._iter is not None
        try:
            yield from self._iter
        except Exception as exc:  # a file that breaks mid-stream: keep what decoded
            self.truncated = f"{type(exc).__name__}: {exc}".strip()


def _sndfile_blocks(path: Path, block: int) -> Iterator[np.ndarray]:
    with sf.SoundFile(native_path(path)) as f:
        while True:
            data = f.read(block, dtype="float32", always_2d=True)
            if not len(data):
                return
            yield data


def _mp3_counts_its_frames(path: Path) -> bool:
    """An MP3 whose first frame is a Xing/Info/VBRI header: it states how many frames follow
    (without one, FFmpeg estimates the length from the bitrate and the file's size)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(10)
            if head[:3] == b"ID3" and len(head) == 10:  # an ID3v2 tag first: its size, syncsafe
                fh.seek(10 + sum((b & 0x7F) << (7 * (3 - i)) for i, b in enumerate(head[6:10])))
            else:
                fh.seek(0)
            first = fh.read(_MP3_FIRST_FRAME)
    except OSError:
        return False
    return any(tag in first for tag in (b"Xing", b"Info", b"VBRI"))


def _declared_s(format_name: str, duration: float | None, path: Path) -> float | None:
    """``duration`` where the file itself states it (an MP4's or a WebM's header, an MP3's frame
    count); None where FFmpeg estimated it from the bitrate (a raw ADTS AAC stream: 35.5 s for
    a whole 33.1 s file), which is no sign of a cut."""
    names = set(format_name.split(","))
    if duration is None or not names & {"mov", "mp4", "matroska", "webm", "mp3"}:
        return None
    return duration if "mp3" not in names or _mp3_counts_its_frames(path) else None


def _av_blocks(path: Path) -> tuple[int, int, float | None, float | None, Iterator[np.ndarray]]:
    import av

    try:
        container = av.open(str(path))
    except Exception as exc:
        # FFmpeg's errors carry its error code and the path ("[Errno 541478725] End of file:
        # 'x.ogg'"); the line names the file already, so only the reason is kept.
        why = getattr(exc, "strerror", None) or f"{type(exc).__name__}: {exc}"
        raise InputError(
            f"unreadable audio: neither libsndfile nor FFmpeg can decode it ({why})",
            path=path,
            fix="give a wav, flac, ogg/opus or mp3 file",
        ) from None
    streams = container.streams.audio
    if not streams:
        container.close()
        raise InputError("has no audio stream", path=path)
    stream = streams[0]
    rate = stream.codec_context.sample_rate or stream.rate
    channels = stream.codec_context.channels
    # The stream's own length, else the container's (Matroska/WebM keep it in the segment's
    # header only; a browser's MediaRecorder file has neither: None).
    if stream.duration:
        duration: float | None = float(stream.duration * stream.time_base)
    else:
        duration = container.duration / av.time_base if container.duration else None

    def gen() -> Iterator[np.ndarray]:
        try:
            for frame in container.decode(stream):
                arr = frame.to_ndarray()
                data = arr.T if frame.format.is_planar else arr.reshape(-1, channels)
                if np.issubdtype(data.dtype, np.integer):
                    data = data.astype(np.float32) / float(np.iinfo(data.dtype).max + 1)
                yield data.astype(np.float32, copy=False)
        finally:
            container.close()

    return rate, channels, duration, _declared_s(container.format.name, duration, path), gen()


def declared_wav_frames(path: Path) -> int | None:
    """The frame count a RIFF/WAVE header declares for its data chunk (libsndfile silently
    trusts the file's real length instead); None when not a plain WAV or not declared."""
    try:
        with path.open("rb") as fh:
            head = fh.read(12)
            if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
                return None
            block_align = 0
            while True:
                chunk = fh.read(8)
                if len(chunk) < 8:
                    return None
                size = struct.unpack("<I", chunk[4:])[0]
                if chunk[:4] == b"fmt ":
                    fmt = fh.read(size + (size & 1))
                    block_align = struct.unpack("<H", fmt[12:14])[0] if len(fmt) >= 14 else 0
                elif chunk[:4] == b"data":
                    # 0 and 0xFFFFFFFF mark a stream whose writer never went back to the header.
                    if not block_align or size in (0, 0xFFFFFFFF):
                        return None
                    return size // block_align
                else:
                    fh.seek(size + (size & 1), 1)
    except OSError:
        return None


def ogg_unended(path: Path) -> bool:
    """An Ogg file whose last page lacks the end-of-stream flag: its writer never finished it,
    or the copy was cut short. Ogg declares no length up front, so this mark is the only sign
    (libsndfile and FFmpeg both decode what is there without a word)."""
    try:
        with path.open("rb") as fh:
            if fh.read(4) != b"OggS":
                return False
            size = fh.seek(0, 2)
            fh.seek(max(0, size - _OGG_TAIL))
            tail = fh.read()
    except OSError:
        return False
    at = tail.rfind(b"OggS\x00")  # capture pattern, then stream structure version 0
    return at >= 0 and len(tail) > at + 5 and not tail[at + 5] & _OGG_EOS


def open_audio(path: str | Path) -> AudioReader:
    """Open ``path`` for block decoding; InputError with the file name when it cannot be read."""
    p = Path(path)
    if not p.exists():
        raise InputError("no such audio file", path=p, fix="check the path")
    if p.is_dir():
        both = (p / "caller.wav").is_file() and (p / "agent.wav").is_file()
        raise InputError(
            "is a directory, expected an audio file",
            path=p,
            fix=f"a bundle: give --caller {p / 'caller.wav'} --agent {p / 'agent.wav'}"
            if both
            else None,
        )
    if p.stat().st_size == 0:
        raise InputError("is an empty file (0 bytes), not audio", path=p)
    block = None
    try:
        if p.suffix.lower() in MPEG_SUFFIXES:
            raise TypeError("MPEG audio: FFmpeg decodes it")
        info = sf.info(native_path(p))
        if info.format == "MPEG":
            raise TypeError("MPEG audio: FFmpeg decodes it")
        if info.frames == 0 and not len(sf.read(native_path(p), frames=1)[0]):
            # Said now, before the run writes anything in its folder.
            raise InputError("contains no audio samples (zero-length audio)", path=p)
        block = max(1, int(info.samplerate * BLOCK_SECONDS))
        reader = AudioReader(
            p, info.samplerate, info.channels, info.frames, "libsndfile", _sndfile_blocks(p, block)
        )
        reader.declared_frames = declared_wav_frames(p)
        reader.unended = ogg_unended(p)
        return reader
    except (sf.LibsndfileError, RuntimeError, TypeError):
        pass  # not a format libsndfile knows: let FFmpeg try
    rate, channels, duration, declared, it = _av_blocks(p)
    frames = int(duration * rate) if duration else None
    stated = int(declared * rate) if declared else None
    reader = AudioReader(p, rate, channels, frames, "ffmpeg", it, declared_frames=stated)
    reader.unended = ogg_unended(p)
    return reader


class Resampler:
    """Streaming soxr resampler from ``in_rate`` to ``out_rate`` for one channel."""

    def __init__(self, in_rate: int, out_rate: int):
        self.passthrough = in_rate == out_rate
        self._stream = (
            None
            if self.passthrough
            else soxr.ResampleStream(in_rate, out_rate, 1, dtype="float32", quality="HQ")
        )

    def __call__(self, x: np.ndarray, last: bool = False) -> np.ndarray:
        if self._stream is None:
            return x.astype(np.float32, copy=False)
        return self._stream.resample_chunk(np.ascontiguousarray(x, dtype=np.float32), last=last)
