"""What the reference agent says and how it behaves: its lines and behaviour knobs (the models
``turnscope agent`` and the demo validate), built from a scenario's agent side or a file, and
the prompts' audio."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from turnscope.actors.agent.into import IntoLine, lines_into
from turnscope.actors.agent.pauses import answered_pauses
from turnscope.actors.agent.talk_over import OverCaller, over_caller
from turnscope.actors.caller.fields import Voice
from turnscope.actors.caller.scenario import Scenario
from turnscope.actors.caller.speech import load_clip, speak
from turnscope.errors import InputError

__all__ = ["AgentBehaviour", "AgentLine", "prompt_audio"]

Ms = Annotated[int, Field(ge=0)]


class AgentLine(BaseModel):
    """One prompt, with optional per-prompt overrides of the behaviour."""

    model_config = ConfigDict(extra="forbid")
    text: str
    audio: Path | None = None
    latency_ms: Ms | None = None
    talk_over_ms: Ms | None = None
    yield_ms: Ms | None = None
    ignore_barge_in: bool = False
    # Said after the agent line before it, no caller turn between ("One moment please." and
    # then the answer): spoken its latency after that line ends, not after the caller's next
    # turn (which would answer each later caller line with the reply meant for the one before).
    follows_agent: bool = False
    # The caller lines the script puts into this one, in order: a caller speaking over it is
    # taken for the next of them (a backchannel it talks on through, as a synthetic call does,
    # unless backchannel_yield_ms: then it stops that long on, a false yield).
    into: list[IntoLine] = Field(default_factory=list)
    backchannel_yield_ms: Ms | None = None
    # The planned pauses (ms) of the caller line this one answers: an end of turn before they
    # have all gone by is a pause, waited through (pauses.py) ...
    caller_pauses: list[Ms] = Field(default_factory=list)
    # ... unless this line takes the floor this long into the first of them.
    at_pause_ms: Ms | None = None
    # Said this long before the end of the caller's line before it (talk_over.py).
    over_caller: OverCaller | None = None


class AgentBehaviour(BaseModel):
    """How the reference agent behaves (all times in ms)."""

    model_config = ConfigDict(extra="forbid")
    lines: list[AgentLine] = Field(min_length=1)
    greet: bool = True  # speak the first prompt as soon as the call starts
    greet_delay_ms: Ms = 500
    voice: Voice = "en-gb"  # espeak-ng's name, piper:joe-us or piper:PATH.onnx
    rate_wpm: int | None = None
    latency_ms: Ms = 600  # from the end of the caller's speech to the start of the reply
    talk_over_ms: Ms | None = None  # reply this long after the caller STARTS (talking over)
    yield_ms: Ms | None = 250  # stop this long after a caller barge-in starts; None: ignore
    never_answer: bool = False
    hangup_after_s: float | None = None  # close the call this long after it started
    silent_after_s: float | None = None  # stop sending audio (media dies, call stays up)
    # Lose every Nth outgoing frame in transit (WebRTC: its RTP packet; a phone line: its
    # media message).
    drop_every: int | None = Field(default=None, ge=2)
    # Send every Nth RTP packet after the swap_behind ones that follow it (WebRTC): on the
    # wire, 1 is neighbours swapped, more is that many packets late.
    swap_every: int | None = Field(default=None, ge=2)
    swap_behind: int = Field(default=1, ge=1)
    dtx: bool = False  # WebRTC: leave digital silence unsent, as a DTX sender does
    # Lose them only in the agent's pauses, well away from its speech (WebRTC): a loss that
    # moves nothing the caller measures.
    drop_in_pauses: bool = False
    end_of_turn_ms: Ms = 400  # the agent's own endpointing silence
    # The scenario it was made from (from_scenario): its caller lines, as talk-overs need them.
    _scenario: Scenario | None = PrivateAttr(default=None)

    @property
    def scenario(self) -> Scenario | None:
        """The scenario this behaviour speaks the agent side of, if it was made from one."""
        return self._scenario

    @classmethod
    def from_scenario(cls, scenario: Scenario, **overrides: Any) -> AgentBehaviour:
        """The agent side of a scripted call: its lines, voice, latency and yield behaviour."""
        lines = [
            AgentLine(
                text=line.text,
                audio=line.audio,  # the scenario resolved it against its own folder
                latency_ms=line.latency_ms,
                yield_ms=line.yield_ms,
                ignore_barge_in="yield_ms" in line.model_fields_set and line.yield_ms is None,
                follows_agent=k > 0
                and scenario.script[k - 1].speaker == "agent"
                and scenario.script[k - 1].at_pause_ms is None
                and scenario.rows_said_together,
                into=lines_into(scenario, k),
                backchannel_yield_ms=line.backchannel_yield_ms,
                caller_pauses=answered_pauses(scenario, k),
                at_pause_ms=line.at_pause_ms,
                over_caller=over_caller(scenario, k),
            )
            for k, line in enumerate(scenario.script)
            if line.speaker == "agent"
        ]
        if not lines:
            raise InputError(
                "has no agent line: the reference agent speaks a scenario's agent lines",
                path=scenario.source,
                fix="add `- agent: TEXT` lines where it answers, or call your own agent with "
                "it: turnscope call URL --scenario FILE",
            )
        data: dict[str, Any] = {
            "lines": lines,
            "greet": scenario.script[0].speaker == "agent",
            "voice": scenario.agent.voice,
            "rate_wpm": scenario.agent.rate_wpm,
            "latency_ms": scenario.agent.latency_ms,
            "yield_ms": scenario.agent.yield_ms,
        }
        data.update(overrides)
        behaviour = cls.model_validate(data)
        behaviour._scenario = scenario
        return behaviour


def prompt_audio(behaviour: AgentBehaviour) -> list[np.ndarray]:
    """Every prompt's audio at 16 kHz: its recording, or its text spoken in the agent's voice
    (cached per process: `turnscope agent` speaks them once as it starts, so a neural voice's
    load and a voice that cannot speak are met then, not by the first caller)."""
    return [
        load_clip(line.audio, 16000)
        if line.audio is not None
        else speak(line.text, voice=behaviour.voice, rate_wpm=behaviour.rate_wpm)
        for line in behaviour.lines
    ]
