"""A baseline pinned from several runs, each value the worst any of them had.

The same suite scores a little differently on different machines: Whisper's decoding runs
CTranslate2's CPU kernels, which differ by CPU (measured on one AMD EPYC machine, the shipped audio
suite's backchannel-voices task: WER 0.133-0.244 across its kernels, against 0.148 on the machine
that pinned the baseline). A baseline pinned on one machine then fails a CI runner of another
kind on an unchanged checkout. Pinning each further machine's run with ``keep_worst`` keeps the
worse of the two values in every cell the gate compares (tag x dimension means, each task's
values, the turn-taking metrics), so the baseline holds on every machine that pinned into it and
a real regression on any of them still fails.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from turnscope.scoring.suites.gate import baseline_of, is_number, worse_by

__all__ = ["keep_worst"]


def keep_worst(card: Mapping[str, Any], previous: Mapping[str, Any]) -> dict[str, Any]:
    """``card``'s baseline (``baseline_of``) with every value replaced by ``previous``'s where
    that one is worse; a cell ``previous`` does not have is the run's own."""
    pinned = baseline_of(card)
    pinned["tags"] = _tags(pinned.get("tags"), previous.get("tags"))
    pinned["turn_taking"] = _tags(pinned.get("turn_taking"), previous.get("turn_taking"))
    before = {str(t.get("task_id")): t for t in previous.get("tasks") or []}
    for task in pinned["tasks"]:
        old = before.get(str(task.get("task_id"))) or {}
        task["dims"] = _cells(task.get("dims"), old.get("dims"))
        if old.get("verdict") == "fail" and task.get("verdict") == "pass":
            task["verdict"] = "fail"
    return pinned


def _tags(new: Any, old: Any) -> dict[str, Any]:
    new, old = new or {}, old or {}
    return {tag: _cells(cells, old.get(tag)) for tag, cells in new.items()}


def _cells(new: Any, old: Any) -> dict[str, Any]:
    old = old or {}
    return {name: _worse(name, value, old.get(name)) for name, value in (new or {}).items()}


def _worse(name: str, new: Any, old: Any) -> Any:
    """The worse of two values of one cell (the gate's own direction for it)."""
    if not (is_number(new) and is_number(old)):
        return new
    return old if worse_by(name, old, new) > 0 else new
