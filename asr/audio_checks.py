"""What is odd about a channel's audio as the pipeline hears it, said as warnings: digital
silence where it means lost audio, a loud constant background; and two channels that hold the
same audio (a mono mix given as both parties), which no turn-taking score can be read from.

``AudioChecks`` is fed every frame of one channel (a few numpy reductions per frame: the zero
runs and a 10 ms energy envelope) and says at the end what a user should know before trusting
the boundaries measured on it. ``channels_alike`` compares two channels' envelopes. What
decoding a file finds (NaN samples, clipping, a DC offset, a mains hum) the file source says
itself (capture/file/health.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum, StrEnum
from pathlib import Path

import numpy as np

from turnscope.capture.frames import SAMPLE_RATE
from turnscope.reasons import Findings

_SILENCE_S = 2.0  # a run of exact zeros at least this long, between sounds
# Inside one of the channel's own turns (same-speaker pauses are shorter than the assembly's
# merge gap, 1 s) half a second of exact zeros is no pause: audio was lost or the reply stalled.
_IN_TURN_S = 0.5
_LOUD_DB = -35.0  # a background median above this is loud
_LEAD_S = 60.0  # digital silence this long before a channel's first sound is no call starting
# A 500 ms block of sound right after one of exact zeros whose 10 ms levels keep within this of
# their quietest (speech spreads 12-50 dB, the caller's noise beds and line noise 3-6 dB) is a
# noise floor coming on: a line switching its noise on and off, comfort noise in bursts.
_STEADY_DB = 8.0
_SWITCH_BLOCKS = 50  # 10 ms blocks: 500 ms, the endpointer's noise-floor block
# The loudest moments of a channel's audio (99th percentile of 10 ms levels) this close over its
# background: the background is as loud as the quieter speech (pink noise 3 dB under the speech:
# 11.6 dB; 6 dB under: 14.4; the accuracy corpus's 10 dB calls: 15-21).
_LOW_SNR_DB = 12.0

BLOCK = SAMPLE_RATE // 100  # the envelope's block: 10 ms
MAX_LAG_MS = 150.0  # one channel a copy of the other delayed by up to this is caught
ALIKE = 0.9  # envelope correlation from which two channels are one recording
_MIN_SOUND_S = 1.0  # each channel needs this much sound before it is compared


class AudioNote(StrEnum):
    """What the checks warn about a channel's audio, as counted (the words are the message)."""

    ALL_SILENT = "digital_silence_whole_call"  # nothing but exact zeros
    SILENCE_RUN = "digital_silence"  # a long run of exact zeros (a recording from elsewhere)
    SILENCE_IN_TURN = "digital_silence_in_turn"  # exact zeros inside the party's own turn
    LOUD_BACKGROUND = "loud_background"
    LONG_LEAD = "digital_silence_lead"  # minutes of exact zeros before the first sound
    NOISE_SWITCHES = "noise_switches_on"  # a steady noise floor comes on after exact zeros
    LOW_SNR = "background_near_speech"  # the background within a few dB of the speech


class ChannelsAlike(str, Enum):
    """Why two channels cannot be two parties of a call (result.json says the code)."""

    SAME_AUDIO = "same_audio"  # the same signal on both (a mono mix, one file given twice)
    DELAYED_COPY = "delayed_copy"  # one channel is the other, a few ms later


@dataclass(frozen=True)
class Alike:
    """Two channels found to hold one recording: the code, how alike, and the delay."""

    code: ChannelsAlike
    correlation: float
    lag_ms: float  # the agent channel behind the caller's by this much (negative: ahead)

    def to_dict(self) -> dict[str, object]:
        """As result.json's ``source.details.channels_alike`` says it."""
        return {"code": self.code.value, "correlation": self.correlation, "lag_ms": self.lag_ms}

    def message(self, files: str = "") -> str:
        what = (
            "hold the same audio"
            if self.code is ChannelsAlike.SAME_AUDIO
            else f"hold the same audio, one {abs(self.lag_ms):.0f} ms behind the other"
        )
        where = f" ({files})" if files else ""
        return (
            f"not scored: the caller and agent channels{where} {what} (envelope correlation "
            f"{self.correlation:.2f}), so there is no turn-taking to measure: a mono recording "
            "or a mixed-down stereo file; record each party on its own channel (dual-channel "
            "recording) and replay that"
        )


@dataclass
class _Run:
    start: int = 0
    length: int = 0


class _Envelope:
    """Energy per 10 ms block on the call clock, in one array grown as the call goes (8 bytes per
    10 ms: 2.9 MB an hour)."""

    def __init__(self) -> None:
        self._energy = np.zeros(0)
        self._blocks = 0

    def add(self, start: int, pcm: np.ndarray) -> None:
        x = pcm.astype(np.float32)
        offset = start % BLOCK
        if not offset and not len(x) % BLOCK:  # the usual frame: whole blocks
            x = x.reshape(-1, BLOCK)
            energy = np.einsum("ij,ij->i", x, x)
        else:
            energy = np.bincount((np.arange(len(x)) + offset) // BLOCK, weights=x * x)
        first = start // BLOCK
        end = first + len(energy)
        if end > len(self._energy):
            grown = np.zeros(max(end, 2 * len(self._energy), 1024))
            grown[: self._blocks] = self._energy[: self._blocks]
            self._energy = grown
        self._energy[first:end] += energy
        self._blocks = max(self._blocks, end)

    def rms(self) -> np.ndarray:
        """RMS per block (int16 units), zeros where no audio came."""
        return np.sqrt(self._energy[: self._blocks] / BLOCK)


class AudioChecks:
    """Accumulates one channel's audio statistics frame by frame. Digital silence counts between
    sounds only: before the first, a call is starting; after the last, it has ended."""

    def __init__(self, channel: str, *, envelope: bool = True) -> None:
        self.channel = channel
        self._heard = False
        self._zeros = _Run()
        self._runs: list[_Run] = []  # the closed runs of zeros between sounds, long enough
        self._samples = 0
        self._lead = 0  # samples of exact zeros before the first sound
        self._switches = _Switches()
        # Kept for ``channels_alike`` and the background's level against the speech (replays);
        # a live call's channels need none.
        self.envelope = _Envelope() if envelope else None

    def add(self, start: int, pcm: np.ndarray) -> None:
        """One frame of int16 PCM starting at call-clock sample ``start``."""
        if not len(pcm):
            return
        self._samples = max(self._samples, start + len(pcm))
        if self.envelope is not None:
            self.envelope.add(start, pcm)
        nonzero = np.flatnonzero(pcm)
        self._switches.add(pcm, bool(len(nonzero)))
        lead = int(nonzero[0]) if len(nonzero) else len(pcm)  # zeros before the first sound
        run = self._zeros
        if lead and not run.length:
            run.start = start
        run.length += lead
        if not len(nonzero):
            return
        self._close(run)
        if not self._heard:
            self._lead = start + lead
        self._heard = True
        tail = len(pcm) - 1 - int(nonzero[-1])
        self._zeros = _Run(start + len(pcm) - tail, tail)

    def _close(self, run: _Run) -> None:
        # Silence before the first sound is how calls start; only silence after it counts.
        if self._heard and run.length >= _IN_TURN_S * SAMPLE_RATE:
            self._runs.append(_Run(run.start, run.length))

    def problems(
        self,
        background_db: float | None = None,
        *,
        turns: Sequence[tuple[float, float]] | None = None,
    ) -> list[str]:
        """``findings``' messages."""
        return self.findings(background_db, turns=turns).warnings

    def findings(
        self,
        background_db: float | None = None,
        *,
        turns: Sequence[tuple[float, float]] | None = None,
    ) -> Findings:
        """Warnings about this channel's audio (none when nothing was odd). ``background_db`` is
        the endpointer's background level, when known. ``turns``: the channel's own turns
        (start_ms, end_ms) where exact zeros between them are how the party is idle (a live
        agent sends zeros while it listens; turnscope's recordings keep them): then only zeros
        inside a turn are warned about. A channel of nothing but zeros always is."""
        out = Findings()
        ch = f"the {self.channel} channel"
        if not self._heard and self._samples >= _SILENCE_S * SAMPLE_RATE:
            out.warn(
                AudioNote.ALL_SILENT,
                f"{ch} holds only digital silence (exact zeros) for the whole call "
                f"({self._samples / SAMPLE_RATE:.1f} s): a muted line or a dead audio path?",
            )
        if turns is None:
            longest = max(self._runs, key=lambda r: r.length, default=None)
            if longest is not None and longest.length >= _SILENCE_S * SAMPLE_RATE:
                out.warn(
                    AudioNote.SILENCE_RUN,
                    f"{ch} holds {longest.length / SAMPLE_RATE:.1f} s of digital silence "
                    f"(exact zeros) from {longest.start / SAMPLE_RATE:.1f} s: lost audio, a "
                    "muted line, or a recorder that writes a quiet party as zeros (pipecat's "
                    "AudioBufferProcessor does)?",
                )
        else:
            inside = [r for r in self._runs if _within(r, turns)]
            if inside:
                worst = max(inside, key=lambda r: r.length)
                out.warn(
                    AudioNote.SILENCE_IN_TURN,
                    f"{ch} drops to digital silence (exact zeros) inside its own turn: "
                    f"{worst.length / SAMPLE_RATE:.1f} s from {worst.start / SAMPLE_RATE:.1f} s"
                    f"{f' ({len(inside)} such gaps)' if len(inside) > 1 else ''}: lost audio or "
                    "a reply that stalled?",
                )
        self._odd_floor(out, ch, background_db)
        if background_db is not None and background_db > _LOUD_DB:
            out.warn(
                AudioNote.LOUD_BACKGROUND,
                f"{ch} has a loud constant background ({background_db:.0f} dBFS): quiet speech "
                "under it is not heard, boundaries may be late or early",
            )
        return out

    def _odd_floor(self, out: Findings, ch: str, background_db: float | None) -> None:
        """Warnings about a floor the boundaries are judged against that is not the usual one:
        minutes of zeros before the first sound, a noise that comes on after zeros, a
        background as loud as the quieter speech."""
        if self._heard and self._lead >= _LEAD_S * SAMPLE_RATE:
            out.warn(
                AudioNote.LONG_LEAD,
                f"{ch} is digital silence (exact zeros) for its first "
                f"{self._lead / SAMPLE_RATE:.0f} s, then sound: a recording with a long silent "
                "lead-in, or audio that started late? Timings are from the start of the file",
            )
        sw = self._switches
        if sw.count:
            out.warn(
                AudioNote.NOISE_SWITCHES,
                f"{ch}'s noise comes on after digital silence {sw.count} time(s) (first at "
                f"{sw.first / SAMPLE_RATE:.1f} s): a line that switches its noise on and off "
                "(a codec's silence suppression, comfort noise in bursts); a turn starting in "
                "the first half second of the noise may start early",
            )
        if background_db is None or self.envelope is None:
            return
        rms = self.envelope.rms()
        sound = rms[rms > 0]
        if len(sound) < _SWITCH_BLOCKS:
            return
        loud = 20.0 * np.log10(float(np.percentile(sound, 99)) / 32768.0)
        if loud - background_db < _LOW_SNR_DB:
            out.warn(
                AudioNote.LOW_SNR,
                f"{ch}'s background ({background_db:.0f} dBFS) is within "
                f"{loud - background_db:.0f} dB of its loudest moments: quieter speech is under "
                "it, so turn edges there are where the speech rises out of the background",
            )


class _Switches:
    """Counts a steady noise floor coming back on straight after a block of exact zeros, per
    500 ms block on the stream (10 ms levels; a frame split across blocks counts whole). The
    channel's first sound is not counted: a call opening in digital silence is ordinary."""

    def __init__(self) -> None:
        self.count = 0
        self.first = 0  # sample index of the first
        self._pos = 0
        self._silent_block = False  # the last full block was exact zeros
        self._levels: list[float] = []  # this block's 10 ms mean squares
        self._zeros = True  # this block is exact zeros so far
        self._heard = False  # a block before this one held sound

    def add(self, pcm: np.ndarray, sound: bool) -> None:
        n = len(pcm) // BLOCK * BLOCK
        if n:
            x = pcm[:n].astype(np.float32).reshape(-1, BLOCK)
            self._levels += np.einsum("ij,ij->i", x, x).tolist()
        self._zeros = self._zeros and not sound
        self._pos += len(pcm)
        if len(self._levels) < _SWITCH_BLOCKS:
            return
        levels, self._levels = self._levels, []
        if self._heard and self._silent_block and not self._zeros and min(levels) > 0:
            quiet, median = min(levels), sorted(levels)[len(levels) // 2]
            if 10.0 * np.log10(median / quiet) <= _STEADY_DB:
                self.first = self.first if self.count else self._pos - len(levels) * BLOCK
                self.count += 1
        self._heard = self._heard or not self._zeros
        self._silent_block, self._zeros = self._zeros, True


def _within(run: _Run, turns: Iterable[tuple[float, float]]) -> bool:
    start_ms = run.start * 1000.0 / SAMPLE_RATE
    end_ms = (run.start + run.length) * 1000.0 / SAMPLE_RATE
    return any(s <= start_ms and end_ms <= e for s, e in turns)


def channels_alike(caller: AudioChecks, agent: AudioChecks) -> Alike | None:
    """``Alike`` when the two channels' 10 ms envelopes correlate at ``ALIKE`` or more at some
    delay within ``MAX_LAG_MS``; None for two parties (or a channel with too little sound to
    tell). Two parties' envelopes are near zero or negative: each talks while the other is
    quiet; even a channel with the other's echo in it stays far below (benchmarks/
    channels_alike.py)."""
    if caller.envelope is None or agent.envelope is None:
        return None
    a, b = caller.envelope.rms(), agent.envelope.rms()
    n = min(len(a), len(b))
    floor = _MIN_SOUND_S * 100  # blocks
    a, b = a[:n], b[:n]
    if n < floor or min((a > 30).sum(), (b > 30).sum()) < floor:  # 30: about -60 dBFS
        return None
    max_lag = int(MAX_LAG_MS / 10)
    best, best_lag = -1.0, 0
    for lag in range(-max_lag, max_lag + 1):
        x, y = (a[: n - lag], b[lag:]) if lag >= 0 else (a[-lag:], b[: n + lag])
        r = _pearson(x, y)
        if r > best:
            best, best_lag = r, lag
    if best < ALIKE:
        return None
    code = ChannelsAlike.SAME_AUDIO if abs(best_lag) <= 1 else ChannelsAlike.DELAYED_COPY
    return Alike(code, round(best, 4), best_lag * 10.0)


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    x, y = x - x.mean(), y - y.mean()
    den = float(np.sqrt((x * x).sum() * (y * y).sum()))
    return float((x * y).sum() / den) if den > 0 else 0.0


# Files beside a recording that say turnscope wrote it: a run's bundle, a synthesized call.
_OWN_BESIDE = ("voice_artifact_manifest.json", "result.json", "truth.json")
_OWN_SUFFIXES = (".wav", ".flac")  # what turnscope writes: run bundles and `fixture add`


def own_recording(path: str | Path) -> bool:
    """A recording turnscope wrote: a run's channel (its bundle beside it), a synthesized
    call (its truth beside it) or a fixture `turnscope fixture add` made (tagged):
    its exact zeros between turns are an idle party, as on the call it came from."""
    p = Path(path)
    # synth's folder holds truth.json; a recording kept elsewhere keeps it as NAME.truth.json
    beside = (*_OWN_BESIDE, f"{p.stem}.truth.json")
    if any((p.parent / n).is_file() for n in beside):
        return True
    if p.suffix.lower() not in _OWN_SUFFIXES:
        return False  # never handed to libsndfile: its mpg123 prints to stderr on an odd MP3
    try:
        import soundfile as sf

        with sf.SoundFile(str(p)) as f:
            return "turnscope" in (f.software or "")
    except Exception:  # any file soundfile cannot open: not one of ours
        return False
