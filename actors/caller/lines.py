"""The scripted caller's lines: their audio (spoken before the call starts, so synthesis never
delays a barge-in) and the record of what happened to each."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import CancelledError
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from turnscope.actors.caller.acoustics import as_sent, prepare
from turnscope.actors.caller.dysfluency import spoken_text
from turnscope.actors.caller.pauses import joined
from turnscope.actors.caller.reactive import spoken_texts
from turnscope.actors.caller.scenario import Line, Scenario
from turnscope.actors.caller.speech import load_clip, speak
from turnscope.actors.caller.voices.default import caller_voice
from turnscope.capture.frames import SAMPLE_RATE

if TYPE_CHECKING:
    from turnscope.actors.caller.phrase import PhraseHit

CallerLine = tuple[int, Line, np.ndarray]  # script index, the line, its audio
Status = Literal["spoken", "not spoken"]


def caller_lines(
    scenario: Scenario, *, stop: threading.Event | None = None, also: Sequence[str] = ()
) -> list[CallerLine]:
    """Every caller line of the script with its audio (espeak-ng runs here: call it off the
    event loop when other calls are live). ``stop``, once set, ends the work before the next
    line (CancelledError): a run cancelled while a long script is spoken stops speaking it.
    ``also``: more the caller will say in its own voice, spoken now too (``said``): a recorded
    LLM caller's lines, replayed (their synthesis would delay each past its recorded time)."""
    out: list[CallerLine] = []
    for i, line in enumerate(scenario.script):
        if stop is not None and stop.is_set():
            raise CancelledError(f"stopped before script[{i}]")
        if line.speaker == "caller":
            out.append((i, line, as_sent(scenario, line, line_audio(scenario, line))))
    extra = [(text, None) for text in also]
    say_ahead(scenario, [*spoken_texts(scenario), *extra], stop=stop)  # branches, facts too
    prepare(scenario, [audio for _, _, audio in out])  # the caller's background, made now
    return out


# What a reactive caller may say besides its lines, spoken once per process (a load run's
# calls share them): (text, voice, rate, pitch, acoustics) -> audio.
_said: dict[tuple[Any, ...], np.ndarray] = {}


def say_ahead(
    scenario: Scenario,
    texts: Sequence[tuple[str, str | None]],
    *,
    stop: threading.Event | None = None,
) -> None:
    """Speak each (text, voice) now, as ``said`` keeps it: saying it on the call costs nothing.
    ``stop`` as ``caller_lines``'s."""
    for text, voice in texts:
        if stop is not None and stop.is_set():
            raise CancelledError("stopped before what the caller may say")
        said(scenario, text, voice)


def said(scenario: Scenario, text: str, voice: str | None = None) -> np.ndarray:
    """``text`` in the caller's voice (``voice`` for this one), spoken once per process."""
    key = said_key(scenario, text, voice)
    if key not in _said:
        x = speak(text, voice=key[1], rate_wpm=key[2], pitch=key[3])
        _said[key] = as_sent(scenario, None, x, text)  # through the caller's line
    return _said[key]


def is_said(scenario: Scenario, text: str, voice: str | None = None) -> bool:
    """Whether ``said`` has ``text`` ready (no synthesis on the call's event loop)."""
    return said_key(scenario, text, voice) in _said


def said_key(scenario: Scenario, text: str, voice: str | None) -> tuple[Any, ...]:
    spec = scenario.caller
    return (text, voice or caller_voice(scenario), spec.rate_wpm, spec.pitch, spec.acoustics)


def line_audio(scenario: Scenario, line: Line) -> np.ndarray:
    """The audio of a caller line: its recording (the scenario resolved its path), or its text
    spoken with espeak-ng."""
    if not line.spoken:
        return np.zeros(0, np.float32)  # key presses: no audio
    if line.audio is not None:
        return load_clip(line.audio, SAMPLE_RATE)
    spec = scenario.caller
    if line.pauses:  # spoken in pieces, joined by the pauses' silence
        return line_pauses(scenario, line)[0]
    return speak(  # as the caller says it (dysfluency.py)
        spoken_text(scenario, line),
        voice=line.voice or caller_voice(scenario),
        rate_wpm=spec.rate_wpm,
        pitch=spec.pitch,
    )


def line_pauses(scenario: Scenario, line: Line) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """A caller line with ``pauses``: its audio and each pause's samples in it (``pauses.py``;
    synthesis is cached, so asking again after the line went out costs nothing)."""
    if not line.pauses:
        return np.zeros(0, np.float32), []
    spec = scenario.caller
    voice = line.voice or caller_voice(scenario)
    return joined(line, lambda t: speak(t, voice=voice, rate_wpm=spec.rate_wpm, pitch=spec.pitch))


def quote(text: str, limit: int = 40) -> str:
    """A line's text as warnings name it (shortened)."""
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


@dataclass
class LineRecord:
    """What happened to one caller line."""

    line: int
    text: str
    kind: str
    trigger: str
    trigger_ms: int | None
    placement: str | None = None
    status: Status = "not spoken"
    spoken_as: str | None = None  # barge_in | backchannel | line (an unexercised barge-in: line)
    into_agent_speech: bool | None = None
    agent_turn_ms: float | None = None  # length of the agent turn a barge-in aimed at
    agent_start_ms: float | None = None  # where the caller heard that turn begin (call ms)
    waited_for_agent: bool | None = None  # None: the line did not wait for the agent
    agent_answered: bool | None = None
    queued_ms: float | None = None
    sent: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    phrase: PhraseHit | None = None  # a barge_in_on / backchannel_on line's phrase, once heard

    @classmethod
    def unspoken(cls, index: int, line: Line) -> LineRecord:
        return cls(index, line.text, line.kind, *line.trigger, placement=line.placement)

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if v is not None and v != []}
        if self.phrase is not None:
            d["phrase"] = self.phrase.to_dict(self.sent)
        return d
