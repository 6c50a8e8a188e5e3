"""The CI gate: a scorecard against its floors and a pinned baseline, per dimension per tag.

A cell (dimension x tag) fails when it is below its floor, or worse than the baseline by more
than the tolerance. Every cell that moved is reported, better or worse, so a change that helps
one tag and hurts another shows both. A task that failed its verdict, or has a dimension below
its floor, fails the gate by its name whatever the means and the baseline say (one failing task
among many passing ones moves no mean below a floor). A run where nothing was scored fails,
saying so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from xml.etree import ElementTree as ET

from turnscope.scoring.suites.scorecard import LOWER_IS_BETTER, OUTCOME_DIMS, VERIFIER_DIMS
from turnscope.scoring.verifier import PASS_FLOOR

DEFAULT_FLOORS: dict[str, float] = {
    **dict.fromkeys(VERIFIER_DIMS, PASS_FLOOR),
    "wer": 0.5,  # a ceiling: WER above this fails
    **dict.fromkeys(OUTCOME_DIMS, PASS_FLOOR),
}
DEFAULT_TOLERANCE = 0.05


@dataclass(frozen=True)
class Cell:
    tag: str
    dim: str
    value: float
    baseline: float | None
    floor: float | None
    failures: tuple[str, ...]

    @property
    def delta(self) -> float | None:
        if self.baseline is None or math.isnan(self.value) or math.isnan(self.baseline):
            return None
        return self.value - self.baseline

    @property
    def passed(self) -> bool:
        return not self.failures


@dataclass(frozen=True)
class TaskCheck:
    """One scored task of the run: its verdict and the floors it failed."""

    task_id: str
    tags: tuple[str, ...]
    verdict: str
    failures: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.failures


@dataclass
class GateResult:
    cells: list[Cell] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # run-level failures (nothing scored)
    tasks: list[TaskCheck] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return (
            not self.problems
            and all(c.passed for c in self.cells)
            and all(t.passed for t in self.tasks)
        )

    def failed_tasks(self) -> list[TaskCheck]:
        return [t for t in self.tasks if not t.passed]

    def moved(self, epsilon: float = 1e-9) -> list[Cell]:
        return [c for c in self.cells if c.delta is not None and abs(c.delta) > epsilon]


def is_number(value: Any) -> bool:
    """A finite number (a NaN, a null or a string in a scorecard is a broken cell)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def broken_cells(card: Mapping[str, Any]) -> list[str]:
    """``dim on tag`` of every cell of ``card`` that is not a finite number."""
    return [
        f"{dim} on {tag} ({value!r})"
        for tag, dims in (card.get("tags") or {}).items()
        for dim, value in dims.items()
        if not is_number(value)
    ]


def _worse_by(dim: str, value: float, baseline: float) -> float:
    """How much worse value is than baseline (positive = worse)."""
    return value - baseline if dim in LOWER_IS_BETTER else baseline - value


def gate(
    card: Mapping[str, Any],
    baseline: Mapping[str, Any] | None,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    floors: Mapping[str, float] | None = None,
) -> GateResult:
    """Judge every dimension on every tag of ``card``."""
    fl = {**DEFAULT_FLOORS, **(floors or {})}
    result = GateResult()
    counts = card.get("counts", {})
    if counts.get("all", {}).get("scored", 0) == 0:
        result.problems.append(
            "every task is void: nothing was scored, so there is nothing to pass "
            f"({counts.get('all', {}).get('void', 0)} void task(s))"
        )
    base_tags = (baseline or {}).get("tags", {})
    for tag, dims in card.get("tags", {}).items():
        for dim, value in dims.items():
            base = base_tags.get(tag, {}).get(dim)
            floor = fl.get(dim)
            failures = []
            if not is_number(value):
                failures.append(
                    f"has no value ({value!r}): the scorecard is broken, or the dimension was "
                    "never measured on this tag"
                )
                result.cells.append(Cell(tag, dim, math.nan, None, floor, tuple(failures)))
                continue
            if base is not None and not is_number(base):
                failures.append(f"the baseline's value is {base!r}, not a number: re-pin it")
                base = None
            if floor is not None:
                if dim in LOWER_IS_BETTER and value > floor:
                    failures.append(f"{value:.3f} is above its ceiling {floor:.3f}")
                elif dim not in LOWER_IS_BETTER and value < floor:
                    failures.append(f"{value:.3f} is below its floor {floor:.3f}")
            if base is not None and _worse_by(dim, value, base) > tolerance:
                failures.append(
                    f"{base:.3f} -> {value:.3f} ({value - base:+.3f}), worse than the baseline "
                    f"by more than the tolerance {tolerance:.3f}"
                )
            ex = (card.get("exercise") or {}).get(tag, {}).get(dim) or {}
            if ex.get("missed"):
                failures.append(
                    f"not exercised: {', '.join(ex['missed'])} planned {dim.replace('_', '-')}s "
                    "that never happened (the agent's turn ended before the caller's planned "
                    "moment), so its score is no evidence"
                )
            result.cells.append(Cell(tag, dim, value, base, floor, tuple(failures)))
    for tag, dims in base_tags.items():
        for dim in dims:
            if tag not in card.get("tags", {}) or dim not in card["tags"][tag]:
                result.problems.append(f"{dim} on {tag}: in the baseline but not in this run")
    result.tasks = task_checks(card, fl)
    return result


def task_checks(card: Mapping[str, Any], floors: Mapping[str, float]) -> list[TaskCheck]:
    """Every scored task of ``card`` (a scorecard's ``tasks``): failed when its verdict is
    ``fail`` or one of its dimensions is past its floor (void tasks are counted apart)."""
    out = []
    for t in card.get("tasks") or []:
        verdict = str(t.get("verdict"))
        if verdict == "void":
            continue
        failures = []
        if verdict != "pass":
            failures.append(f"verdict {verdict}")
        for dim, value in (t.get("dims") or {}).items():
            floor = floors.get(dim)
            if floor is None or not is_number(value):
                continue
            if dim in LOWER_IS_BETTER and value > floor:
                failures.append(f"{dim} {value:.3f} above its ceiling {floor:.3f}")
            elif dim not in LOWER_IS_BETTER and value < floor:
                failures.append(f"{dim} {value:.3f} below its floor {floor:.3f}")
        tags = tuple(str(x) for x in t.get("tags") or [])
        out.append(TaskCheck(str(t.get("task_id")), tags, verdict, tuple(failures)))
    return out


def junit_xml(result: GateResult, *, suite_name: str = "turnscope gate") -> str:
    """One JUnit test case per dimension x tag, one per scored task (classname
    ``turnscope.task``), plus run-level problems."""
    failures = (
        sum(1 for c in result.cells if not c.passed)
        + len(result.problems)
        + len(result.failed_tasks())
    )
    root = ET.Element(
        "testsuite",
        name=suite_name,
        tests=str(len(result.cells) + len(result.problems) + len(result.tasks)),
        failures=str(failures),
    )
    for t in result.tasks:
        case = ET.SubElement(root, "testcase", classname="turnscope.task", name=t.task_id)
        if t.failures:
            message = f"task {t.task_id}: " + "; ".join(t.failures)
            ET.SubElement(case, "failure", message=message).text = message
        else:
            ET.SubElement(case, "system-out").text = f"verdict {t.verdict}"
    for c in result.cells:
        case = ET.SubElement(root, "testcase", classname=f"turnscope.{c.tag}", name=c.dim)
        if c.failures:
            node = ET.SubElement(
                case, "failure", message=f"{c.dim} on {c.tag}: " + "; ".join(c.failures)
            )
            node.text = "; ".join(c.failures)
        else:
            info = f"{c.value:.3f}" + (
                f" (baseline {c.baseline:.3f})" if c.baseline is not None else ""
            )
            ET.SubElement(case, "system-out").text = info
    for i, problem in enumerate(result.problems):
        case = ET.SubElement(root, "testcase", classname="turnscope.run", name=f"run-{i}")
        ET.SubElement(case, "failure", message=problem).text = problem
    return ET.tostring(root, encoding="unicode", xml_declaration=True)
