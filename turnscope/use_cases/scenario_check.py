"""A scenario file checked without placing a call (`turnscope scenario check`): loaded as a call
loads it (every key, voice, clip and suite task), then summarised as the caller will go through
it, each line with the moment it is said."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from turnscope.actors.caller.agent_lines import answers_agent, no_agent_lines
from turnscope.actors.caller.reactive_keys import Condition
from turnscope.actors.caller.scenario import Line, Scenario
from turnscope.actors.caller.scenario_file import load_scenario
from turnscope.use_cases.scenario_notes import needs_phone_line

__all__ = ["LinePlan", "ScenarioCheck", "check_scenario"]


@dataclass(frozen=True)
class LinePlan:
    """One script line: who says it, when, and what."""

    index: int
    speaker: str  # caller | agent | keys
    when: str
    text: str


@dataclass(frozen=True)
class ScenarioCheck:
    """A valid scenario as the caller will go through it."""

    path: Path
    name: str
    caller_lines: int
    agent_lines: int
    barge_ins: int
    backchannels: int
    shape: str  # how the caller goes through the script, one sentence
    reactions: list[str] = field(default_factory=list)  # facts, goal, until
    lines: list[LinePlan] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what a call will do that one may not expect


def check_scenario(path: str | Path) -> ScenarioCheck:
    """``path`` loaded as ``turnscope call --scenario`` loads it (InputError naming the file and
    the key when it is not valid), summarised."""
    sc = load_scenario(path)
    caller = [line for line in sc.script if line.speaker == "caller"]
    return ScenarioCheck(
        path=sc.source or Path(path),
        name=sc.name,
        caller_lines=len(caller),
        agent_lines=sum(1 for line in sc.script if line.speaker == "agent"),
        barge_ins=sum(1 for line in caller if line.kind == "barge_in"),
        backchannels=sum(1 for line in caller if line.kind == "backchannel"),
        shape=_shape(sc),
        reactions=_reactions(sc),
        lines=[_plan(sc, i, line) for i, line in enumerate(sc.script)],
        notes=_notes(sc),
    )


def _shape(sc: Scenario) -> str:
    c = sc.caller
    if c.driver == "llm":
        return "the caller says its scripted lines, then an LLM drives it (see the note)"
    if no_agent_lines(sc):
        return (f"each caller line answers the agent's turn: the first the greeting (waited "
                f"for {c.greeting_timeout_ms} ms at most), each later one the answer to the line "
                f"before; the answer to the last is waited for ({c.reply_timeout_ms} ms at "
                "most)")  # fmt: skip
    if all(line.trigger[0] == "at_ms" for line in sc.script if line.speaker == "caller"):
        return "every caller line is placed on the call clock: played as timed, heard or not"
    return (f"each caller line answers the agent lines the script puts before it (an agent "
            f"that does not answer is waited for {c.reply_timeout_ms} ms); the reference agent "
            "speaks the agent lines (turnscope demo --scenario FILE)")  # fmt: skip


def _words(cond: Condition) -> str:
    parts = []
    if cond.says:
        parts.append(" or ".join(f"'{w}'" for w in cond.says))
    if cond.matches:
        parts.append(f"matches /{cond.matches}/")
    return " and ".join(parts)


def _reactions(sc: Scenario) -> list[str]:
    said = []
    if sc.facts:
        said.append("facts, given when the agent asks: " + ", ".join(sc.facts))
    if sc.goal is not None:
        reached = f" (reached when the agent says {_words(sc.goal.reached_when)})" if (
            sc.goal.reached_when) else ""  # fmt: skip
        said.append(f"goal: {sc.goal.description or '(no description)'}{reached}")
    if (u := sc.until) is not None:
        ends = [f"the agent says {_words(u.agent_says)}"] if u.agent_says else []
        ends += ["the goal is reached"] if u.goal_reached else []
        ends += [f"{u.turns} agent turns"] if u.turns else []
        ends += [f"{u.seconds:g} s into the call"] if u.seconds else []
        said.append("the caller hangs up when its turn comes once: " + "; or ".join(ends))
    return said


def _plan(sc: Scenario, index: int, line: Line) -> LinePlan:
    if line.speaker == "agent":
        how = "its turn"
        if line.at_pause_ms is not None:
            how = f"{line.at_pause_ms} ms into the caller's pause"
        elif line.talk_over_ms is not None:
            how = f"over the caller, {line.talk_over_ms} ms before its line ends"
        return LinePlan(index, "agent", how, line.text)
    if line.choose is not None:
        branches = [f"{_words(b.when)}: '{b.caller}'" if b.when else f"else '{b.caller}'"
                    for b in line.choose]  # fmt: skip
        return LinePlan(index, "caller", "on the agent's answer, the first branch whose "
                        "words it says", "; ".join(branches))  # fmt: skip
    trigger, ms = line.trigger
    when = {
        "at_ms": f"at {ms / 1000:g} s",
        "after_agent_ms": f"{ms} ms after {_after(sc, index)}",
        "reply_gap_ms": f"{ms} ms after the agent's voice stops",
        "barge_in_ms": f"barge-in, {ms} ms into the agent's turn",
        "backchannel_ms": f"backchannel, {ms} ms into the agent's turn",
        "barge_in_on": f"barge-in when the agent says '{line.phrase}'",
        "backchannel_on": f"backchannel when the agent says '{line.phrase}'",
    }[trigger]
    if line.placement in ("early", "mid"):
        when = f"{line.kind.replace('_', '-')}, {line.placement} in the agent's turn"
    if line.when is not None:
        when += f", once the agent says {_words(line.when)}"
    if line.dtmf is not None:
        return LinePlan(index, "keys", when, " ".join(line.dtmf))
    return LinePlan(index, "caller", when, line.text)


def _after(sc: Scenario, index: int) -> str:
    """What a line at the default trigger (``after_agent_ms``) waits for: caller.py's rule."""
    before = sc.script[index - 1] if index > 0 else None
    # after its own backchannel the caller answers the turn it went into (reply_gap.py)
    if answers_agent(sc, index) or (
        before is not None and (before.speaker == "agent" or before.kind == "backchannel")
    ):
        return "the agent's turn ends"
    return f"script[{index - 1}] ends" if index > 0 else "the call starts"


def _notes(sc: Scenario) -> list[str]:
    notes = [keys] if (keys := needs_phone_line(sc)) is not None else []
    if sc.caller.driver == "llm":
        notes.append("caller.driver is llm: a call needs --caller-llm URL (or --caller-from "
                     "BUNDLE, a recorded call); synth and the demo render the script's own "
                     "lines")  # fmt: skip
    return notes
