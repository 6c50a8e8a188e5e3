"""The CI gate: a scorecard against its floors and a pinned baseline, per dimension per tag.

A cell (dimension x tag) fails when it is below its floor, or worse than the baseline by more
than the tolerance. Every cell that moved is reported, better or worse, so a change that helps
one tag and hurts another shows both. A task that failed its verdict, has a dimension below its
floor, or a dimension worse than the baseline's value for that task by more than the tolerance,
fails the gate by its name whatever the means say (one task that got worse among many moves no
mean far). A run where nothing was scored fails, saying so. A baseline keeps every task's
values (``baseline_of``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from xml.etree import ElementTree as ET

from turnscope.scoring.suites.defaults import DEFAULT_TOLERANCE
from turnscope.scoring.suites.fixtures import GatedDim
from turnscope.scoring.suites.scorecard import LOWER_IS_BETTER, OUTCOME_DIMS, VERIFIER_DIMS
from turnscope.scoring.suites.turn_taking_gate import METRICS, metric_text, turn_taking_cells
from turnscope.scoring.verifier import PASS_FLOOR

DEFAULT_FLOORS: dict[str, float] = {
    **dict.fromkeys(VERIFIER_DIMS, PASS_FLOOR),
    "wer": 0.5,  # a ceiling: WER above this fails
    **dict.fromkeys(OUTCOME_DIMS, PASS_FLOOR),
}
assert set(GatedDim.__args__) == set(DEFAULT_FLOORS)  # type: ignore[attr-defined]


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

    @property
    def worse(self) -> bool:
        """Worse than the baseline (by any amount: within the tolerance it still passes)."""
        return self.delta is not None and worse_by(self.dim, self.value, self.baseline or 0) > 0

    def change(self) -> str:
        """'latency on acoustic: 1.000 -> 0.972 (-0.028) worse, within the tolerance'; a timing
        metric in ms ('takeover_latency_ms on all: 1649 ms -> 1659 ms (+10 ms) worse, ...')."""
        within = " worse, within the tolerance" if self.worse and self.passed else ""
        before, after = _text(self.dim, self.baseline or 0), _text(self.dim, self.value)
        delta = _text(self.dim, self.delta or 0, "+")
        return f"{self.dim} on {self.tag}: {before} -> {after} ({delta}){within}"


@dataclass(frozen=True)
class TaskMove:
    """One dimension of one task that moved against the baseline's value for that task."""

    dim: str
    baseline: float
    value: float

    @property
    def worse_by(self) -> float:
        return worse_by(self.dim, self.value, self.baseline)


@dataclass(frozen=True)
class TaskCheck:
    """One scored task of the run: its verdict, the floors it failed, what moved against its
    baseline, why it failed (the verifier's facts) and how long it ran."""

    task_id: str
    tags: tuple[str, ...]
    verdict: str
    failures: tuple[str, ...]
    moved: tuple[TaskMove, ...] = ()
    reason: str = ""
    duration_s: float | None = None

    @property
    def passed(self) -> bool:
        return not self.failures

    def detail(self) -> str:
        """Each failure, then why (the verifier's facts), on one line."""
        return "; ".join(self.failures) + (f" ({self.reason})" if self.reason else "")

    def message(self) -> str:
        """``task ID: each failure (why)``: JUnit's failure message."""
        return f"task {self.task_id}: {self.detail()}"


@dataclass
class GateResult:
    cells: list[Cell] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # run-level failures (nothing scored)
    tasks: list[TaskCheck] = field(default_factory=list)
    # Tags whose means were not held to the baseline's, each with why: it is another set of
    # tasks now (its tasks are each still held to their own pinned values).
    not_compared: dict[str, str] = field(default_factory=dict)

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


def worse_by(dim: str, value: float, baseline: float) -> float:
    """How much worse value is than baseline (positive = worse); a turn-taking metric by its
    own direction (a longer takeover latency is worse, not better)."""
    metric = METRICS.get(dim)
    low = dim in LOWER_IS_BETTER or (metric is not None and metric.lower_is_better)
    return value - baseline if low else baseline - value


def _text(dim: str, value: float, sign: str = "") -> str:
    """A cell's value as the gate prints it: a timing metric in whole ms, a score to 3 places."""
    metric = METRICS.get(dim)
    return f"{value:{sign}.3f}" if metric is None else metric_text(metric, value, sign)


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
    result.not_compared = changed_tags(card, baseline)
    for tag, dims in card.get("tags", {}).items():
        for dim, value in dims.items():
            base = None if tag in result.not_compared else base_tags.get(tag, {}).get(dim)
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
            if base is not None and worse_by(dim, value, base) > tolerance:
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
    kept = {
        **(baseline or {}),
        "turn_taking": {t: row for t, row in ((baseline or {}).get("turn_taking") or {}).items()
                        if t not in result.not_compared},
    }  # fmt: skip
    result.cells += turn_taking_cells(card, kept, fl, tolerance)  # issue 32's metrics
    base_tasks = _tasks_by_id(baseline)
    result.tasks = task_checks(card, fl, base_tasks, tolerance)
    ran = {str(t.get("task_id")) for t in card.get("tasks") or []}
    for tid in base_tasks:
        if tid not in ran:
            result.problems.append(
                f"task {tid}: in the baseline but not in this run (re-pin the baseline when "
                "the suite dropped it on purpose)"
            )
    return result


def changed_tags(card: Mapping[str, Any], baseline: Mapping[str, Any] | None) -> dict[str, str]:
    """The tags that hold another set of tasks than in ``baseline`` (by task id where both
    list their tasks, else by how many), each with why: a mean over other tasks is no
    comparison (a fixture whose caller voice now implies ``speaker`` moved a tag's WER 0.196
    -> 0.315 with no task's WER worse)."""
    if not baseline:
        return {}
    still = (
        "each of its tasks is still held to its own pinned values"
        if baseline.get("tasks")
        else "this baseline keeps no task's values (pinned by an older turnscope): re-pin it"
    )
    out = {}
    for tag in set(card.get("tags") or {}) & set(baseline.get("tags") or {}):
        now, then = _members(card, tag), _members(baseline, tag)
        if now is not None and then is not None and now != then:
            added, gone = sorted(now - then), sorted(then - now)
            out[tag] = "its tasks changed since the baseline" + "".join(
                f"; {what} {', '.join(ids)}" for what, ids in (("added", added), ("gone", gone))
                if ids
            ) + f"; {still}"  # fmt: skip
            continue
        n_now, n_then = (_count(c, tag) for c in (card, baseline))
        if n_now is not None and n_then is not None and n_now != n_then:
            out[tag] = f"it holds {n_now} task(s) now, {n_then} in the baseline; {still}"
    return out


def _members(card: Mapping[str, Any], tag: str) -> set[str] | None:
    tasks = card.get("tasks")
    if not tasks:
        return None  # a baseline pinned before baselines kept their tasks
    return {str(t.get("task_id")) for t in tasks if tag == "all" or tag in (t.get("tags") or [])}


def _count(card: Mapping[str, Any], tag: str) -> int | None:
    n = ((card.get("counts") or {}).get(tag) or {}).get("tasks")
    return n if isinstance(n, int) else None


def _tasks_by_id(card: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
    return {str(t.get("task_id")): t for t in (card or {}).get("tasks") or []}


def baseline_of(card: Mapping[str, Any]) -> dict[str, Any]:
    """What a pinned baseline keeps of a run's scorecard: the tag x dimension means and every
    task's verdict and values (so the gate names a task that moved), not its links or notes."""
    keep = ("task_id", "tags", "verdict", "dims")
    pinned = {k: v for k, v in card.items() if k not in ("tasks", "runs")}
    pinned["tasks"] = [{k: t.get(k) for k in keep} for t in card.get("tasks") or []]
    return pinned


def task_floors(floors: Mapping[str, float], task: Mapping[str, Any]) -> dict[str, float]:
    """The floors a scorecard task row is held to: its fixture's own over ``floors``."""
    return {**floors, **(task.get("floors") or {})}


def task_checks(
    card: Mapping[str, Any],
    floors: Mapping[str, float],
    baseline: Mapping[str, Mapping[str, Any]] | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
) -> list[TaskCheck]:
    """Every scored task of ``card`` (a scorecard's ``tasks``): failed when its verdict is
    ``fail``, one of its dimensions is past its floor, or worse than the same task's value in
    ``baseline`` (``{task_id: task row}``) by more than ``tolerance`` (void tasks are counted
    apart)."""
    out = []
    for t in card.get("tasks") or []:
        own = task_floors(floors, t)
        verdict = str(t.get("verdict"))
        pinned = (baseline or {}).get(str(t.get("task_id"))) or {}
        if verdict == "void":
            if pinned.get("verdict") in ("pass", "fail"):  # evidence the baseline had is lost
                out.append(_lost(t))
            continue
        failures = []
        if verdict != "pass":
            failures.append(f"verdict {verdict}")
        dims = t.get("dims") or {}
        for dim, value in dims.items():
            floor = own.get(dim)
            if floor is None or not is_number(value):
                continue
            if dim in LOWER_IS_BETTER and value > floor:
                failures.append(f"{dim} {value:.3f} above its ceiling {floor:.3f}")
            elif dim not in LOWER_IS_BETTER and value < floor:
                failures.append(f"{dim} {value:.3f} below its floor {floor:.3f}")
        moved = _task_moves(dims, pinned)
        failures += [
            f"{m.dim} {m.baseline:.3f} -> {m.value:.3f} ({m.value - m.baseline:+.3f}), worse than "
            f"its baseline by more than the tolerance {tolerance:.3f}"
            for m in moved
            if m.worse_by > tolerance
        ]
        out.append(
            TaskCheck(
                str(t.get("task_id")),
                tuple(str(x) for x in t.get("tags") or []),
                verdict,
                tuple(failures),
                moved,
                str(t.get("reason") or ""),
                t.get("duration_s") if is_number(t.get("duration_s")) else None,
            )
        )
    return out


def _lost(task: Mapping[str, Any]) -> TaskCheck:
    """A task the baseline scored that is void in this run (its call degraded, its fixture
    gone): no evidence is not a pass."""
    why = str(task.get("note") or "no transcript")
    return TaskCheck(
        str(task.get("task_id")),
        tuple(str(x) for x in task.get("tags") or []),
        "void",
        (f"void in this run ({why}), scored in the baseline: nothing shows it still passes",),
        duration_s=task.get("duration_s") if is_number(task.get("duration_s")) else None,
    )


def _task_moves(dims: Mapping[str, Any], base: Mapping[str, Any]) -> tuple[TaskMove, ...]:
    """The dimensions of a task whose value differs from its baseline's (both numbers)."""
    base_dims = base.get("dims") or {}
    return tuple(
        TaskMove(dim, float(base_dims[dim]), float(value))
        for dim, value in dims.items()
        if is_number(value) and is_number(base_dims.get(dim)) and value != base_dims[dim]
    )


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
        time=f"{sum(t.duration_s or 0.0 for t in result.tasks):.3f}",
    )
    for t in result.tasks:
        case = ET.SubElement(root, "testcase", classname="turnscope.task", name=t.task_id)
        if t.duration_s is not None:  # how long its call or replay ran
            case.set("time", f"{t.duration_s:.3f}")
        if t.failures:
            message = t.message()
            ET.SubElement(case, "failure", message=message, type="turnscope.task").text = message
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
