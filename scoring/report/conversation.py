"""What the report shows of a reacting caller: each decision it took on the agent's words (when,
what it heard, which condition matched on which words, what it did), its goal, the facts it gave,
and the outcome as it saw it; read from result.json's ``script`` and ``conversation``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from turnscope.scoring.conversation import (
    ConversationOutcome,
    DecisionKind,
    ScriptDecision,
    ScriptReactions,
)


@dataclass(frozen=True)
class DecisionView:
    decision: ScriptDecision
    kind: DecisionKind
    play_ms: float  # clicking it plays from the start of the agent turn it heard

    @property
    def at_ms(self) -> float:
        return self.decision.at_ms

    @property
    def condition(self) -> str:
        """The condition as the scenario wrote it (a fact's: the fact asked for)."""
        c = self.decision.condition or {}
        parts = [f"says {' / '.join(map(str, c['says']))}"] if c.get("says") else []
        parts += [f"matches /{c['matches']}/"] if c.get("matches") else []
        if self.kind is DecisionKind.FACT and self.decision.notes:
            parts.append(f"asks for {self.decision.notes[0]}")
        return "; ".join(parts)


@dataclass(frozen=True)
class ConversationView:
    decisions: list[DecisionView]
    goal: str | None
    goal_reached: bool | None
    facts_given: dict[str, int] = field(default_factory=dict)
    ended_early: str | None = None
    outcome: ConversationOutcome | None = None


def conversation_view(
    script: Mapping[str, Any] | None,
    outcome: ConversationOutcome | None,
    agent_starts: Sequence[float],
) -> ConversationView | None:
    """The caller's decisions with where each plays from; None for a caller that did not react
    (the report then shows nothing of it)."""
    r = ScriptReactions.read(dict(script or {}))
    if not r.decisions and r.goal is None and outcome is None:
        return None
    decisions = []
    for d in r.decisions:
        if d.kind is None:
            continue
        heard_from = [s for s in agent_starts if s <= d.at_ms]
        decisions.append(DecisionView(d, d.kind, max(heard_from, default=d.at_ms)))
    return ConversationView(
        decisions=decisions,
        goal=r.goal.description if r.goal else None,
        goal_reached=r.goal.reached if r.goal else None,
        facts_given=dict(r.facts_given),
        ended_early=r.ended_early,
        outcome=outcome,
    )
