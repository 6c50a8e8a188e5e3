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
  ``backchannel_at`` ``early`` at EARLY_MS, ``mid`` half-way through that line's voiced extent;
  ``barge_in_on`` / ``backchannel_on`` PHRASE_LAG_MS after where the phrase ends in that line
  (by its share of the line's text).
- A barge-in cuts the agent's current line at barge-in start + ``yield_ms`` (5 ms fade, then
  re-trimmed to the last voiced sample before the cut) unless ``yield_ms`` is null.
  Backchannels cut only an agent line with ``backchannel_yield_ms`` (a false yield, as at a
  barge-in); they must start before the agent's line (as finally placed) ends.
- Agent lines start ``latency_ms`` after the call goes quiet (so after a barge-in, after the
  barge-in line ends), or ``talk_over_ms`` before the end of the caller line just before.
- A line may not start before the same speaker's previous clip ends: that is an InputError
  naming the line, never a silent shift.

Then, optionally, pink noise per channel at ``snr_db`` and a telephone channel (8 kHz, G.712
band 300-3400 Hz, G.711 mu-law through ffmpeg's codec), resampled back to ``sample_rate``.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import soundfile as sf

from turnscope.actors.caller import speech as tts
from turnscope.actors.caller.acoustics import record as acoustics_record
from turnscope.actors.caller.conditions import pink_noise, telephone_channel
from turnscope.actors.caller.placement import Renderer
from turnscope.actors.caller.scenario import Kind, Scenario
from turnscope.actors.caller.scenario_contract import scenario_task
from turnscope.actors.caller.synth_acoustics import placed_caller
from turnscope.errors import InputError, OutputError
from turnscope.jsonio import check_output, native_path, write_json

Speaker = Literal["caller", "agent"]
TAIL_MS = 1000  # silence after the last clip, so the last turn's end is inside the file
PEAK_LIMIT = 0.99


@dataclass(frozen=True)
class PlacedLine:
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
    utterances: list[PlacedLine]
    settings: dict[str, Any]
    task: dict[str, Any] | None = None
    # The caller's pauses inside its lines (pauses.py): {line, start_ms, end_ms}, exact.
    pauses: list[dict[str, Any]] = field(default_factory=list)

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
            "pauses": self.pauses,
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


def _joined(utterances: list[PlacedLine], speaker: Speaker) -> str:
    return " ".join(u.text for u in utterances if u.speaker == speaker and u.text)


def _voiced_mask(n: int, utterances: list[PlacedLine], speaker: Speaker) -> np.ndarray:
    mask = np.zeros(n, dtype=bool)
    for u in utterances:
        if u.speaker == speaker:
            mask[u.start : u.end] = True
    return mask


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
    if scenario.dtmf_lines:
        raise InputError(
            f"script[{scenario.dtmf_lines[0]}] is a dtmf line: key presses exist only on a "
            "phone-line call (turnscope call ws://... --transport twilio); synth renders speech",
            path=scenario.source,
        )
    if seed < 0:
        raise InputError(f"--seed must be 0 or more, not {seed}")
    for side, voice in (("caller", caller_voice), ("agent", agent_voice)):
        if voice is not None:
            try:
                tts.check_voice(voice)
            except InputError as exc:
                raise InputError(f"--{side}-voice: {exc}") from None
    r = Renderer(scenario, {"caller": caller_voice, "agent": agent_voice}, sample_rate)
    for i, line in enumerate(scenario.script):
        r.place(i, line)
    r.check_backchannels()

    utterances = sorted(
        (
            PlacedLine(
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

    sent = placed_caller(scenario, r.clips, n, sample_rate)  # caller.acoustics, as sent live
    record = acoustics_record(scenario) if sent is None else sent.record  # dysfluency alone too
    if sent is not None:
        clean["caller"] = sent.speech
    mixed = {side: x.copy() for side, x in clean.items()}
    if sent is not None:
        mixed["caller"] = sent.channel
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
            **({} if record is None else {"acoustics": record}),
        },
        task=scenario_task(scenario),  # resolving its suite is scoring's job
        pauses=[
            {
                "line": c.line,
                "start_ms": _ms(c.start + a, sample_rate),
                "end_ms": _ms(c.start + b, sample_rate),
            }
            for c in r.clips
            for a, b in r.pauses.get(c.line, ())
        ],
    )


def _write_wav(path: Path, audio: np.ndarray, rate: int) -> None:
    """16-bit WAV beside ``path``, then renamed over it: only ever over a regular file, and
    under any locale (the name as the file system's bytes)."""
    check_output(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        sf.write(native_path(tmp), audio, rate, subtype="PCM_16", format="WAV")
        os.replace(tmp, path)
    except (OSError, sf.LibsndfileError) as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise OutputError(exc if isinstance(exc, OSError) else OSError(str(exc)), path) from None


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
    stereo = np.stack([call.caller, call.agent], axis=1)
    for name, audio in (("call", stereo), ("caller", call.caller), ("agent", call.agent)):
        _write_wav(paths[name], audio, sr)
    write_json(paths["truth"], call.truth())
    write_json(paths["reference"], call.reference())
    return paths
