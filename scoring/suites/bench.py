"""run_bench: score a voice suite's tasks from a {task_id: dialogue} submission.

Shapes and messages follow the suite contract (../shared/contracts/verifier.md): one row per task
in suite order, void rows for tasks without a transcript, and an honest aggregate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from turnscope.errors import BenchError
from turnscope.scoring.suites.suite import Suite, SuiteTask, load_suite
from turnscope.scoring.verifier import score_voice_episode

BENCH_RESULT_KIND = "agent-learning.bench-result.v1"
EVIDENCE_CLASSES = ("local_gate", "live_lane", "live_stressed", "captured_fixture")
LIVE_EVIDENCE_CLASSES = ("live_lane", "live_stressed")
NO_TRANSCRIPT = "no transcript submitted"


def _row_head(task: SuiteTask) -> dict[str, Any]:
    return {
        "task_id": task.id,
        "modality": "voice",
        "world_kind": "voice_telephony",
        "control_mode": "artifact_in",
    }


def _row_tail(evidence_class: str) -> dict[str, Any]:
    return {"execution_class": "executable", "evidence_class": evidence_class, "overclaim": False}


def void_row(task: SuiteTask, evidence_class: str) -> dict[str, Any]:
    """The row of a task that has no transcript: never scored, never a failure."""
    return {
        **_row_head(task),
        "result": {"scalar": None, "components": {}, "pass_fail": {}, "explanation": NO_TRANSCRIPT},
        "verdict": "void",
        **_row_tail(evidence_class),
        "error": NO_TRANSCRIPT,
    }


def scored_row(
    task: SuiteTask, dialogue: Sequence[Mapping[str, Any]], evidence_class: str
) -> dict[str, Any]:
    """Score one task's dialogue against the task's own budgets and required content."""
    scored = score_voice_episode(
        dialogue, budgets=task.verifier_budgets(), required_content=task.required_content
    )
    result = dict(scored["result"])
    return {
        **_row_head(task),
        "result": result,
        "verdict": "pass" if (result.get("pass_fail") or {}).get("voice") else "fail",
        **_row_tail(evidence_class),
        "raw": scored.get("raw", {}),
    }


def _group(rows: Sequence[Mapping[str, Any]], key: str) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for row in rows:
        group = out.setdefault(str(row.get(key)), {"count": 0, "passed": 0})
        group["count"] += 1
        group["passed"] += row["verdict"] == "pass"
    return out


def aggregate(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts, pass rate over scored tasks only, mean score, rollups and the honesty block."""
    count = len(rows)
    passed = sum(1 for r in rows if r["verdict"] == "pass")
    void = sum(1 for r in rows if r["verdict"] == "void")
    scored = count - void
    scalars = [r["result"]["scalar"] for r in rows if r["result"].get("scalar") is not None]
    classes = {r.get("evidence_class") for r in rows}
    return {
        "count": count,
        "passed": passed,
        "void": void,
        "scored": scored,
        "pass_rate": round(passed / scored, 6) if scored else 0.0,
        "mean_score": round(sum(scalars) / len(scalars), 6) if scalars else 0.0,
        "by_world_kind": _group(rows, "world_kind"),
        "by_execution_class": _group(rows, "execution_class"),
        "by_modality": _group(rows, "modality"),
        "honesty": {
            "evidence_class": next(iter(classes))
            if len(classes) == 1
            else sorted(c for c in classes if c),
            "fixture_only": all(r.get("evidence_class") not in LIVE_EVIDENCE_CLASSES for r in rows),
            "any_live": any(r.get("evidence_class") in LIVE_EVIDENCE_CLASSES for r in rows),
            "any_overclaim": any(bool(r.get("overclaim")) for r in rows),
        },
    }


def bench_result(suite: Suite, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Wrap per-task rows into the bench result document."""
    return {
        "kind": BENCH_RESULT_KIND,
        "control_mode": "artifact_in",
        "dataset_name": suite.name,
        "dataset_version": suite.version,
        "modalities": sorted({r["modality"] for r in rows}),
        "per_task": list(rows),
        "aggregate": aggregate(rows),
    }


def check_evidence_class(evidence_class: str) -> None:
    """Raise BenchError for an evidence class outside the contract's four."""
    if evidence_class not in EVIDENCE_CLASSES:
        raise BenchError(
            f"unknown evidence_class {evidence_class!r}; expected one of {EVIDENCE_CLASSES}"
        )


def run_bench(
    suite: Suite | Mapping[str, Any] | str | Path,
    control_mode: str = "artifact_in",
    submission: Mapping[str, Sequence[Mapping[str, Any]] | None] | None = None,
    evidence_class: str = "captured_fixture",
) -> dict[str, Any]:
    """Score every task of a voice suite against ``submission[task_id]``.

    ``suite`` is a suite dict or a path to its JSON. Tasks absent from the submission are void.
    """
    obj = load_suite(suite)
    if control_mode != "artifact_in":
        raise BenchError(
            f"voice bench suites run under control_mode='artifact_in', not {control_mode!r}"
        )
    if submission is None:
        raise BenchError("voice artifact_in requires submission={task_id: dialogue}")
    check_evidence_class(evidence_class)
    rows = []
    for task in obj.tasks:
        dialogue = submission.get(task.id)
        if dialogue is None:
            rows.append(void_row(task, evidence_class))
        else:
            rows.append(scored_row(task, dialogue, evidence_class))
    return bench_result(obj, rows)
