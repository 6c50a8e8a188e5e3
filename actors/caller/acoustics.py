"""The caller's acoustics on a live call: what each line's speech goes through before the call
(room, level, clipping, a line's own noise, the telephone line), and what the caller's channel
carries all along (the background bed, the room's tails, packet loss and jitter).

Before the call (``caller_lines``, off the event loop), per line: the speech and a line's own
``noise`` (``snr_db`` under the speech, both as the microphone hears them over the line) in the
room (``reverb``: `room.py`; the noise only as long as the speech, so after it only the room's
decay of both remains), louder or quieter (``level_db``), clipped (``clip_at``), and the
``telephone`` line (`codecs.py`).
The result keeps the speech's length: it is what goes out between the line's first and last
sample, so the caller's truth (the send record) stays the speech's own extent; what the room and
the codec add after it (``Spoken.tail``) goes out after it, outside the record. The bed
(`noise.py`) is set ``snr_db`` (default 15) under the caller's speech (the RMS of all its lines
as sent) and put through the call's telephone line once.

On the call (`Bed`: a WebRTC or phone-line caller track's ``ClipQueue.bed``, a sound device
player's ``bed`` mixed per block at the device rate; `synth_acoustics.py` mixes the same over a
synthetic call's caller channel): every frame gets the bed's samples for its place on the call
clock (a 12 s loop), the tails due, and loses the samples of each 20 ms
packet lost: by chance ``loss``, or arriving later than ``jitter_buffer_ms`` with delays
exponential of mean ``jitter_ms`` (seeded). A lost packet loses the caller's speech, not the
background: the receiver fills it with the line's noise, as comfort noise does (digital zeros
in a noisy line would read as a noise floor of nothing to an endpointer). Only slicing and
adding happen there: never synthesis or a codec.
"""

from __future__ import annotations

import functools
import zlib
from typing import TYPE_CHECKING, Any

import numpy as np
import soxr

from turnscope.actors.caller import codecs, noise, room
from turnscope.actors.caller.acoustic_keys import Acoustics, LineAcoustics, file_stamp
from turnscope.actors.caller.dysfluency import spoken_text
from turnscope.capture.frames import SAMPLE_RATE, to_int16

if TYPE_CHECKING:
    from turnscope.actors.caller.scenario import Line, Scenario

DEFAULT_SNR_DB = 15.0
NOMINAL_LEVEL = 0.05  # -26 dBFS, the nominal speech level of a digital telephone line
PACKET_MS = 20
LOSS_PLAN_S = 4 * 3600  # packets planned ahead (beyond: none lost); a call is at most an hour
SEAM_S = 0.25  # a loop's codec pass starts this far before it: no seam from the codec's state


class Spoken(np.ndarray):
    """A caller line's audio as sent (float32, the speech's own extent), with ``tail``: what the
    room and the line add after the speech stops (sent after it; `capture/player.py`)."""

    tail: np.ndarray | None

    def __new__(cls, speech: np.ndarray, tail: np.ndarray | None) -> Spoken:
        obj = np.asarray(speech, dtype=np.float32).view(cls)
        obj.tail = tail if tail is not None and tail.size else None
        return obj

    def __array_finalize__(self, obj: Any) -> None:
        self.tail = None  # a slice or a copy of the speech is no longer followed by its tail

    def __reduce__(self) -> tuple[Any, ...]:  # pickled with its tail (a worker process's lines)
        return (Spoken, (np.asarray(self), self.tail))


def line_acoustics(scenario: Scenario, line: Line | None) -> LineAcoustics | None:
    """The call's acoustics with ``line``'s own keys over them (None: a plain line)."""
    call = scenario.caller.acoustics
    own = getattr(line, "acoustics", None) if line is not None else None
    if own is None:
        return call
    if call is None:
        return own
    keys = {k: getattr(own, k) for k in own.model_fields_set}
    if "noise" not in own.model_fields_set:  # the call's noise is its bed, not the line's
        keys.update(noise=None, snr_db=None)
    base = {k: getattr(call, k) for k in LineAcoustics.model_fields}
    return LineAcoustics.model_construct(**{**base, "noise": None, "snr_db": None, **keys})


def seed_of(scenario: Scenario) -> int:
    acoustics = scenario.caller.acoustics
    return 0 if acoustics is None else acoustics.seed


def _snr_db(a: LineAcoustics) -> float:
    return a.snr_db if a.snr_db is not None else DEFAULT_SNR_DB


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64)))) if x.size else 0.0


def process(x: np.ndarray, a: LineAcoustics | None, seed: int, key: str = "") -> np.ndarray:
    """``x`` (16 kHz float, the speech's voiced extent) as sent: a `Spoken` of its length with
    its tail; ``x`` itself when nothing applies. ``key`` (the line's text) seeds a line's noise."""
    if a is None or x.size == 0:
        return x
    speech = np.asarray(x, dtype=np.float64)
    tail = np.zeros(0)
    ir = room.impulse_response(a.reverb, seed) if a.reverb is not None else None
    if ir is not None:
        y, t = room.reverberate(speech, ir)
        speech, tail = y.astype(np.float64), t.astype(np.float64)
    if a.noise is not None:  # this line's own noise, under this line's speech only
        own = np.resize(noise.bed(a.noise, seed + zlib.crc32(key.encode("utf-8"))), x.size)
        own_tail = np.zeros(tail.size)
        if ir is not None:  # in the room too: after the speech only the room's decay of it
            y, t = room.reverberate(own, ir)
            own, own_tail = y.astype(np.float64), t.astype(np.float64)
        # snr_db at the microphone: both measured over the line's extent, in the room.
        level = _rms(speech) / max(_rms(own), 1e-12) * 10 ** (-_snr_db(a) / 20)
        speech, tail = speech + own * level, tail + own_tail * level
    gain = 10 ** ((a.level_db or 0.0) / 20)
    speech, tail = speech * gain, tail * gain
    if a.clip_at is not None:
        speech, tail = np.clip(speech, -a.clip_at, a.clip_at), np.clip(tail, -a.clip_at, a.clip_at)
    if a.telephone is not None:
        # The codec's own ringing after the speech joins the tail (up to 40 ms more).
        pad = np.zeros(SAMPLE_RATE // 25)
        both = codecs.telephone(np.concatenate([speech, tail, pad]), a.telephone)
        speech, tail = both[: speech.size], both[speech.size :]
    return Spoken(np.clip(speech, -1.0, 1.0), np.clip(tail, -1.0, 1.0).astype(np.float32))


def speech_level(clips: list[np.ndarray]) -> float:
    """The caller's speech level as sent: the RMS over all its lines' audio (a caller with no
    line yet, an LLM's: a nominal -26 dBFS)."""
    energy = sum(float(np.sum(np.square(c, dtype=np.float64))) for c in clips)
    size = sum(c.size for c in clips)
    return float(np.sqrt(energy / size)) if size and energy > 0 else NOMINAL_LEVEL


def bed_loop(a: Acoustics, level: float, rate: int) -> np.ndarray | None:
    """The call's background as int16 samples at ``rate``: its loop, at its SNR under
    ``level``, through the call's telephone line (cached: a load run's calls share it; a noise
    file edited since is read again)."""
    return _bed_loop(a, level, rate, file_stamp(a.noise))


@functools.lru_cache(maxsize=32)
def _bed_loop(
    a: Acoustics, level: float, rate: int, _stamp: tuple[int, int] | None
) -> np.ndarray | None:
    if a.noise is None or level <= 0:
        return None
    x = noise.bed(a.noise, a.seed).astype(np.float64)
    x = x * level * 10 ** (-_snr_db(a) / 20)
    if a.telephone is not None:
        seam = round(SEAM_S * SAMPLE_RATE)
        x = codecs.telephone(np.concatenate([x[-seam:], x, x[:seam]]), a.telephone)[seam:-seam]
    if rate != SAMPLE_RATE:
        seam = round(SEAM_S * SAMPLE_RATE)
        y = soxr.resample(np.concatenate([x[-seam:], x, x[:seam]]), SAMPLE_RATE, rate, "HQ")
        edge = round(SEAM_S * rate)
        x = y[edge : edge + round(x.size * rate / SAMPLE_RATE)]
    out = to_int16(x)
    out.flags.writeable = False
    return out


@functools.lru_cache(maxsize=32)
def lost_packets(a: Acoustics) -> np.ndarray | None:
    """Per 20 ms packet of the call, whether it is lost (by chance, or too late for the jitter
    buffer); None when none is."""
    if a.loss <= 0 and a.jitter_ms <= 0:
        return None
    rng = np.random.default_rng([a.seed, 29])
    n = LOSS_PLAN_S * 1000 // PACKET_MS
    lost = rng.random(n) < a.loss
    if a.jitter_ms > 0:
        lost |= rng.exponential(a.jitter_ms, n) > a.jitter_buffer_ms
    lost.flags.writeable = False
    return lost


class Bed:
    """What the caller's channel carries besides the clips, mixed into each frame at ``rate``:
    a ``ClipQueue``'s (`capture/player.py` calls ``mix`` and ``after``, positions on the 16 kHz
    call clock), a sound device's (`capture/device/playback.py` calls ``mix_at`` and
    ``after_at``, positions in samples at ``rate`` from the call's start: any rate), a synthetic
    call's (`synth_acoustics.py`, the same)."""

    def __init__(self, loop: np.ndarray | None, lost: np.ndarray | None, rate: int) -> None:
        self.loop = loop
        self.lost = lost
        self.rate = rate
        self.step = max(1, SAMPLE_RATE // rate)  # call-clock samples per sample (mix, after)
        self.packet = rate * PACKET_MS // 1000
        self.tails: list[tuple[np.ndarray, int]] = []  # (int16 samples, first sample at rate)
        self.lost_count = 0
        self.packets = 0
        self.snr_db_sent: float | None = None  # the bed under the lines as both go out

    def after(self, tail: np.ndarray, at: int) -> None:
        """``tail`` (int16 at ``rate``) goes out from call-clock sample ``at``."""
        self.after_at(tail, at // self.step)

    def after_at(self, tail: np.ndarray, first: int) -> None:
        """``tail`` (int16 at ``rate``) goes out from sample ``first`` (at ``rate``)."""
        self.tails.append((tail, first))

    def mix(self, frame: np.ndarray, position: int) -> np.ndarray:
        """``frame`` (int16, its first sample at call-clock ``position``) with the bed."""
        return self.mix_at(frame, position // self.step)

    def mix_at(self, frame: np.ndarray, first: int) -> np.ndarray:
        """``frame`` (int16 at ``rate``, its first sample ``first`` samples into the call)
        with the bed."""
        n = frame.size
        if self.loop is None and not self.tails and self.lost is None:
            return frame
        out = frame.astype(np.int32)
        kept = []
        for tail, start in self.tails:
            lo, hi = max(first, start), min(first + n, start + tail.size)
            if lo < hi:
                out[lo - first : hi - first] += tail[lo - start : hi - start]
            if start + tail.size > first + n:
                kept.append((tail, start))
        self.tails = kept
        if self.lost is not None:
            for k in range(first // self.packet, (first + n - 1) // self.packet + 1):
                if first <= k * self.packet:  # counted once, at its first sample
                    self.packets += 1
                if k < self.lost.size and self.lost[k]:
                    lo, hi = max(first, k * self.packet), min(first + n, (k + 1) * self.packet)
                    out[lo - first : hi - first] = 0
                    self.lost_count += first <= k * self.packet
        if self.loop is not None:  # the background goes on through a lost packet (comfort noise)
            i = first % self.loop.size
            if i + n <= self.loop.size:
                out += self.loop[i : i + n]
            else:
                out += self.loop.take(np.arange(i, i + n), mode="wrap")
        return np.clip(out, -32768, 32767).astype(np.int16)


def needs_bed(scenario: Scenario) -> bool:
    """Whether the caller's channel carries anything besides the clips."""
    a = scenario.caller.acoustics
    lines = any(getattr(line, "acoustics", None) is not None for line in scenario.script)
    return a is not None or lines


def attach(scenario: Scenario, track: Any, clips: list[np.ndarray]) -> Bed | None:
    """Put the scenario's bed on the caller track: a paced sender's queue (WebRTC, a phone
    line) or a sound device's player (mixed in its callback at the device's rate). ``clips``:
    the caller's lines as sent (their level sets the bed's)."""
    if not needs_bed(scenario):
        return None
    target = getattr(track, "clips", None)  # a ClipQueue
    if target is None and hasattr(track, "bed"):
        target = track  # a sound device: DevicePlayer mixes it per block
    rate = getattr(target, "rate", None)
    if target is None or not isinstance(rate, int):
        return None
    bed = make_bed(scenario, clips, rate)
    target.bed = bed
    return bed


def make_bed(scenario: Scenario, clips: list[np.ndarray], rate: int) -> Bed:
    """The scenario's bed at ``rate`` for a caller whose lines as sent are ``clips``."""
    a = scenario.caller.acoustics or Acoustics()
    said = [c for c in clips if c.size]
    level = round(speech_level(said), 6)
    bed = Bed(bed_loop(a, level, rate), lost_packets(a), rate)
    if bed.loop is not None and said:  # a caller with no line yet: only a nominal level
        # snr_db is set at the microphone; the line's band and codec take more of a noise
        # (its low end) than of speech. Both went through them apart: this is on the line.
        sent = _rms(bed.loop.astype(np.float64) / 32767)
        bed.snr_db_sent = round(20 * np.log10(level / sent), 1) if sent > 0 else None
    return bed


def prepare(scenario: Scenario, clips: list[np.ndarray]) -> None:
    """Make the bed before the call (cached), so attaching it on the call's loop costs nothing."""
    a = scenario.caller.acoustics
    if a is None:
        return
    level = round(speech_level([c for c in clips if c.size]), 6)
    for rate in (SAMPLE_RATE, 8000):
        bed_loop(a, level, rate)
    lost_packets(a)


def _keys(a: LineAcoustics, **dump: bool) -> dict[str, Any]:
    """``a``'s keys as given, and the SNR a noise was mixed at when it took the default."""
    out = a.model_dump(mode="json", **dump)
    if a.noise is not None:
        out.setdefault("snr_db", DEFAULT_SNR_DB)
    return out


def dysfluency_record(scenario: Scenario) -> dict[str, Any] | None:
    """The dysfluency settings the caller's lines used (``call``: ``caller.dysfluency``; each
    line's own by its index), each with its seed: all a run needs to say the same words."""
    call = getattr(scenario.caller, "dysfluency", None)
    lines = {
        str(i): d.model_dump(mode="json")  # whole: a line's own replaces the call's, seed too
        for i, line in enumerate(scenario.script)
        if (d := getattr(line, "dysfluency", None)) is not None
    }
    if call is None and not lines:
        return None
    out: dict[str, Any] = {} if call is None else {"call": call.model_dump(mode="json")}
    return {**out, "lines": lines} if lines else out


def record(scenario: Scenario, bed: Bed | None = None) -> dict[str, Any] | None:
    """result.json's ``script.acoustics``: the call's and each line's keys, the seed, codecs
    this FFmpeg lacks, the packets lost, the bed's SNR as sent, the dysfluency settings and the
    lines as the caller said them; None for a plain caller."""
    said = {
        str(i): text
        for i, line in enumerate(scenario.script)
        if line.speaker == "caller" and (text := spoken_text(scenario, line)) != line.text
    }
    dysfluency = dysfluency_record(scenario)
    if not needs_bed(scenario) and not said and dysfluency is None:
        return None
    a = scenario.caller.acoustics
    out: dict[str, Any] = {"call": _keys(a, exclude_none=True) if a else {}}
    if needs_bed(scenario):  # a line's noise and room follow it too, with the call's
        out["seed"] = seed_of(scenario)
    lines = {
        str(i): _keys(line.acoustics, exclude_unset=True)
        for i, line in enumerate(scenario.script)
        if getattr(line, "acoustics", None) is not None
    }
    if lines:
        out["lines"] = lines
    given = [a, *(getattr(line, "acoustics", None) for line in scenario.script)]
    used = {x.telephone for x in given if x is not None and x.telephone is not None}
    missing = sorted(t.value for t in used if not codecs.available(t))
    if missing:
        out["codec_missing"] = missing  # the band alone stood in for them
    if dysfluency is not None:
        out["dysfluency"] = dysfluency
    if said:
        out["spoken_texts"] = said  # dysfluency: what the caller said for those lines
    if bed is not None:
        out["packets"] = {"sent": bed.packets, "lost": bed.lost_count}
        if bed.snr_db_sent is not None:
            out["snr_db_sent"] = bed.snr_db_sent  # the bed's, after the telephone line
    return out


def as_sent(scenario: Scenario, line: Line | None, audio: np.ndarray, key: str = "") -> np.ndarray:
    """A caller line's (``line`` None: a branch's or a fact's) audio as the caller's line sends
    it (see ``process``)."""
    a = line_acoustics(scenario, line)
    return process(audio, a, seed_of(scenario), key or (line.text if line is not None else ""))


def acoustics_of(scenario: Scenario, bed: Bed | None) -> dict[str, Any]:
    """``{"acoustics": record}`` for result.json's ``script`` (nothing for a plain caller)."""
    rec = record(scenario, bed)
    return {} if rec is None else {"acoustics": rec}
