"""Scenario files: a scripted two-party call (who says what, and when) for `turnscope synth`.

A scenario is YAML validated by the models below (unknown keys are errors). The script is one
ordered list of lines; each line is spoken by the caller or by the agent. Caller lines carry one
trigger saying when they start; agent lines start a latency after the call goes quiet, or
``talk_over_ms`` before the caller's end. See `capture/synth.py` for the timeline rules.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    Field,
    PrivateAttr,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from turnscope.actors.caller.acoustic_keys import Dysfluency, LineAcoustics, line_recording
from turnscope.actors.caller.fields import (  # noqa: F401 (the scenario's names, one import)
    AGENT_ONLY,
    CALLER_TRIGGERS,
    DEFAULT_THINK_MS,
    DTMF_DIGITS,
    EARLY_MS,
    MAX_LINE_CHARS,
    MAX_MS,
    PHRASE_TRIGGERS,
    AgentSpec,
    Budgets,
    CallerSpec,
    Digits,
    Keyword,
    Kind,
    Ms,
    Placement,
    TaskSpec,
    Voice,
    _Strict,
)
from turnscope.actors.caller.pauses import Pause, line_problem, scenario_problem
from turnscope.actors.caller.reactive_keys import (  # noqa: F401
    Branch,
    Condition,
    Fact,
    FactValue,
    Goal,
    Until,
)
from turnscope.actors.caller.recorded import Recorded
from turnscope.asr.normalise import normalise


class Line(_Strict):
    """One script line: exactly one of ``caller: TEXT``, ``agent: TEXT`` or ``dtmf: KEYS``.

    ``dtmf: "1#"`` is the caller pressing keys (0-9, * and #) on a phone-line call: one dtmf
    event per key, ``caller.dtmf_gap_ms`` apart, recorded in the transcript's events (not a
    spoken turn). It takes ``at_ms`` or ``after_agent_ms`` (the default) as its trigger.

    Both sides:
    - ``audio``: a recording to play instead of espeak-ng (path relative to the scenario file);
      the line's text is then its transcript.
    - ``voice``: this line's voice (as ``caller.voice``: ``en-gb``, ``piper:joe-us`` ...).

    Caller lines take at most one trigger (default ``after_agent_ms: 500``):
    - ``at_ms``: start at this time on the call clock.
    - ``after_agent_ms``: start this long after the call goes quiet (the agent's end of turn;
      after two or more agent lines in a row, the turn that says the last: agent_lines.py).
    - ``barge_in_ms``: start this long after the start of the agent's current line (a barge-in,
      ``interrupt: true`` in ground truth); the agent yields after ``yield_ms``.
    - ``barge_in_at``: ``early`` (EARLY_MS into the agent's line) or ``mid`` (half-way through
      it; live, where the running reply's length is unknown, the script's line in the agent's
      voice while the agent says the script's words, else half its typical turn so far:
      ``mid.py``): a barge-in placed to fit replies of any length.
    - ``backchannel_ms`` / ``backchannel_at``: as the barge-in ones, but the agent keeps
      talking; not a turn.
    - ``barge_in_on`` / ``backchannel_on``: a phrase; live, the moment a partial transcript of
      the agent's running turn holds it (normalised as WER is); synth places it where the phrase
      ends in the agent line's text.
    - ``reply_gap_ms``: start this long after the agent's voice stops (not the end-of-turn
      decision ``after_agent_ms`` waits for), as a recorded caller answered: a gap shorter than
      the endpointer's end-of-turn silence; the agent speaking again first restarts it.
    Live, a barge-in or backchannel whose agent turn has ended before its moment is spoken as an
    ordinary reply (not an interruption) and reported as not exercised.

    Agent lines take:
    - ``latency_ms``: start this long after the call goes quiet (overrides ``agent.latency_ms``).
    - ``talk_over_ms``: start this long BEFORE the end of the caller line just before (live,
      the reference agent too: it knows the line's length, actors/agent/talk_over.py).
    - ``yield_ms``: how this line reacts to a barge-in (overrides ``agent.yield_ms``; null keeps
      talking).
    - ``backchannel_yield_ms``: the line stops this long after a caller backchannel starts
      inside it, as if it were a barge-in (a false yield, exact in truth; default: it keeps
      talking; live, the reference agent does the same: actors/agent/into.py).
    A caller line's ``pauses`` and an agent line's ``at_pause_ms``: see ``pauses.py``.
    A caller line's ``acoustics`` / ``dysfluency``: over ``caller.acoustics`` / ``.dysfluency``
    for this line (acoustic_keys.py).
    """

    caller: str | None = None
    agent: str | None = None
    dtmf: Digits | None = None
    choose: Annotated[list[Branch], Field(min_length=1, max_length=20)] | None = None
    when: Condition | None = None
    audio: Path | None = None
    voice: Voice | None = None
    at_ms: Ms | None = None
    after_agent_ms: Ms | None = None
    barge_in_ms: Ms | None = None
    barge_in_at: Placement | None = None
    backchannel_ms: Ms | None = None
    backchannel_at: Placement | None = None
    barge_in_on: Keyword | None = None
    backchannel_on: Keyword | None = None
    reply_gap_ms: Ms | None = None
    latency_ms: Ms | None = None
    talk_over_ms: Annotated[int, Field(gt=0, le=MAX_MS)] | None = None
    yield_ms: Ms | None = None
    backchannel_yield_ms: Ms | None = None  # a synthetic agent stopping at a backchannel
    # The caller stops mid-line and goes on; an agent line may start inside it (pauses.py).
    pauses: Annotated[list[Pause], Field(min_length=1, max_length=20)] | None = None
    at_pause_ms: Ms | None = None
    acoustics: LineAcoustics | None = None
    dysfluency: Dysfluency | None = None

    @field_validator("caller", "agent")
    @classmethod
    def _line_length(cls, value: str | None) -> str | None:
        if value is not None and len(value) > MAX_LINE_CHARS:
            raise PydanticCustomError(
                "line_length",
                "a line is at most {limit} characters (about a minute of speech), this one has "
                "{n}: split it into several lines",
                {"limit": MAX_LINE_CHARS, "n": len(value)},
            )
        return value

    @field_validator("barge_in_on", "backchannel_on")
    @classmethod
    def _words(cls, value: str | None) -> str | None:
        if value is not None and not normalise(value):
            raise PydanticCustomError("phrase", "give the agent's words to wait for")
        return value

    @model_validator(mode="after")
    def _callers_acoustics(self) -> Line:
        for key in ("acoustics", "dysfluency"):
            if getattr(self, key) is not None and (self.speaker != "caller" or not self.spoken):
                raise PydanticCustomError(
                    "line_acoustics", "{key} is for a spoken caller line", {"key": key}
                )
        return self

    _audio = field_validator("audio")(line_recording)  # readable, 8 kHz or more, not silent

    @model_validator(mode="after")
    def _one_side_one_trigger(self) -> Line:
        sides = [k for k in ("caller", "agent", "dtmf", "choose") if getattr(self, k) is not None]
        if len(sides) != 1:
            raise PydanticCustomError(
                "line_speaker",
                "a line needs exactly one of caller: TEXT, agent: TEXT, dtmf: KEYS or choose: "
                "[BRANCHES]",
            )
        if self.when is not None and self.caller is None:
            raise PydanticCustomError(
                "when_option", "when: is for caller lines (a choose: has it on each branch)"
            )
        if (self.when is not None or self.choose is not None) and any(
            k in self.model_fields_set for k in CALLER_TRIGGERS if k != "after_agent_ms"
        ):
            key = "when" if self.when is not None else "choose"
            raise PydanticCustomError(
                "when_trigger",
                "{key}: decides on the agent's last turn: the line must answer it "
                "(after_agent_ms, the default), not start at a time or inside the agent's turn",
                {"key": key},
            )
        if self.choose is not None:
            if self.audio is not None:
                raise PydanticCustomError("choose_audio", "a choose: line takes no audio")
            defaults = [k for k, b in enumerate(self.choose) if b.when is None]
            if defaults and defaults[0] != len(self.choose) - 1:
                raise PydanticCustomError(
                    "choose_default",
                    "choose[{k}] has no when: it would always be taken; put the default branch "
                    "last",
                    {"k": defaults[0]},
                )
        if self.dtmf is not None:
            bad = sorted(set(self.dtmf) - set(DTMF_DIGITS))
            if not self.dtmf or bad:
                raise PydanticCustomError(
                    "dtmf_keys",
                    "dtmf: give the keys to press, 0-9, * and # (not {bad})",
                    {"bad": "".join(bad) or "nothing"},
                )
            extra = [
                k for k in self.model_fields_set if k not in ("dtmf", "at_ms", "after_agent_ms")
            ]
            if extra:
                raise PydanticCustomError(
                    "dtmf_option",
                    "{key} does not apply to a dtmf line (it takes at_ms or after_agent_ms)",
                    {"key": sorted(extra)[0]},
                )
        if not self.text.strip():
            raise PydanticCustomError("line_text", "the line's text is empty")
        given = [k for k in (*CALLER_TRIGGERS, *AGENT_ONLY) if k in self.model_fields_set]
        if self.speaker == "agent":
            wrong = [k for k in given if k in CALLER_TRIGGERS]
            if wrong:
                raise PydanticCustomError(
                    "agent_trigger",
                    "{key} is a caller trigger; agent lines take latency_ms, talk_over_ms, "
                    "yield_ms",
                    {"key": wrong[0]},
                )
            if sum(k in given for k in ("latency_ms", "talk_over_ms", "at_pause_ms")) > 1:
                raise PydanticCustomError(
                    "two_triggers", "give one of latency_ms, talk_over_ms, at_pause_ms"
                )
        else:
            wrong = [k for k in given if k in AGENT_ONLY]
            if wrong:
                raise PydanticCustomError(
                    "caller_option",
                    "{key} is for agent lines; caller lines take one of at_ms, after_agent_ms, "
                    "barge_in_ms, barge_in_at, barge_in_on, backchannel_ms, backchannel_at, "
                    "backchannel_on",
                    {"key": wrong[0]},
                )
            if len(given) > 1:
                raise PydanticCustomError(
                    "two_triggers",
                    "give one trigger per caller line, not both {a} and {b}",
                    {"a": given[0], "b": given[1]},
                )
        if problem := line_problem(self):
            raise PydanticCustomError("pauses", "{problem}", {"problem": problem})
        return self

    @property
    def speaker(self) -> Literal["caller", "agent"]:
        return "agent" if self.agent is not None else "caller"

    @property
    def text(self) -> str:
        """The line's words (a choose: line's first branch: what a rendering without a live
        agent, ``synth``, says)."""
        if self.dtmf is not None:
            return f"[dtmf {self.dtmf}]"
        if self.choose is not None:
            return self.choose[0].caller
        return self.caller if self.caller is not None else str(self.agent)

    @property
    def spoken(self) -> bool:
        """A line said aloud (a dtmf line is key presses)."""
        return self.dtmf is None

    @property
    def kind(self) -> Kind:
        """``barge_in`` or ``backchannel`` for those caller triggers, ``dtmf`` for key
        presses, else ``line``."""
        if self.dtmf is not None:
            return "dtmf"
        for kind in ("barge_in", "backchannel"):
            if any(getattr(self, f"{kind}_{k}") is not None for k in ("ms", "at", "on")):
                return kind  # type: ignore[return-value]
        return "line"

    @property
    def trigger(self) -> tuple[str, int]:
        """A caller line's trigger as ``(name, ms)``, the default filled in; a barge-in or
        backchannel is ``(barge_in_ms | backchannel_ms, its offset)`` with ``early`` resolved
        and ``mid`` as EARLY_MS (see ``into_agent_ms`` for the placement that knows the turn)."""
        return self.placed_trigger(None)

    def placed_trigger(self, agent_turn_ms: float | None) -> tuple[str, int]:
        """The trigger with ``*_at`` resolved against the agent turn's (expected) length."""
        for key in CALLER_TRIGGERS:
            value = getattr(self, key)
            if value is None:
                continue
            if key in PHRASE_TRIGGERS:
                return key, 0  # when is known only live, when the agent says it
            if key.endswith("_at"):
                return key.replace("_at", "_ms"), into_agent_ms(value, agent_turn_ms)
            return key, value
        return "after_agent_ms", DEFAULT_THINK_MS

    @property
    def placement(self) -> str | None:
        """How a barge-in or backchannel is placed: ``early``, ``mid``, ``phrase`` or
        ``fixed``."""
        if self.kind == "line":
            return None
        return self.barge_in_at or self.backchannel_at or ("phrase" if self.phrase else "fixed")

    @property
    def phrase(self) -> str | None:
        """The agent's words a ``barge_in_on`` / ``backchannel_on`` line waits for."""
        return self.barge_in_on or self.backchannel_on


def into_agent_ms(placement: Placement, agent_turn_ms: float | None) -> int:
    """How far into the agent's turn a placed barge-in or backchannel starts."""
    if placement == "mid" and agent_turn_ms:
        return max(EARLY_MS, round(agent_turn_ms / 2))
    return EARLY_MS


class Scenario(_Strict):
    """A scripted call.

    - ``name``: short name (used in ground truth and output).
    - ``description``: free text.
    - ``task``: the task contract the call is scored against (optional).
    - ``caller``, ``agent``: voices and behaviour of the two parties.
    - ``script``: the ordered lines (at least one).
    - ``facts``: what the caller knows (``order number: four two seven``): live, a question
      for a fact is answered with it, scripted or not.
    - ``goal``: what the caller wants; ``reached_when`` the agent says so.
    - ``until``: when the caller ends the call early (live calls).
    - ``recorded``: the recorded call this scenario re-drives (``scenario from-recording``).
    """

    name: Annotated[str, Field(min_length=1)]
    description: str = ""
    task: TaskSpec | None = None
    caller: CallerSpec = CallerSpec()
    agent: AgentSpec = AgentSpec()
    script: Annotated[list[Line], Field(min_length=1)]
    facts: Annotated[dict[str, FactValue], Field(default_factory=dict, max_length=100)]
    goal: Goal | None = None
    until: Until | None = None
    recorded: Recorded | None = None
    _source: Path | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _script_order(self) -> Scenario:
        problem = script_problem(self.script) or scenario_problem(self)
        if problem:
            raise PydanticCustomError("script_order", "{problem}", {"problem": problem})
        return self

    @model_validator(mode="after")
    def _goal_for_until(self) -> Scenario:
        if (
            self.until is not None
            and self.until.goal_reached
            and (self.goal is None or self.goal.reached_when is None)
        ):
            raise PydanticCustomError(
                "until_goal", "until.goal_reached needs goal.reached_when (how to tell)"
            )
        return self

    @property
    def reactive(self) -> bool:
        """Whether the caller must know what the agent said (conditions, branches, facts)."""
        lines = any(line.when is not None or line.choose is not None for line in self.script)
        return lines or bool(self.facts) or self.goal is not None or self.until is not None

    @property
    def rows_said_together(self) -> bool:
        """Whether agent lines in a row are said one after the other, the caller silent between
        them (agent_lines.py); not when the caller has words of its own to put between them (an
        LLM's, its facts: "What is your order number?" then the answer to the number)."""
        return self.caller.driver != "llm" and not self.facts

    @property
    def needs_partials(self) -> bool:
        """Whether a line waits for the agent's words while it speaks (partial transcripts), or
        an LLM caller listens to them to barge in."""
        if self.caller.driver == "llm" and self.caller.llm.interrupts:
            return True
        return any(line.phrase is not None for line in self.script)

    @property
    def source(self) -> Path | None:
        """The YAML file the scenario was loaded from, if any."""
        return self._source

    @property
    def dtmf_lines(self) -> list[int]:
        """The script indices of its dtmf lines."""
        return [i for i, line in enumerate(self.script) if line.dtmf is not None]


def script_problem(script: list[Line]) -> str | None:
    """``script[i].field: what is wrong`` for a line that cannot follow the ones before it."""
    for i, line in enumerate(script):
        kind = line.kind
        if kind != "line":
            # The agent line being interrupted: the nearest line before that is not a backchannel.
            prior = [p for p in script[:i] if p.kind != "backchannel"]
            if not prior or prior[-1].speaker != "agent":
                what = "a barge-in" if kind == "barge_in" else "a backchannel"
                key = next(k for k in CALLER_TRIGGERS if getattr(line, k) is not None)
                return (f"script[{i}].{key}: {what} must follow an agent line (the turn it "
                        "goes into: put `- agent: TEXT` before it)")  # fmt: skip
        if line.talk_over_ms is not None:
            before = script[i - 1] if i else None
            if before is None or before.speaker != "caller" or before.kind == "backchannel":
                return (
                    f"script[{i}].talk_over_ms: talking over needs a caller line (not a "
                    "backchannel) right before it"
                )
    return None
