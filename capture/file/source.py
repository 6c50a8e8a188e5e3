"""File replay source: a recorded call (one stereo file, or two mono files) as a frame stream.

Fast mode hands frames over as fast as the pipeline takes them; realtime mode paces them at
wall-clock speed in the same chunk size a live call delivers, so the same pipeline sees the same
audio either way and finds the same turns.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import numpy as np

from turnscope.capture.file.decode import AudioReader, open_audio
from turnscope.capture.file.health import (
    CLIP_WARN_SHARE,
    MIN_RATE,
    MISMATCH_WARN_MS,
    SHORT_CHANNEL_MS,
    SHORT_SHARE,
    Health,
    decoded,
)
from turnscope.capture.frames import AGENT, CALLER, SAMPLE_RATE, PcmFrame, to_int16
from turnscope.capture.source import SourceInfo, SourceNote
from turnscope.errors import InputError, UnusableRecording

FILE_TIMING = "sample positions in the recording"


class _Chunker:
    """Accumulates a channel's samples and hands them out in fixed-size chunks."""

    def __init__(self, lead_in: int = 0, skip: int = 0):
        self._parts: list[np.ndarray] = [np.zeros(lead_in, dtype=np.float32)] if lead_in else []
        self._size = lead_in
        self._skip = skip
        self.total = lead_in

    def add(self, x: np.ndarray) -> None:
        if self._skip:
            cut = min(self._skip, len(x))
            x, self._skip = x[cut:], self._skip - cut
        if len(x):
            self._parts.append(x)
            self._size += len(x)
            self.total += len(x)

    def available(self) -> int:
        return self._size

    def take(self, n: int) -> np.ndarray:
        if not self._parts:
            return np.zeros(0, dtype=np.float32)
        data = np.concatenate(self._parts) if len(self._parts) > 1 else self._parts[0]
        out, rest = data[:n], data[n:]
        self._parts = [rest] if len(rest) else []
        self._size = len(rest)
        return out  # shorter than n only at the end of the file: never padded


class FileSource:
    """Replays a recorded call. Build it with ``stereo()`` or ``two_mono()``."""

    def __init__(
        self,
        feeds: list[tuple[AudioReader, list[int], list[str]]],
        info: SourceInfo,
        *,
        chunk_ms: int,
        realtime: bool,
        offsets_ms: dict[str, float] | None = None,
    ):
        self._feeds = feeds
        self.info = info
        self._chunk = SAMPLE_RATE * chunk_ms // 1000
        self._realtime = realtime
        self._offsets = offsets_ms or {}
        self._health = [Health() for _ in feeds]
        self._stop: str | None = None

    def stop(self, reason: str) -> None:
        """End the replay at the next chunk: what was replayed is scored, the evidence is
        marked degraded with the reason and how far it got."""
        self._stop = self._stop or reason

    @classmethod
    def stereo(
        cls,
        path: str | Path,
        *,
        caller_channel: int = 0,
        chunk_ms: int = 20,
        realtime: bool = False,
    ) -> FileSource:
        """Stereo recording; ``caller_channel`` (0 = left) is the caller, the other the agent."""
        reader = open_audio(path)
        if reader.channels == 1:
            raise InputError(
                "is mono, but a stereo call (caller and agent on separate channels) is expected",
                path=path,
                fix="pass two mono files with --caller FILE --agent FILE",
            )
        if reader.channels != 2:
            raise InputError(
                f"has {reader.channels} channels; a call recording has 2 (caller, agent)",
                path=path,
            )
        if caller_channel not in (0, 1):
            raise InputError(f"caller channel must be 0 (left) or 1 (right), not {caller_channel}")
        picks = [caller_channel, 1 - caller_channel]
        side, other = ("left", "right") if caller_channel == 0 else ("right", "left")
        info = SourceInfo(
            transport="file",
            timing_evidence=FILE_TIMING,
            # The flag that swaps them is named: a file with the sides the other way round
            # scores the agent as the caller, and only the transcript shows it.
            description=f"{reader.path.name} (stereo: caller {side}, agent {other}; "
            f"--caller-channel {other} if the other way round)",
            realtime=realtime,
            duration_ms=_duration_ms(reader),
            details={
                "files": {CALLER: str(reader.path), AGENT: str(reader.path)},
                "caller_channel": caller_channel,
                "decoder": reader.decoder,
                "file_rate": reader.rate,
            },
        )
        return cls([(reader, picks, [CALLER, AGENT])], info, chunk_ms=chunk_ms, realtime=realtime)

    @classmethod
    def two_mono(
        cls,
        caller: str | Path,
        agent: str | Path,
        *,
        agent_offset_ms: float = 0.0,
        chunk_ms: int = 20,
        realtime: bool = False,
    ) -> FileSource:
        """Two recordings, one per party; the agent's is shifted by ``agent_offset_ms``."""
        readers = {CALLER: open_audio(caller), AGENT: open_audio(agent)}
        lengths = {n: _duration_ms(r) for n, r in readers.items()}
        if (
            lengths[CALLER]
            and lengths[AGENT]
            and (agent_offset_ms >= lengths[CALLER] or -agent_offset_ms >= lengths[AGENT])
        ):
            raise InputError(
                f"--agent-offset-ms {agent_offset_ms:g} moves the agent's recording "
                f"({lengths[AGENT] / 1000:.1f} s) entirely outside the caller's "
                f"({lengths[CALLER] / 1000:.1f} s): the two never overlap",
                fix="give the agent recording's start relative to the caller's, in ms",
            )
        mixed = []
        for name, r in readers.items():
            if r.channels > 1:
                mixed.append(
                    f"{r.path}: has {r.channels} channels; mixed down to mono for the {name}"
                )
        info = SourceInfo(
            transport="file",
            timing_evidence=FILE_TIMING,
            description=(
                f"{readers[CALLER].path.name} (caller) + {readers[AGENT].path.name} (agent)"
            ),
            realtime=realtime,
            duration_ms=max(
                (_duration_ms(r) or 0.0) + (agent_offset_ms if n == AGENT else 0.0)
                for n, r in readers.items()
            ),
            details={
                "files": {n: str(r.path) for n, r in readers.items()},
                "agent_offset_ms": agent_offset_ms,
                "decoder": {n: r.decoder for n, r in readers.items()},
            },
        )
        for message in mixed:
            info.warn(SourceNote.MIXED_DOWN, message)
        feeds = [(r, [0 if r.channels == 1 else -1], [n]) for n, r in readers.items()]
        return cls(
            feeds, info, chunk_ms=chunk_ms, realtime=realtime, offsets_ms={AGENT: agent_offset_ms}
        )

    def _chunks(self) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        """(start sample, {channel: float chunk}) in call-clock order, until every feed ends."""
        chunkers: dict[str, _Chunker] = {}
        for _, _, names in self._feeds:
            for name in names:
                off = int(round(self._offsets.get(name, 0.0) * SAMPLE_RATE / 1000))
                chunkers[name] = _Chunker(lead_in=max(off, 0), skip=max(-off, 0))
        iters = [
            decoded(reader, picks, health)
            for (reader, picks, _), health in zip(self._feeds, self._health, strict=True)
        ]
        names = [n for _, _, ns in self._feeds for n in ns]
        done = [False] * len(iters)
        pos = 0
        while True:
            # Decode until every channel can fill a chunk, or its file has ended.
            for k, it in enumerate(iters):
                feed_names = self._feeds[k][2]
                while not done[k] and any(
                    chunkers[n].available() < self._chunk for n in feed_names
                ):
                    try:
                        arrays = next(it)
                    except StopIteration:
                        done[k] = True
                        break
                    for n, arr in zip(feed_names, arrays, strict=True):
                        chunkers[n].add(arr)
            if all(done) and all(chunkers[n].available() == 0 for n in names):
                break
            chunks = {n: chunkers[n].take(self._chunk) for n in names}
            yield pos, {n: c for n, c in chunks.items() if len(c)}
            pos += self._chunk
        self._report(chunkers)

    def _report(self, chunkers: dict[str, _Chunker]) -> None:
        for (reader, _, names), health in zip(self._feeds, self._health, strict=True):
            self._report_file(reader, names, health)
        lengths = {n: c.total for n, c in chunkers.items()}
        if len(self._feeds) > 1:
            diff_ms = abs(lengths[CALLER] - lengths[AGENT]) * 1000 / SAMPLE_RATE
            if diff_ms > MISMATCH_WARN_MS:
                shorter = min(lengths, key=lengths.get)
                self.info.warn(
                    SourceNote.LENGTHS_DIFFER,
                    f"channel lengths differ by {diff_ms:.0f} ms; the {shorter} channel was "
                    "padded with silence",
                )
        # Where each channel's sound ends (a stereo file's short channel is padded with
        # digital silence): one that ends long before the other is missing most of the call.
        heard = self._audible_ms()
        shorter, longer = sorted(heard, key=heard.get)
        gap = heard[longer] - heard[shorter]
        # (A channel with no sound at all is the pipeline's "no speech found".)
        if gap > SHORT_CHANNEL_MS and 0 < heard[shorter] < SHORT_SHARE * heard[longer]:
            self.info.degrade(
                SourceNote.CHANNEL_SHORT,
                f"the {shorter} channel is {gap / 1000:.1f} s shorter than the {longer} channel "
                f"(its sound ends at {heard[shorter] / 1000:.1f} s of "
                f"{heard[longer] / 1000:.1f} s): most of the call is missing from it",
            )
        self.info.duration_ms = max(lengths.values()) * 1000 / SAMPLE_RATE

    def _audible_ms(self) -> dict[str, float]:
        """Call time at which each channel's last sound ends."""
        out = {}
        for (reader, _, names), health in zip(self._feeds, self._health, strict=True):
            for name, col in zip(names, health.columns, strict=True):
                out[name] = self._offsets.get(name, 0.0) + col.last_sound * 1000 / reader.rate
        return out

    def _report_file(self, reader: AudioReader, names: list[str], health: Health) -> None:
        where = f"{reader.path}"
        if reader.truncated:
            self.info.warn(
                SourceNote.TRUNCATED,
                f"{where}: audio ends early, decoding stopped ({reader.truncated}); "
                "replayed what was readable",
            )
            self.info.degrade(SourceNote.TRUNCATED, f"{where} is truncated")
        if health.samples == 0:
            raise UnusableRecording("contains no audio samples (zero-length audio)", path=where)
        if health.nan == health.samples:
            raise UnusableRecording(
                "every sample is NaN or infinite: there is no audio", path=where
            )
        if health.nan:
            self.info.degrade(
                SourceNote.NAN_SAMPLES,
                f"{where}: {health.nan} NaN/inf samples replaced by silence "
                f"({health.nan / health.samples:.1%} of the file)",
            )
        declared = reader.declared_frames
        got = health.samples // max(reader.channels, 1)
        if declared and got < declared * 0.99:
            self.info.degrade(
                SourceNote.CUT_OFF,
                f"{where}: its header declares {declared / reader.rate:.1f} s of audio but the "
                f"data stops at {got / reader.rate:.1f} s (the file was cut off)",
            )
        elif reader.unended:
            self.info.degrade(
                SourceNote.CUT_OFF,
                f"{where}: its Ogg stream has no end mark, the data stops at "
                f"{got / reader.rate:.1f} s (the file was cut off, or its writer never finished)",
            )
        share = health.clipped / health.samples
        if share > CLIP_WARN_SHARE:
            self.info.warn(
                SourceNote.CLIPPED,
                f"{where}: {share:.1%} of samples are clipped; ASR and boundaries may suffer",
            )
        if reader.rate < MIN_RATE:
            self.info.warn(
                SourceNote.LOW_RATE,
                f"{where}: sampled at {reader.rate} Hz, below the 8 kHz telephone band; speech "
                f"above {reader.rate // 2} Hz is missing, so turns and words are unreliable",
            )
        for name, col in zip(names, health.columns, strict=True):
            if col.offset:
                done = (
                    "removed before the VAD"
                    if col.removing
                    else "left as recorded, as a live call hears it: the channel also holds "
                    "digital silence, which has none (a recording played into a call)"
                )
                self.info.warn(
                    SourceNote.DC_OFFSET,
                    f"{where}: the {name} channel has a DC offset of {col.dc:+.3f} (full "
                    f"scale 1), {done}",
                )
            hum = col.hum_hz()
            if hum:
                self.info.warn(
                    SourceNote.MAINS_HUM,
                    f"{where}: the {name} channel has a {hum[0]} Hz mains hum "
                    f"({20 * np.log10(hum[1]):.0f} dBFS), filtered out before the VAD",
                )

    async def frames(self) -> AsyncIterator[PcmFrame]:
        loop = asyncio.get_running_loop()
        origin = loop.time()
        for pos, chunks in self._chunks():
            if self._stop is not None:
                total = f" of {self.info.duration_ms / 1000:.1f} s" if self.info.duration_ms else ""
                self.info.degrade(
                    SourceNote.STOPPED,
                    f"{self._stop}: the replay stopped at {pos / SAMPLE_RATE:.1f} s{total}",
                )
                return
            if self._realtime:
                due = origin + pos / SAMPLE_RATE
                delay = due - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
            now = loop.time()
            for name, chunk in chunks.items():
                yield PcmFrame(name, pos, to_int16(chunk), received_at=now)
            if not self._realtime:
                await asyncio.sleep(0)  # let ASR results and sinks run between chunks


def _duration_ms(reader: AudioReader) -> float | None:
    return reader.frames * 1000.0 / reader.rate if reader.frames else None
