"""Voice bench suites: loading and validating `agent-learning.bench-suite.v1` voice suites."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from turnscope.errors import InputError
from turnscope.jsonio import read_json
from turnscope.scoring.transcript import validate_dialogue

SUITE_KIND = "agent-learning.bench-suite.v1"


def validate_suite(obj: Any, *, source: str | Path | None = None) -> dict[str, Any]:
    """Check that ``obj`` is a voice suite with well-formed tasks; return it as a dict."""
    if not isinstance(obj, Mapping):
        raise InputError("a suite must be a JSON object", path=source)
    if obj.get("kind") != SUITE_KIND:
        raise InputError(
            f"not a bench suite: kind is {obj.get('kind')!r}, expected {SUITE_KIND!r}",
            path=source,
        )
    if str(obj.get("control")) != "voice":
        raise InputError(
            f"a suite of another kind: control is {obj.get('control')!r}, turnscope runs "
            "voice suites (control 'voice')",
            path=source,
        )
    tasks = obj.get("tasks")
    if not isinstance(tasks, list):
        raise InputError("suite has no 'tasks' list", path=source)
    seen: set[str] = set()
    for i, task in enumerate(tasks):
        if not isinstance(task, Mapping) or "id" not in task:
            raise InputError(f"tasks[{i}] is not an object with an 'id'", path=source)
        tid = str(task["id"])
        if tid in seen:
            raise InputError(f"task id {tid!r} appears twice", path=source)
        seen.add(tid)
        budgets = task.get("budgets")
        if budgets is not None and not isinstance(budgets, Mapping):
            raise InputError(f"task {tid!r}: budgets must be an object", path=source)
        if budgets and "max_latency_ms" in budgets:
            value = budgets["max_latency_ms"]
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value <= 0
            ):
                raise InputError(
                    f"task {tid!r}: budgets.max_latency_ms is {value!r}, expected a number of "
                    "milliseconds above 0",
                    path=source,
                )
        required = task.get("required_content")
        if required is not None and not isinstance(required, list):
            raise InputError(f"task {tid!r}: required_content must be a list", path=source)
        if task.get("reference_dialogue") is not None:
            try:
                validate_dialogue(task["reference_dialogue"])
            except InputError as exc:
                raise InputError(f"task {tid!r} reference_dialogue: {exc}", path=source) from None
    return dict(obj)


def load_suite(suite: Mapping[str, Any] | str | Path) -> dict[str, Any]:
    """A suite from a dict or a JSON file path, validated."""
    if isinstance(suite, (str, Path)):
        return validate_suite(read_json(suite, what="suite file"), source=suite)
    return validate_suite(suite)


def find_task(suite: Mapping[str, Any], task_id: str, *, source: str | Path | None = None) -> dict:
    """The task with ``task_id``; InputError listing the known ids otherwise."""
    for task in suite.get("tasks") or []:
        if str(task.get("id")) == task_id:
            return dict(task)
    ids = ", ".join(str(t.get("id")) for t in suite.get("tasks") or [])
    raise InputError(f"no task {task_id!r} in the suite (tasks: {ids})", path=source)
