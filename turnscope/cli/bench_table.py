"""The bench result as a terminal table: a row per task, the aggregate, why tasks failed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from turnscope.cli.render import score_cell
from turnscope.scoring.exercise import NOT_EXERCISED
from turnscope.scoring.verifier import COMPONENTS

__all__ = ["bench_table"]


def bench_table(
    result: Mapping[str, Any],
    exercise: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
    reasons: Mapping[str, str] | None = None,
) -> Group:
    """One row per task, the aggregate line, and why each failed task failed (``reasons``, in
    the verifier's facts: scoring/suites/why.py); a dimension a task did not exercise (its
    ``exercise`` entry, {task_id: {dim: Exercise.to_dict()}}) reads "not exercised"."""
    table = Table(
        title=f"{result['dataset_name']} v{result['dataset_version']}", title_justify="left"
    )
    # Names wrap rather than being cut short ("refund-c…"): a narrow terminal still says which.
    table.add_column("task", overflow="fold")
    for name in COMPONENTS:
        table.add_column(name, justify="right")
    table.add_column("verdict")
    # One evidence class for every task (the usual case) is said once, under the table: its
    # column pushed an 80-column terminal's table into wrapping every name mid-word.
    classes = {row["evidence_class"] for row in result["per_task"]}
    several = len(classes) > 1
    if several:
        table.add_column("evidence", overflow="fold")
    for row in result["per_task"]:
        seen = (exercise or {}).get(row["task_id"]) or {}
        verdict = row["verdict"]
        style = {"pass": "green", "fail": "red"}.get(verdict, "yellow")
        evidence = [row["evidence_class"]] if several else []
        table.add_row(row["task_id"], *_cells(row, seen), Text(verdict, style), *evidence)
    agg = result["aggregate"]
    line = Text(
        f"{agg['passed']}/{agg['scored']} scored tasks passed, {agg['void']} void, "
        f"pass_rate {agg['pass_rate']:.3f}, mean_score {agg['mean_score']:.3f}"
    )
    # A failed task's row said "fail" and no more; the gate and the scorecard page said why.
    why = [Text(f"{tid} failed: {reason}", "red") for tid, reason in (reasons or {}).items()]
    if len(classes) == 1:  # (none: a suite with no tasks)
        return Group(table, *why, line, Text(f"evidence: {classes.pop()} (every task)"))
    return Group(table, *why, line)


def _cells(row: Mapping[str, Any], seen: Mapping[str, Mapping[str, Any]]) -> list[Text | str]:
    """A task's score per dimension; "not exercised" where its evidence had none."""
    comps = row["result"].get("components") or {}
    return [
        score_cell(
            comps.get(n),
            NOT_EXERCISED if n in comps and seen.get(n, {}).get("exercised") is False else "",
        )
        for n in COMPONENTS
    ]
