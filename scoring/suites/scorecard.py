"""Scorecards: every dimension of a bench run sliced per fixture tag.

Dimensions per scored task: the verifier's four (latency, turn_taking, barge_in, content), WER
(lower is better) when references exist, and, when a fixture declares an expected outcome and
the agent reported one (or a reacting caller saw one), seed 002's outcome dimensions (accuracy,
clarification, containment, graceful_failure; 1.0 or 0.0 per task). A tag's value is the mean
over its scored tasks; void tasks are counted apart and never pull a mean down.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from turnscope.scoring.suites.turn_taking_gate import card_section
from turnscope.scoring.voice_wer import VoiceHeard, pool_voices

VERIFIER_DIMS = ("latency", "turn_taking", "barge_in", "content")
OUTCOME_DIMS = ("accuracy", "clarification", "containment", "graceful_failure")
LOWER_IS_BETTER = frozenset({"wer"})
ALL = "all"


def outcome_dimensions(expect: Mapping[str, Any], actual: Mapping[str, Any]) -> dict[str, float]:
    """Seed 002's outcome checks over the RESOLVED outcome (never the wording)."""
    fields = expect.get("fields") or {}
    got_fields = actual.get("fields") or {}
    accurate = (
        actual.get("intent") == expect.get("intent")
        and all(got_fields.get(k) == v for k, v in fields.items())
        and set(actual.get("missing") or []) == set(expect.get("missing") or [])
    )
    return {
        "accuracy": float(accurate),
        "clarification": float(
            bool(actual.get("did_clarify")) == bool(expect.get("clarify_expected"))
        ),
        "containment": float(actual.get("handed_off") is False),
        "graceful_failure": float(
            actual.get("intent") == expect.get("intent") or bool(actual.get("failed_safely"))
        ),
    }


@dataclass
class TaskScores:
    """One task's dimensions (empty when void) and its tags."""

    task_id: str
    tags: list[str]
    verdict: str  # pass | fail | void
    dims: dict[str, float] = field(default_factory=dict)
    evidence_class: str = ""
    note: str = ""
    # Per verifier dimension, how often the task exercised it (Exercise.to_dict()): a 1.0 from
    # a task that exercised nothing is the verifier's vacuous score, not evidence.
    exercise: dict[str, dict[str, Any]] = field(default_factory=dict)
    reason: str = ""  # why it failed, in the verifier's facts (scoring/suites/why.py)
    duration_s: float | None = None  # how long its call or replay ran (JUnit's time)
    turn_taking: dict[str, float] = field(default_factory=dict)  # turn_taking_gate.task_metrics
    voices: list[VoiceHeard] = field(default_factory=list)  # its caller voices, as the ASR heard
    floors: dict[str, float] = field(default_factory=dict)  # its fixture's own, for the gate


def scorecard(tasks: Sequence[TaskScores]) -> dict[str, Any]:
    """``{tags: {tag: {dim: mean, ...}, ...}, counts: {tag: {scored, void, passed}}}``."""
    tags = [*sorted({t for task in tasks for t in task.tags}), ALL]
    table: dict[str, dict[str, float]] = {}
    counts: dict[str, dict[str, int]] = {}
    exercised: dict[str, dict[str, dict[str, Any]]] = {}
    voices: dict[str, list[dict[str, Any]]] = {}
    for tag in tags:
        members = [t for t in tasks if tag == ALL or tag in t.tags]
        scored = [t for t in members if t.verdict != "void"]
        counts[tag] = {
            "tasks": len(members),
            "scored": len(scored),
            "void": len(members) - len(scored),
            "passed": sum(1 for t in scored if t.verdict == "pass"),
        }
        dims = sorted({d for t in scored for d in t.dims}, key=_dim_order)
        table[tag] = {d: round(_mean(t.dims[d] for t in scored if d in t.dims), 4) for d in dims}
        exercised[tag] = tag_exercise(scored)
        if pooled := pool_voices(v for t in scored for v in t.voices):
            voices[tag] = [v.model_dump() for v in pooled]
    return {
        "kind": "turnscope.scorecard.v1",
        # WER is always a column: where no task measured it (transcripts) it reads "not measured".
        "dimensions": sorted({"wer", *(d for row in table.values() for d in row)}, key=_dim_order),
        "lower_is_better": sorted(LOWER_IS_BETTER),
        "tags": table,
        "counts": counts,
        "exercise": exercised,
        "turn_taking": card_section(tasks, tags),  # FDB's measures per tag (turn_taking_gate)
        # Per tag, each caller voice's WER with the project's ASR over its scored tasks (live
        # calls): what the voice itself may explain of the agent's misunderstanding.
        "voices": voices,
        "tasks": [
            {
                "task_id": t.task_id,
                "tags": t.tags,
                "verdict": t.verdict,
                "dims": t.dims,
                "evidence_class": t.evidence_class,
                "note": t.note,
                "exercise": t.exercise,
                "reason": t.reason,
                "duration_s": t.duration_s,
                "turn_taking": t.turn_taking,
                "voices": [v.model_dump() for v in t.voices],
                **({"floors": t.floors} if t.floors else {}),
            }
            for t in tasks
        ],
    }


def tag_exercise(scored: Sequence[TaskScores]) -> dict[str, dict[str, Any]]:
    """Per dimension over a tag's scored tasks that report their exercise: how many tasks
    exercised it, the total count and plan, and the tasks that planned some and exercised none."""
    out: dict[str, dict[str, Any]] = {}
    for t in scored:
        for dim, ex in t.exercise.items():
            cell = out.setdefault(
                dim, {"tasks": 0, "exercised": 0, "count": 0, "planned": 0, "missed": []}
            )
            cell["tasks"] += 1
            cell["exercised"] += bool(ex.get("exercised"))
            cell["count"] += int(ex.get("count") or 0)
            planned = int(ex.get("planned") or 0)
            cell["planned"] += planned
            if planned and not ex.get("count"):
                cell["missed"].append(t.task_id)
    return out


def _mean(values: Iterable[float]) -> float:
    vals = list(values)
    return sum(vals) / len(vals) if vals else float("nan")


def _dim_order(d: str) -> tuple[int, str]:
    order = (*VERIFIER_DIMS, "wer", *OUTCOME_DIMS)
    return (order.index(d) if d in order else len(order), d)
