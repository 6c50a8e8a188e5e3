"""The CI gate: a scorecard against its floors and a pinned baseline, per dimension per tag.

A cell (dimension x tag) fails when it is below its floor, or worse than the baseline by more
than the tolerance. Every cell that moved is reported, better or worse, so a change that helps
one tag and hurts another shows both. A run where nothing was scored fails, saying so.
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


@dataclass
class GateResult:
    cells: list[Cell] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # run-level failures (nothing scored)

    @property
    def passed(self) -> bool:
        return not self.problems and all(c.passed for c in self.cells)

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
    return result


def junit_xml(result: GateResult, *, suite_name: str = "turnscope gate") -> str:
    """One JUnit test case per dimension x tag (plus run-level problems)."""
    failures = sum(1 for c in result.cells if not c.passed) + len(result.problems)
    root = ET.Element(
        "testsuite",
        name=suite_name,
        tests=str(len(result.cells) + len(result.problems)),
        failures=str(failures),
    )
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
