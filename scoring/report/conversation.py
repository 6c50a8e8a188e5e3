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
class CueView:
    """A caller line that cut in on the agent's words while it spoke: keyed on a phrase
    (``barge_in_on``) or decided by the caller's LLM mid-turn."""

    sent_ms: float  # when the caller's line went out
    text: str
    spoken_as: str  # barge_in | backchannel | line (the agent finished first)
    cue: str  # what it waited for
    heard: str  # the partial transcript it acted on
    cue_ms: float | None  # when the phrase was spoken (the LLM: how far the caller had heard)
    lag_ms: float | None  # cue -> the line's audio out


@dataclass(frozen=True)
class LlmTurnView:
    """One action of the caller's LLM (asked, or replayed from an earlier call)."""

    heard_ms: float
    heard: str
    action: str
    text: str
    source: str
    latency_ms: float | None
    mid_turn: bool


@dataclass(frozen=True)
class ConversationView:
    decisions: list[DecisionView]
    goal: str | None
    goal_reached: bool | None
    facts_given: dict[str, int] = field(default_factory=dict)
    ended_early: str | None = None
    outcome: ConversationOutcome | None = None
    cues: list[CueView] = field(default_factory=list)
    llm_turns: list[LlmTurnView] = field(default_factory=list)


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def cue_views(script: Mapping[str, Any]) -> list[CueView]:
    """The lines keyed on the agent's words, from result.json's ``script.lines``."""
    out = []
    for r in script.get("lines") or []:
        if not isinstance(r, Mapping) or not isinstance(r.get("sent"), Mapping):
            continue
        sent = _num(r["sent"].get("start_ms"))
        hit = r.get("phrase") if isinstance(r.get("phrase"), Mapping) else None
        if sent is None or hit is None:
            continue
        out.append(CueView(sent, str(r.get("text", "")), str(r.get("spoken_as") or "line"),
                           f"the agent says {hit.get('phrase', '')!r}", str(hit.get("heard", "")),
                           _num(hit.get("spoken_ms")), _num(hit.get("lag_ms"))))  # fmt: skip
    return out


def llm_views(script: Mapping[str, Any]) -> tuple[list[LlmTurnView], list[CueView]]:
    """The caller LLM's turns, and those it spoke mid-turn as cues."""
    llm = script.get("llm") if isinstance(script.get("llm"), Mapping) else {}
    turns, cues = [], []
    for t in llm.get("turns") or []:
        action = t.get("action") if isinstance(t, Mapping) else None
        heard_ms = _num(t.get("heard_end_ms")) if isinstance(action, Mapping) else None
        if heard_ms is None:
            continue
        mid = _num(t.get("upto_offset_ms")) is not None
        text = str(action.get("keys") or "") if action.get("action") == "press" else str(
            action.get("text") or "")  # fmt: skip
        turns.append(LlmTurnView(heard_ms, str(t.get("heard", "")), str(action.get("action")),
                                 text, str(t.get("source", "")), _num(t.get("latency_ms")),
                                 mid))  # fmt: skip
        offset = _num(t.get("sent_offset_ms"))
        if mid and offset is not None:
            cues.append(CueView(heard_ms + offset, text, str(action.get("action")),
                                "the caller's LLM, hearing the agent mid-turn", str(t["heard"]),
                                heard_ms, offset))  # fmt: skip
    return turns, cues


def conversation_view(
    script: Mapping[str, Any] | None,
    outcome: ConversationOutcome | None,
    agent_starts: Sequence[float],
) -> ConversationView | None:
    """The caller's decisions with where each plays from; None for a caller that did not react
    (the report then shows nothing of it)."""
    r = ScriptReactions.read(dict(script or {}))
    llm_turns, llm_cues = llm_views(script or {})
    cues = sorted(cue_views(script or {}) + llm_cues, key=lambda c: c.sent_ms)
    if not (r.decisions or cues or llm_turns) and r.goal is None and outcome is None:
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
        cues=cues,
        llm_turns=llm_turns,
    )
