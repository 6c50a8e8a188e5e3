"""Placing a scenario's lines on one timeline, by the rules ``synth`` documents: which sample
each clip starts at, where a barge-in cuts the agent, what a cut line still said."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from turnscope.actors.caller import speech as tts
from turnscope.actors.caller.dysfluency import spoken_text
from turnscope.actors.caller.pauses import rendered
from turnscope.actors.caller.phrase import words_through
from turnscope.actors.caller.scenario import CALLER_TRIGGERS, Line, Scenario
from turnscope.errors import InputError
from turnscope.scoring.turn_taking import YIELD_MS

Speaker = Literal["caller", "agent"]
FADE_S = 0.005
# A barge_in_on line in a rendered call starts this long after the phrase's end: about what a
# live caller's partial transcripts take to hear it (benchmarks/partials.py).
PHRASE_LAG_MS = 500


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


def _trigger_key(line: Line) -> str:
    return next(k for k in CALLER_TRIGGERS if getattr(line, k) is not None)


def _fail(scenario: Scenario, where: str, message: str) -> InputError:
    return InputError(f"{where}: {message}", path=scenario.source)


class Renderer:
    def __init__(self, scenario: Scenario, voices: dict[Speaker, str | None], sr: int):
        self.scenario = scenario
        self.voices = voices  # a command-line voice per side replaces every voice on that side
        self.sr = sr
        self.clips: list[_Placed] = []
        # A caller line's pauses: (first, end) samples from its voiced start (pauses.py).
        self.pauses: dict[int, list[tuple[int, int]]] = {}

    def voice_of(self, line: Line) -> _Voice:
        spec = self.scenario.caller if line.speaker == "caller" else self.scenario.agent
        voice = self.voices[line.speaker] or line.voice or spec.voice
        return _Voice(voice, spec.rate_wpm, spec.pitch)

    def audio_of(self, i: int, line: Line) -> tuple[tts.Clip, str | None]:
        try:
            if line.audio is not None:
                return tts.read_clip(line.audio, self.sr), None
            v = self.voice_of(line)

            def say(text: str) -> tts.Clip:
                return tts.synthesize(
                    text, voice=v.voice, rate_wpm=v.rate_wpm, pitch=v.pitch, sample_rate=self.sr
                )

            if line.pauses:
                clip, self.pauses[i] = rendered(line, say, self.sr)
                return clip, v.voice
            return say(spoken_text(self.scenario, line)), v.voice  # dysfluency.py
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
            if line.at_pause_ms is not None:  # taking the floor at the caller's first pause
                return self.clips[-1].start + self.pauses[i - 1][0][0] + self.ms(line.at_pause_ms)
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
        if line.phrase is not None:
            value = self.phrase_ms(i, key, line.phrase, agent)
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

    def phrase_ms(self, i: int, key: str, phrase: str, agent: _Placed) -> int:
        """How far into ``agent``'s line its words reach ``phrase`` (by its share of the text),
        plus a live caller's typical lag in hearing it."""
        text = self.scenario.script[agent.line].text
        words = text.split()
        k = words_through(words, phrase)
        if k is None:
            raise _fail(self.scenario, _where(i, key),
                        f"script[{agent.line}] does not say {phrase!r}")  # fmt: skip
        share = len(" ".join(words[:k])) / max(1, len(text))
        return round(share * agent.size * 1000 / self.sr) + PHRASE_LAG_MS

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
        if line.kind == "backchannel":  # an agent line may take "mm-hmm" for a barge-in
            agent = self.current_agent()
            stop = self.scenario.script[agent.line].backchannel_yield_ms
            if stop is not None:
                self.cut(agent, start + self.ms(stop), i)
        peak = tts.peak_window_rms(clip.audio, self.sr)
        said = spoken_text(self.scenario, line)  # a dysfluent caller's words as spoken
        self.clips.append(_Placed(line.speaker, start, clip, i, said, voice, peak, size))

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
            if self.scenario.script[agent.line].backchannel_yield_ms is not None:
                self.check_false_yield(clip, agent)
                continue
            # An agent going quiet within the yield window after it would look like a false yield:
            # "kept talking" needs the agent's turn to outlast it by that much.
            if clip.end + self.ms(YIELD_MS) >= agent.end:
                gap = (agent.end - clip.end) * 1000 // self.sr
                when = f"{gap} ms after" if gap >= 0 else f"{-gap} ms before"
                raise _fail(
                    self.scenario,
                    _where(clip.line, _trigger_key(self.scenario.script[clip.line])),
                    f"script[{agent.line}] ends {when} this backchannel ends (it must go on "
                    f"more than {YIELD_MS} ms, else the "
                    "agent finishing looks like yielding to it): the agent's turn is too short "
                    "to hold it; place it earlier or lengthen the agent line",
                )

    def check_false_yield(self, clip: _Placed, agent: _Placed) -> None:
        """A planned false yield must be one: the agent line cut, and silent by the yield
        window's end (else the metrics would call it talking on)."""
        key = _where(agent.line, "backchannel_yield_ms")
        if not agent.truncated:
            raise _fail(self.scenario, key, f"script[{agent.line}] ends before it would stop "
                        f"for the backchannel script[{clip.line}]: no false yield to make; give "
                        "less, or place the backchannel earlier")  # fmt: skip
        if agent.end > clip.end + self.ms(YIELD_MS):
            late = (agent.end - clip.end) * 1000 // self.sr
            raise _fail(self.scenario, key, f"the agent stops {late} ms after the backchannel "
                        f"script[{clip.line}] ends, past the {YIELD_MS} ms yield window (that "
                        "is talking on, not a yield): give less")  # fmt: skip

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
