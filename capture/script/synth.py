"""Labelled test calls from scenarios: a deterministic two-channel timeline with exact truth.

Ground truth is the placement of the clips, exact by construction: each clip knows its voiced
extent (`tts.voiced_extent`, kept with 5 ms of quiet onset and decay around it, see `tts.Clip`),
and truth reports where that extent lands on the call clock. Measuring the voiced extent of the
clean channel around an utterance gives back exactly its truth times.

Timeline rules (in samples, from the script in order):

- "The call goes quiet" is the latest end of everything placed so far.
- Caller lines: ``at_ms`` starts at that call time; ``after_agent_ms`` that long after the call
  goes quiet; ``barge_in_ms`` / ``backchannel_ms`` that long after the start of the agent's
  current line (the latest agent line), which must still be talking then; ``barge_in_at`` /
  ``backchannel_at`` ``early`` at EARLY_MS, ``mid`` half-way through that line's voiced extent.
- A barge-in cuts the agent's current line at barge-in start + ``yield_ms`` (5 ms fade, then
  re-trimmed to the last voiced sample before the cut) unless ``yield_ms`` is null.
  Backchannels never cut; they must start before the agent's line (as finally placed) ends.
- Agent lines start ``latency_ms`` after the call goes quiet (so after a barge-in, after the
  barge-in line ends), or ``talk_over_ms`` before the end of the caller line just before.
- A line may not start before the same speaker's previous clip ends: that is an InputError
  naming the line, never a silent shift.

Then, optionally, pink noise per channel at ``snr_db`` and a telephone channel (8 kHz, G.712
band 300-3400 Hz, G.711 mu-law through ffmpeg's codec), resampled back to ``sample_rate``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import soundfile as sf
import soxr

from turnscope.capture.script import speech as tts
from turnscope.capture.script.scenario import Kind, Line, Scenario, task_contract
from turnscope.errors import InputError
from turnscope.jsonio import write_json

Speaker = Literal["caller", "agent"]
TAIL_MS = 1000  # silence after the last clip, so the last turn's end is inside the file
FADE_S = 0.005
PHONE_RATE = 8000
PHONE_BAND_HZ = (300.0, 3400.0)
PEAK_LIMIT = 0.99


@dataclass(frozen=True)
class Utterance:
    """One placed clip. ``start``/``end`` are sample indices on the call clock (end exclusive).

    ``text`` is what was spoken (for a cut line, the words before the cut, estimated);
    ``full_text`` the whole script line.
    """

    speaker: Speaker
    start: int
    end: int
    text: str
    full_text: str
    kind: Kind
    truncated: bool
    line: int
    voice: str | None


@dataclass
class SynthCall:
    """A rendered call: final channels, the clean speech inside them, and the ground truth."""

    scenario: str
    sample_rate: int
    caller: np.ndarray  # float32 mono, what the caller's channel carries (noise, band and all)
    agent: np.ndarray
    clean_caller: np.ndarray  # the speech alone, at the same gain as in ``caller``
    clean_agent: np.ndarray
    utterances: list[Utterance]
    settings: dict[str, Any]
    task: dict[str, Any] | None = None

    @property
    def duration_ms(self) -> float:
        return _ms(self.caller.size, self.sample_rate)

    def turns(self) -> list[dict[str, Any]]:
        """Verifier-shape turns in start-time order (backchannels are not turns)."""
        return [
            {
                "speaker": u.speaker,
                "start_ms": round(_ms(u.start, self.sample_rate)),
                "end_ms": round(_ms(u.end, self.sample_rate)),
                "text": u.text,
                "interrupt": u.kind == "barge_in",
            }
            for u in self.utterances
            if u.kind != "backchannel"
        ]

    def backchannels(self) -> list[dict[str, Any]]:
        """The caller's backchannels, shaped like turns without ``interrupt``."""
        return [
            {
                "speaker": u.speaker,
                "start_ms": round(_ms(u.start, self.sample_rate)),
                "end_ms": round(_ms(u.end, self.sample_rate)),
                "text": u.text,
            }
            for u in self.utterances
            if u.kind == "backchannel"
        ]

    def truth(self) -> dict[str, Any]:
        """The ``truth.json`` document."""
        sr = self.sample_rate
        return {
            "scenario": self.scenario,
            "sample_rate": sr,
            "duration_ms": self.duration_ms,
            "settings": self.settings,
            "task": self.task,
            "turns": self.turns(),
            "backchannels": self.backchannels(),
            "utterances": [
                {
                    "speaker": u.speaker,
                    "start_ms": _ms(u.start, sr),
                    "end_ms": _ms(u.end, sr),
                    "text": u.text,
                    "full_text": u.full_text,
                    "kind": u.kind,
                    "truncated": u.truncated,
                    "line": u.line,
                    "voice": u.voice,
                }
                for u in self.utterances
            ],
        }

    def reference(self) -> dict[str, Any]:
        """The ``reference.json`` document: each side's words in time order, and the turns."""
        return {
            "caller": _joined(self.utterances, "caller"),
            "agent": _joined(self.utterances, "agent"),
            "turns": self.turns(),
        }


def _ms(samples: int, sr: int) -> float:
    return round(samples * 1000 / sr, 4)


def _joined(utterances: list[Utterance], speaker: Speaker) -> str:
    return " ".join(u.text for u in utterances if u.speaker == speaker and u.text)


@dataclass
class _Placed:
    speaker: Speaker
    start: int  # the voiced start on the call clock
    clip: tts.Clip
    line: int
    text: str
    voice: str | None
    peak_rms: float
    full_size: int  # voiced samples before any cut
    truncated: bool = False

    @property
    def size(self) -> int:
        return self.clip.end - self.clip.start

    @property
    def end(self) -> int:
        return self.start + self.size


@dataclass(frozen=True)
class _Voice:
    voice: str
    rate_wpm: int | None
    pitch: int | None


def _where(i: int, key: str | None = None) -> str:
    return f"script[{i}]" + (f".{key}" if key else "")


def _fail(scenario: Scenario, where: str, message: str) -> InputError:
    return InputError(f"{where}: {message}", path=scenario.source)


class _Renderer:
    def __init__(self, scenario: Scenario, voices: dict[Speaker, str | None], sr: int):
        self.scenario = scenario
        self.voices = voices  # a command-line voice per side replaces every voice on that side
        self.sr = sr
        self.clips: list[_Placed] = []

    def voice_of(self, line: Line) -> _Voice:
        spec = self.scenario.caller if line.speaker == "caller" else self.scenario.agent
        voice = self.voices[line.speaker] or line.voice or spec.voice
        return _Voice(voice, spec.rate_wpm, spec.pitch)

    def audio_of(self, i: int, line: Line) -> tuple[tts.Clip, str | None]:
        try:
            if line.audio is not None:
                return tts.read_clip(line.audio, self.sr), None
            v = self.voice_of(line)
            clip = tts.synthesize(
                line.text, voice=v.voice, rate_wpm=v.rate_wpm, pitch=v.pitch, sample_rate=self.sr
            )
            return clip, v.voice
        except InputError as exc:
            raise _fail(self.scenario, _where(i), str(exc)) from None

    def quiet(self) -> int:
        return max((c.end for c in self.clips), default=0)

    def current_agent(self) -> _Placed:
        return next(c for c in reversed(self.clips) if c.speaker == "agent")

    def ms(self, value: int) -> int:
        return round(value * self.sr / 1000)

    def start_of(self, i: int, line: Line) -> int:
        if line.speaker == "agent":
            if line.talk_over_ms is not None:
                return self.clips[-1].end - self.ms(line.talk_over_ms)
            latency = line.latency_ms
            if latency is None:
                latency = self.scenario.agent.latency_ms
            return self.quiet() + self.ms(latency)
        if line.kind == "line":
            key, value = line.trigger
            if key == "at_ms":
                return self.ms(value)
            return self.quiet() + self.ms(value)
        agent = self.current_agent()
        key, value = line.placed_trigger(agent.size * 1000 / self.sr)
        start = agent.start + self.ms(value)
        if start >= agent.end:
            raise _fail(
                self.scenario,
                _where(i, key),
                f"{value} ms is past the end of the agent's line "
                f"(script[{agent.line}] lasts {agent.size * 1000 // self.sr} ms "
                "with this voice)",
            )
        return start

    def yield_ms(self, agent: _Placed) -> int | None:
        line = self.scenario.script[agent.line]
        if "yield_ms" in line.model_fields_set:
            return line.yield_ms
        return self.scenario.agent.yield_ms

    def cut(self, agent: _Placed, at: int, i: int) -> None:
        """Cut ``agent`` at call sample ``at``: fade out over 5 ms, re-trim to the voiced end
        (measured against the whole line's peak)."""
        if at >= agent.end:
            return  # the agent finished before it would have yielded
        clip = agent.clip
        n = clip.start + max(0, at - agent.start)  # the cut as an index into clip.audio
        y = np.array(clip.audio[:n], dtype=np.float32)
        fade = min(round(FADE_S * self.sr), n)
        if fade:
            y[n - fade :] *= np.linspace(1.0, 0.0, fade, dtype=np.float32)
        _, end = tts.voiced_extent(y, self.sr, peak_rms=agent.peak_rms)
        if end <= clip.start:
            raise _fail(
                self.scenario,
                _where(i),
                f"the barge-in cuts script[{agent.line}] before any of its speech",
            )
        keep = min(n, end + round(FADE_S * self.sr))  # the decay, as `tts.Clip` keeps it
        agent.clip = tts.Clip(y[:keep], clip.start, end)
        agent.truncated = True

    def place(self, i: int, line: Line) -> None:
        clip, voice = self.audio_of(i, line)
        size = clip.end - clip.start
        start = self.start_of(i, line)
        if start < 0:
            raise _fail(self.scenario, _where(i), "would start before the call")
        for other in self.clips:
            same = other.speaker == line.speaker
            if same and other.start < start + size and other.end > start:
                raise _fail(
                    self.scenario,
                    _where(i),
                    f"the {line.speaker} line would start at {start * 1000 // self.sr} ms, "
                    f"while the {line.speaker}'s script[{other.line}] is still speaking "
                    f"({other.start * 1000 // self.sr}-{other.end * 1000 // self.sr} ms); "
                    "give it a later trigger",
                )
        if line.kind == "barge_in":
            agent = self.current_agent()
            yield_ms = self.yield_ms(agent)
            if yield_ms is not None:
                self.cut(agent, start + self.ms(yield_ms), i)
        peak = tts.peak_window_rms(clip.audio, self.sr)
        self.clips.append(_Placed(line.speaker, start, clip, i, line.text, voice, peak, size))

    def check_backchannels(self) -> None:
        for k, clip in enumerate(self.clips):
            if self.scenario.script[clip.line].kind != "backchannel":
                continue
            agent = next(c for c in reversed(self.clips[:k]) if c.speaker == "agent")
            if clip.start >= agent.end:
                raise _fail(
                    self.scenario,
                    _where(clip.line, "backchannel_ms"),
                    f"a barge-in cut script[{agent.line}] before this backchannel starts",
                )

    def spoken_text(self, clip: _Placed) -> str:
        """The words spoken before a cut: a word counts once the cut is past its middle.

        Word times come from speaking each prefix of the line alone with the same voice, a
        close estimate (espeak-ng has no word timing on its command line).
        """
        if not clip.truncated:
            return clip.text
        words = clip.text.split()
        have = clip.size
        line = self.scenario.script[clip.line]
        if line.audio is not None:  # a recording: words spread evenly over its characters
            share = have / max(1, clip.full_size)
            total = sum(len(w) + 1 for w in words)
            kept, used = [], 0
            for w in words:
                if used + (len(w) + 1) / 2 > share * total:
                    break
                kept.append(w)
                used += len(w) + 1
            return " ".join(kept)
        v = self.voice_of(line)

        def length(k: int) -> int:
            if k == 0:
                return 0
            text = " ".join(words[:k])
            said = tts.synthesize(
                text, voice=v.voice, rate_wpm=v.rate_wpm, pitch=v.pitch, sample_rate=self.sr
            )
            return said.end - said.start

        lo, hi = 0, len(words)  # the answer k: the largest with mid(k) <= have
        while lo < hi:
            k = (lo + hi + 1) // 2
            if (length(k - 1) + length(k)) / 2 <= have:
                lo = k
            else:
                hi = k - 1
        return " ".join(words[:lo])


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


def _voiced_mask(n: int, utterances: list[Utterance], speaker: Speaker) -> np.ndarray:
    mask = np.zeros(n, dtype=bool)
    for u in utterances:
        if u.speaker == speaker:
            mask[u.start : u.end] = True
    return mask


def _bandpass_taps(rate: int, low: float, high: float) -> np.ndarray:
    # Kaiser-windowed sinc, about 80 dB down 100 Hz outside the band. ffmpeg's highpass/lowpass
    # are 2-pole and would leave audible energy above 3.6 kHz.
    n = 401
    t = np.arange(n) - (n - 1) / 2
    edges = (low - 50.0, high + 50.0)  # -6 dB points: the transition is centred outside the band
    taps = (2 * edges[1] / rate) * np.sinc(2 * edges[1] / rate * t) - (2 * edges[0] / rate) * (
        np.sinc(2 * edges[0] / rate * t)
    )
    return taps * np.kaiser(n, 7.857)


def _mulaw_roundtrip(x: np.ndarray, rate: int) -> np.ndarray:
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
    taps = _bandpass_taps(PHONE_RATE, *PHONE_BAND_HZ)
    y = np.convolve(y, taps, mode="same")
    y = np.convolve(_mulaw_roundtrip(y, PHONE_RATE), taps, mode="same")
    y = soxr.resample(y, PHONE_RATE, sample_rate, quality="HQ")
    out = np.zeros(len(x), dtype=np.float32)
    out[: min(len(x), y.size)] = np.clip(y[: len(x)], -1.0, 1.0)
    return out


def render(
    scenario: Scenario,
    *,
    caller_voice: str | None = None,
    agent_voice: str | None = None,
    snr_db: float | None = None,
    telephone: bool = False,
    seed: int = 0,
    sample_rate: int = 16000,
) -> SynthCall:
    """Synthesize ``scenario`` into a two-channel call with exact ground truth.

    ``caller_voice``/``agent_voice`` replace every voice of that side (defaults and per-line).
    ``snr_db`` adds independent pink noise per channel (seeded by ``seed``) so that the speech
    power over that channel's voiced parts is ``snr_db`` above the noise power; ``telephone``
    then passes both channels through a mu-law telephone channel. Ground truth always comes
    from the clean clips' placement, so it is identical across these settings.
    """
    if snr_db is not None and not np.isfinite(snr_db):
        raise InputError(f"--snr-db must be a finite number of dB, not {snr_db}")
    if seed < 0:
        raise InputError(f"--seed must be 0 or more, not {seed}")
    for side, voice in (("caller", caller_voice), ("agent", agent_voice)):
        if voice is not None:
            try:
                tts.check_voice(voice)
            except InputError as exc:
                raise InputError(f"--{side}-voice: {exc}") from None
    r = _Renderer(scenario, {"caller": caller_voice, "agent": agent_voice}, sample_rate)
    for i, line in enumerate(scenario.script):
        r.place(i, line)
    r.check_backchannels()

    utterances = sorted(
        (
            Utterance(
                speaker=c.speaker,
                start=c.start,
                end=c.end,
                text=r.spoken_text(c),
                full_text=c.text,
                kind=scenario.script[c.line].kind,
                truncated=c.truncated,
                line=c.line,
                voice=c.voice,
            )
            for c in r.clips
        ),
        key=lambda u: (u.start, u.line),
    )
    n = r.quiet() + r.ms(TAIL_MS)
    clean = {"caller": np.zeros(n, np.float64), "agent": np.zeros(n, np.float64)}
    for c in r.clips:
        at = c.start - c.clip.start  # where clip.audio begins: its quiet onset, then the speech
        skip = max(0, -at)  # an onset before the call start is dropped
        clean[c.speaker][at + skip : at + c.clip.audio.size] += c.clip.audio[skip:]

    mixed = {side: x.copy() for side, x in clean.items()}
    if snr_db is not None:
        rngs = np.random.default_rng(seed).spawn(2)
        for rng, side in zip(rngs, ("caller", "agent"), strict=True):
            voiced = clean[side][_voiced_mask(n, utterances, side)]
            if voiced.size == 0:
                continue  # a silent channel has no speech power to set the noise against
            speech_power = float(np.mean(voiced**2))
            noise_rms = np.sqrt(speech_power / 10 ** (snr_db / 10))
            mixed[side] += noise_rms * pink_noise(n, rng)
    # One gain for both channels and their clean speech keeps SNR and channel balance exact.
    peak = max(float(np.max(np.abs(x))) for x in mixed.values())
    gain = PEAK_LIMIT / peak if peak > PEAK_LIMIT else 1.0
    for side in mixed:
        clean[side] *= gain
        mixed[side] *= gain
        if telephone:
            mixed[side] = telephone_channel(mixed[side], sample_rate)

    default_voices = {
        side: (override or spec.voice)
        for side, override, spec in (
            ("caller", caller_voice, scenario.caller),
            ("agent", agent_voice, scenario.agent),
        )
    }
    return SynthCall(
        scenario=scenario.name,
        sample_rate=sample_rate,
        caller=mixed["caller"].astype(np.float32),
        agent=mixed["agent"].astype(np.float32),
        clean_caller=clean["caller"].astype(np.float32),
        clean_agent=clean["agent"].astype(np.float32),
        utterances=utterances,
        settings={
            "voices": default_voices,
            "snr_db": snr_db,
            "telephone": telephone,
            "seed": seed,
        },
        task=task_contract(scenario),
    )


def write_call(call: SynthCall, outdir: str | Path) -> dict[str, Path]:
    """Write call.wav (stereo: left caller, right agent), caller.wav, agent.wav (16-bit PCM),
    truth.json and reference.json into ``outdir``; returns ``{name: path}``."""
    d = Path(outdir)
    if d.exists() and not d.is_dir():
        raise InputError("exists and is not a directory", path=d, fix="choose another -o")
    d.mkdir(parents=True, exist_ok=True)
    sr = call.sample_rate
    paths = {
        "call": d / "call.wav",
        "caller": d / "caller.wav",
        "agent": d / "agent.wav",
        "truth": d / "truth.json",
        "reference": d / "reference.json",
    }
    sf.write(paths["call"], np.stack([call.caller, call.agent], axis=1), sr, subtype="PCM_16")
    sf.write(paths["caller"], call.caller, sr, subtype="PCM_16")
    sf.write(paths["agent"], call.agent, sr, subtype="PCM_16")
    write_json(paths["truth"], call.truth())
    write_json(paths["reference"], call.reference())
    return paths
