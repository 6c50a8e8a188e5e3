"""Which of the verifier's dimensions a call really exercised, beside the verifier's own scores.

The verifier scores a dimension 1.0 when there was nothing to score (no barge-in: barge_in 1.0);
that is its contract, and its numbers stay as they are. A reader must not take such a 1.0 for a
tested pass, so every view shows the dimension as "not exercised", and a barge-in the task planned
that never happened (an agent whose reply ended before the caller's planned interruption) is
named, and fails the CI gate for its tag.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from turnscope.scoring.verifier import COMPONENTS, Facts, verifier_facts

NOT_EXERCISED = "not exercised"


@dataclass(frozen=True)
class Plan:
    """What the task meant to exercise: barge-ins, backchannels and the agent's replies (None:
    not known), and the facts the caller can give when asked (name, value), for the
    conversation's outcome."""

    barge_ins: int | None = None
    backchannels: int | None = None
    replies: int | None = None  # agent lines that answer a caller's turn (a scenario's)
    source: str = ""
    facts: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_turns(cls, turns: Sequence[Mapping[str, Any]], *, source: str) -> Plan:
        """The barge-ins of a reference dialogue (its interrupt turns)."""
        interrupts = sum(1 for t in turns if t.get("interrupt") is True)
        return cls(barge_ins=interrupts, source=source)


@dataclass(frozen=True)
class Exercise:
    """How often a call exercised one dimension, and how often its task planned to."""

    dimension: str
    # latency: reply pairs; turn_taking: agent turns; barge_in: barge-ins; content: keywords
    count: int
    planned: int | None = None

    @property
    def exercised(self) -> bool:
        return self.count > 0

    @property
    def missed(self) -> bool:
        """The task planned some and the call exercised none: evidence that is missing."""
        return bool(self.planned) and self.count == 0

    def note(self) -> str:
        """One phrase for views: empty when the dimension was exercised as planned."""
        if self.dimension == "barge_in" and self.planned:
            if self.count == 0:
                return f"{NOT_EXERCISED}: {self.planned} planned, none happened"
            if self.count < self.planned:
                return f"{self.count} of {self.planned} planned barge-ins happened"
            return ""
        if self.count:
            return ""
        why = {
            "latency": "no agent turn followed a caller turn",
            "turn_taking": "no agent turn",
            "barge_in": "no barge-in in this call",
            "content": "the task requires no content",
        }[self.dimension]
        return f"{NOT_EXERCISED}: {why}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "exercised": self.exercised,
            "count": self.count,
            "planned": self.planned,
            "note": self.note(),
        }


def exercise(facts: Facts, plan: Plan | None = None) -> dict[str, Exercise]:
    """Each dimension's exercise, from what the verifier paired and counted."""
    counts = {
        "latency": len(facts.gaps),
        "turn_taking": facts.agent_turns,
        "barge_in": len(facts.barge_ins),
        "content": len(facts.keywords_found) + len(facts.keywords_missing),
    }
    planned = plan.barge_ins if plan is not None else None
    return {d: Exercise(d, counts[d], planned if d == "barge_in" else None) for d in COMPONENTS}


def barge_ins_happened(exercised: Mapping[str, Exercise], planned: int) -> int:
    """How many of a script's ``planned`` barge-ins happened, as the verifier counted them: a
    caller line said as a barge-in that met no agent speech (said into a pause of the agent's
    turn, within the VAD's hangover) is none, whatever the caller believed."""
    found = exercised.get("barge_in")
    return min(found.count if found is not None else 0, planned)


def exercise_from_dict(doc: Mapping[str, Any] | None) -> dict[str, Exercise]:
    """Read back ``{dim: Exercise.to_dict()}`` (as written in result.json and scorecards)."""
    out: dict[str, Exercise] = {}
    for dim, value in (doc or {}).items():
        if dim in COMPONENTS and isinstance(value, Mapping):
            count = value.get("count")
            planned = value.get("planned")
            out[dim] = Exercise(
                dim,
                int(count) if isinstance(count, (int, float)) else 0,
                int(planned) if isinstance(planned, (int, float)) else None,
            )
    return out


def task_facts(task: Mapping[str, Any], dialogue: Sequence[Mapping[str, Any]]) -> Facts:
    """A suite task's dialogue as the verifier sees it, against the task's budgets and
    content."""
    return verifier_facts(
        dialogue, budgets=task.get("budgets"), required_content=task.get("required_content")
    )


def task_exercise(task: Mapping[str, Any], facts: Facts) -> dict[str, Exercise]:
    """What a suite task's dialogue (its ``task_facts``) exercised, the barge-ins of its
    reference dialogue as the plan."""
    reference = task.get("reference_dialogue")
    plan = Plan.from_turns(reference, source="reference_dialogue") if reference else None
    return exercise(facts, plan)
