"""An agent line said over the end of the caller's line before it (a scenario's
``talk_over_ms``): the reference agent starts it that long before the caller line will end.

Live, the end is not heard until it has come, so the agent makes the caller's line itself as it
starts (``line_audio``, as the caller makes it: its recording, or its text, pauses and
dysfluency in its voice, offline like the agent's own prompts) and, when it hears the line
begin, starts its own that line's length on, less ``talk_over_ms``. Before, it took a scenario's
``talk_over_ms`` as ``--talk-over-ms`` takes it, after the caller STARTS: the shipped talk-over
scenario's first reply began 3.0 s before its caller line's end, where the synthetic call
overlaps 0.7 s.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from turnscope.actors.caller.lines import line_audio
from turnscope.actors.caller.scenario import Scenario
from turnscope.capture.frames import SAMPLE_RATE

__all__ = ["OverCaller", "line_ms", "over_caller"]


class OverCaller(BaseModel):
    """The caller line (its script index) an agent line talks over the end of, and how long
    before that end it starts."""

    model_config = ConfigDict(extra="forbid")
    before_end_ms: Annotated[int, Field(gt=0)]
    line: Annotated[int, Field(ge=0)]


def over_caller(scenario: Scenario, k: int) -> OverCaller | None:
    """Agent line ``k``'s talk-over of the caller line just before it, if it has one."""
    line = scenario.script[k]
    if line.talk_over_ms is None or k == 0 or scenario.script[k - 1].speaker != "caller":
        return None
    return OverCaller(before_end_ms=line.talk_over_ms, line=k - 1)


def line_ms(scenario: Scenario, over: OverCaller) -> float:
    """How long the caller line lasts from its first sound to its last, as the caller says it."""
    return line_audio(scenario, scenario.script[over.line]).size * 1000 / SAMPLE_RATE
