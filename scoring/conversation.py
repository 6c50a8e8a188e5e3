"""The conversation as the caller saw it: what a reacting scripted caller's decisions (result.json's
``script``) say the call came to. Plain functions over the report, no call needed.

The caller knows which facts the agent asked it for (and what it answered), which of the facts it
had to give were never asked for, whether and after how many agent turns its goal was reached,
and whether the agent had to ask it for anything (a clarification). That is
``ConversationOutcome``: written beside the agent's own outcome (when the agent reports one) and,
when it does not, the outcome the suites' outcome dimensions score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any

from pydantic import Field

from turnscope.scoring.caller_decisions import DecisionKind
from turnscope.scoring.contract import Contract
from turnscope.scoring.evidence.documents import Document, omitted
from turnscope.scoring.suites.scorecard import outcome_dimensions


class OutcomeSource(str, Enum):
    """Whose outcome the outcome dimensions scored."""

    AGENT = "agent"  # the agent reported its own (data channel, outcome.json)
    CALLER = "caller"  # none from the agent: the caller's side of it


class ScriptDecision(Document):
    """One decision as result.json's ``script.decisions`` holds it."""

    kind: DecisionKind | None = None
    at_ms: float = 0.0
    line: int | None = None
    heard: str = ""  # the agent's last turn, as transcribed
    outcome: str = ""  # what the caller did
    matched: str | None = None  # the words the condition matched on
    condition: dict[str, Any] | None = None
    notes: list[str] = Field(default_factory=list)  # a fact decision: the fact's name first


class ScriptGoal(Document):
    description: str = ""
    reached: bool = False


class ScriptReactions(Document):
    """The reacting part of result.json's ``script`` (read tolerantly: other keys ignored)."""

    decisions: list[ScriptDecision] = Field(default_factory=list)
    goal: ScriptGoal | None = None
    facts_given: dict[str, int] = Field(default_factory=dict)
    ended_early: str | None = None
    lines: list[dict[str, Any]] = Field(default_factory=list)

    def fact_asked(self, d: ScriptDecision) -> str | None:
        return d.notes[0] if d.kind is DecisionKind.FACT and d.notes else None


class ConversationOutcome(Document):
    """result.json's ``conversation``: the call's outcome from the caller's side."""

    goal: str | None = None  # the goal's description (None: the scenario set none)
    goal_reached: bool | None = None
    goal_turns: int | None = None  # agent turns until the one that reached it (counted in)
    agent_turns: int = 0
    facts_asked: list[str] = Field(default_factory=list)  # in the order first asked
    fields: dict[str, str] = Field(default_factory=dict)  # each fact asked: what was said
    missing: list[str] = Field(default_factory=list)  # facts listed that were never asked for
    clarified: bool = False  # the agent asked the caller for something it lacked
    ended_early: str | None = None
    decisions: int = 0
    # With a task that expects an outcome: the outcome dimensions, and whose outcome they scored.
    dimensions: dict[str, float] | None = omitted()
    dimensions_from: OutcomeSource | None = omitted()

    def as_reported(self, intent: str | None) -> dict[str, Any]:
        """This outcome in the shape an agent reports its own (``outcome_dimensions``' input).
        The caller cannot name the agent's intent; it knows whether it got what it came for:
        ``intent`` (the task's) when the goal was reached, else none. Contained likewise."""
        return {
            "intent": intent if self.goal_reached else None,
            "fields": dict(self.fields),
            "missing": list(self.missing),
            "did_clarify": self.clarified,
            "handed_off": False if self.goal_reached else None,
        }


def _fact_values(r: ScriptReactions, facts: Mapping[str, str]) -> dict[str, str]:
    """Each fact asked: its value from the scenario, else what the caller's answer line said (the
    fact answers are the report's ``fact`` lines, in the order the decisions gave them)."""
    said = sorted(
        (line for line in r.lines if line.get("kind") == "fact"),
        key=lambda line: float(line.get("queued_ms") or 0.0),
    )
    out: dict[str, str] = {}
    for k, name in enumerate(n for d in r.decisions if (n := r.fact_asked(d))):
        if name not in out:
            out[name] = facts.get(name) or (str(said[k].get("text", "")) if k < len(said) else "")
    return out


def conversation_outcome(
    script: Mapping[str, Any] | None,
    *,
    facts: Mapping[str, str] | None = None,
    agent_turn_starts: Sequence[float] = (),
) -> ConversationOutcome | None:
    """The caller's view of the call from its script report; ``facts``: the facts the scenario
    gave the caller (name -> value), ``agent_turn_starts``: when each agent turn began. None for
    a caller that did not react (no decisions, no goal, no facts)."""
    r = ScriptReactions.read(dict(script or {}))
    facts = dict(facts or {})
    if not r.decisions and r.goal is None and not facts and not r.facts_given:
        return None
    fields = _fact_values(r, facts)
    reached = next((d for d in r.decisions if d.kind is DecisionKind.GOAL), None)
    goal_turns = None
    if reached is not None:
        goal_turns = sum(1 for s in agent_turn_starts if s <= reached.at_ms)
    return ConversationOutcome(
        goal=r.goal.description if r.goal else None,
        goal_reached=(r.goal.reached or reached is not None) if r.goal else None,
        goal_turns=goal_turns,
        agent_turns=len(agent_turn_starts),
        facts_asked=list(fields),
        fields=fields,
        missing=[name for name in facts if name not in fields],
        clarified=bool(fields),
        ended_early=r.ended_early,
        decisions=len(r.decisions),
    )


def scored(
    outcome: ConversationOutcome, expect: Mapping[str, Any], reported: Mapping[str, Any] | None
) -> ConversationOutcome:
    """``outcome`` with the outcome dimensions of a task that expects ``expect``: over the
    agent's own ``reported`` outcome when it gave one (it stays what it is), else the caller's."""
    if reported is not None:
        dims, source = outcome_dimensions(expect, reported), OutcomeSource.AGENT
    else:
        actual = outcome.as_reported(expect.get("intent"))
        dims, source = outcome_dimensions(expect, actual), OutcomeSource.CALLER
    return outcome.model_copy(update={"dimensions": dims, "dimensions_from": source})


def call_conversation(
    script: Mapping[str, Any] | None,
    contract: Contract,
    dialogue: Sequence[Mapping[str, Any]],
    reported: Mapping[str, Any] | None = None,
) -> ConversationOutcome | None:
    """The conversation of a scripted call against its contract (the scenario's facts in its
    plan, the task's expected outcome), scored when the task expects an outcome."""
    starts = [float(t["start_ms"]) for t in dialogue if t.get("speaker") == "agent"]
    if not isinstance(reported, Mapping):  # an agent's message: anything but an object is none
        reported = None
    facts = dict(contract.plan.facts) if contract.plan is not None else {}
    out = conversation_outcome(script, facts=facts, agent_turn_starts=starts)
    if out is not None and contract.expect:
        out = scored(out, contract.expect, reported)
    return out
