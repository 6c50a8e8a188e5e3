"""Scorecards: every dimension of a bench run sliced per fixture tag.

Dimensions per scored task: the verifier's four (latency, turn_taking, barge_in, content), WER
(lower is better) when references exist, and, when a fixture declares an expected outcome and
the agent reported one, seed 002's outcome dimensions (accuracy, clarification, containment,
graceful_failure; 1.0 or 0.0 per task). A tag's value is the mean over its scored tasks; void
tasks are counted apart and never pull a mean down.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

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


def scorecard(tasks: Sequence[TaskScores]) -> dict[str, Any]:
    """``{tags: {tag: {dim: mean, ...}, ...}, counts: {tag: {scored, void, passed}}}``."""
    tags = [*sorted({t for task in tasks for t in task.tags}), ALL]
    table: dict[str, dict[str, float]] = {}
    counts: dict[str, dict[str, int]] = {}
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
    return {
        "kind": "turnscope.scorecard.v1",
        "dimensions": sorted({d for row in table.values() for d in row}, key=_dim_order),
        "lower_is_better": sorted(LOWER_IS_BETTER),
        "tags": table,
        "counts": counts,
        "tasks": [
            {
                "task_id": t.task_id,
                "tags": t.tags,
                "verdict": t.verdict,
                "dims": t.dims,
                "evidence_class": t.evidence_class,
                "note": t.note,
            }
            for t in tasks
        ],
    }


def _mean(values: Iterable[float]) -> float:
    vals = list(values)
    return sum(vals) / len(vals) if vals else float("nan")


def _dim_order(d: str) -> tuple[int, str]:
    order = (*VERIFIER_DIMS, "wer", *OUTCOME_DIMS)
    return (order.index(d) if d in order else len(order), d)
