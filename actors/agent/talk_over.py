"""An agent line said over the end of the caller's line before it (a scenario's
``talk_over_ms``): the reference agent starts it that long before the caller line will end.

Live, the end is not heard until it has come, so the agent speaks the caller's line itself as
it starts (the same text, voice and pauses, offline like its own prompts) and, when it hears
the line begin, starts its own that line's length on, less ``talk_over_ms``. Before, it took a
scenario's ``talk_over_ms`` as ``--talk-over-ms`` takes it, after the caller STARTS: the shipped
talk-over scenario's first reply began 3.0 s before its caller line's end, where the synthetic
call overlaps 0.7 s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from turnscope.actors.caller.dysfluency import spoken_text
from turnscope.actors.caller.fields import Voice
from turnscope.actors.caller.scenario import Scenario
from turnscope.actors.caller.speech import load_clip, speak
from turnscope.actors.caller.voices.default import caller_voice
from turnscope.capture.frames import SAMPLE_RATE

__all__ = ["OverCaller", "line_ms", "over_caller"]


class OverCaller(BaseModel):
    """The caller line an agent line talks over the end of, as the caller says it."""

    model_config = ConfigDict(extra="forbid")
    before_end_ms: Annotated[int, Field(gt=0)]
    text: str
    audio: Path | None = None
    voice: Voice
    rate_wpm: int | None = None
    pitch: int | None = None
    pauses_ms: int = 0


def over_caller(scenario: Scenario, k: int) -> OverCaller | None:
    """Agent line ``k``'s talk-over of the caller line just before it, if it has one."""
    line = scenario.script[k]
    if line.talk_over_ms is None or k == 0 or scenario.script[k - 1].speaker != "caller":
        return None
    said = scenario.script[k - 1]
    return OverCaller(
        before_end_ms=line.talk_over_ms,
        text=spoken_text(scenario, said),
        audio=said.audio,
        voice=said.voice or caller_voice(scenario),
        rate_wpm=scenario.caller.rate_wpm,
        pitch=scenario.caller.pitch,
        pauses_ms=sum(p.ms for p in said.pauses or ()),
    )


def line_ms(over: OverCaller) -> float:
    """How long the caller line lasts from its first sound to its last (its pauses included;
    each piece between them trimmed as the caller trims it, so a little longer than this)."""
    if over.audio is not None:
        samples = load_clip(over.audio, SAMPLE_RATE).size
    else:
        samples = speak(over.text, voice=over.voice, rate_wpm=over.rate_wpm, pitch=over.pitch).size
    return samples * 1000 / SAMPLE_RATE + over.pauses_ms
