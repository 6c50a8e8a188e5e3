"""Turn-taking on the scorecard and in the gate (issue 32): each task's Full-Duplex-Bench
measures (result.json's ``turn_taking``), averaged per tag, judged against per-tag limits and
the pinned baseline, every failure naming the metric.

The metrics sit beside the scorecard's dimensions (``card["turn_taking"]``), not among them: they
are not 0-1 scores (some are milliseconds, some are better lower), and a task that never met a
condition has no value for it ("not exercised"), never a 0 or a 1 that would move a mean.

Limits: ``--floor METRIC=X`` (every tag) or ``--floor METRIC@TAG=X`` (that tag; wins). A
lower-is-better metric fails above its limit, a higher-is-better one below it. Against a baseline,
a rate may be worse by the gate's tolerance, a timing by ``TIMING_TOLERANCE_MS`` or
``TIMING_TOLERANCE`` of the baseline, whichever is larger.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from turnscope.scoring.suites.gate import Cell
    from turnscope.scoring.suites.scorecard import TaskScores

TIMING_TOLERANCE_MS = 100.0
TIMING_TOLERANCE = 0.2


@dataclass(frozen=True)
class Metric:
    """One turn-taking metric on the scorecard: where result.json has it, which way is better."""

    name: str
    lower_is_better: bool
    timing: bool  # milliseconds (else a rate, 0-1)


METRICS = {
    m.name: m
    for m in (
        Metric("pause_tor", True, False),  # took the floor at a caller's pause
        Metric("backchannel_false_yield", True, False),  # stopped at a caller's "mm-hmm"
        Metric("smooth_tor", False, False),  # answered at the caller's end of turn
        Metric("interruption_tor", False, False),  # yielded to a barge-in and answered
        Metric("takeover_latency_ms", True, True),  # FDB's smooth turn-taking latency
        Metric("t_stop_ms", True, True),  # barge-in start -> the agent stopped
        Metric("t_resp_ms", True, True),  # barge-in start -> the agent's answer
        Metric("pause_talk_over_ms", True, True),  # agent speech over a caller resuming
    )
}


def task_metrics(tt: Mapping[str, Any] | None) -> dict[str, float]:
    """One task's metrics from its result.json ``turn_taking``: only those it exercised."""
    if not tt:
        return {}
    cond = tt.get("conditions") or {}

    def of(condition: str, key: str) -> Any:
        return (cond.get(condition) or {}).get(key)

    values = {
        "pause_tor": of("pause_handling", "tor"),
        "backchannel_false_yield": tt.get("backchannel_false_yield_rate"),
        "smooth_tor": of("smooth_turn_taking", "tor"),
        "interruption_tor": of("user_interruption", "tor"),
        "takeover_latency_ms": of("smooth_turn_taking", "latency_ms"),
        "t_stop_ms": tt.get("t_stop_ms"),
        "t_resp_ms": tt.get("t_resp_ms"),
        "pause_talk_over_ms": tt.get("pause_talk_over_ms"),
    }
    return {k: float(v) for k, v in values.items() if _number(v)}


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def card_section(tasks: Sequence[TaskScores], tags: Sequence[str]) -> dict[str, dict[str, float]]:
    """Per tag, each metric's mean over the scored tasks that measured it."""
    out: dict[str, dict[str, float]] = {}
    for tag in tags:
        members = [t for t in tasks if t.verdict != "void" and (tag == "all" or tag in t.tags)]
        row = {}
        for name in METRICS:
            vals = [t.turn_taking[name] for t in members if name in t.turn_taking]
            if vals:
                row[name] = round(sum(vals) / len(vals), 4)
        if row:
            out[tag] = row
    return out


def is_limit(name: str) -> bool:
    """``METRIC`` or ``METRIC@TAG`` naming a turn-taking metric (a ``--floor`` key)."""
    return name.partition("@")[0] in METRICS


def limit_problem(name: str, value: float) -> str | None:
    """What is wrong with ``--floor NAME=VALUE`` for a turn-taking metric (None: fine)."""
    metric, _, tag = name.partition("@")
    if "@" in name and not tag:
        return f"name the tag after @ ({metric}@TAG)"
    if METRICS[metric].timing:
        return None if value >= 0 else f"{metric} is in ms: give 0 or more"
    return None if 0.0 <= value <= 1.0 else f"{metric} is a rate: give 0 to 1"


def _limit(floors: Mapping[str, float], metric: str, tag: str) -> float | None:
    return floors.get(f"{metric}@{tag}", floors.get(metric))


def _allowed(m: Metric, base: float, tolerance: float) -> float:
    return max(TIMING_TOLERANCE_MS, TIMING_TOLERANCE * abs(base)) if m.timing else tolerance


def metric_text(m: Metric, v: float, sign: str = "") -> str:
    """A metric's value as the gate says it: a timing in whole ms, a rate to 3 places."""
    return f"{v:{sign}.0f} ms" if m.timing else f"{v:{sign}.3f}"


def turn_taking_cells(
    card: Mapping[str, Any],
    baseline: Mapping[str, Any] | None,
    floors: Mapping[str, float],
    tolerance: float,
) -> list[Cell]:
    """Every turn-taking metric on every tag of ``card``, judged (the gate's Cells, ``dim``
    the metric's name), plus one failing cell per metric the baseline measured and this run
    did not."""
    from turnscope.scoring.suites.gate import Cell

    table = card.get("turn_taking") or {}
    base_table = (baseline or {}).get("turn_taking") or {}
    cells = []
    for tag, row in table.items():
        for name, value in row.items():
            m = METRICS.get(name)
            if m is None or not _number(value):
                continue
            failures = []
            limit = _limit(floors, name, tag)
            if limit is not None and (value > limit if m.lower_is_better else value < limit):
                side = "above its ceiling" if m.lower_is_better else "below its floor"
                failures.append(f"{name} {metric_text(m, value)} is {side} {metric_text(m, limit)}")
            base = (base_table.get(tag) or {}).get(name)
            base = float(base) if _number(base) else None
            if base is not None:
                worse = value - base if m.lower_is_better else base - value
                allowed = _allowed(m, base, tolerance)
                if worse > allowed:
                    failures.append(
                        f"{name} {metric_text(m, base)} -> {metric_text(m, value)}, worse than "
                        f"the baseline by more than {metric_text(m, allowed)}"
                    )
            cells.append(Cell(tag, name, float(value), base, limit, tuple(failures)))
    for tag, row in base_table.items():
        for name, base in row.items():
            if name in METRICS and name not in (table.get(tag) or {}) and _number(base):
                why = (
                    f"{name} not exercised in this run (the baseline measured "
                    f"{metric_text(METRICS[name], float(base))}): the suite no longer provokes it"
                )
                cells.append(Cell(tag, name, math.nan, float(base), None, (why,)))
    return cells


def result_metrics(result_json: Path | None) -> dict[str, float]:
    """A finished run's metrics from its result.json (none when it was not written)."""
    if result_json is None or not result_json.is_file():
        return {}
    doc = json.loads(result_json.read_text(encoding="utf-8"))
    return task_metrics(doc.get("turn_taking") if isinstance(doc, dict) else None)


def synth_pauses(audio: Path) -> list[list[float]] | None:
    """The caller's pauses a rendered call planned (its truth.json beside call.wav): what a
    replay of it hands the metrics, as a live caller reports its own (None: no truth)."""
    truth = audio.with_name("truth.json")
    if not truth.is_file():
        return None
    doc = json.loads(truth.read_text(encoding="utf-8"))
    return [[float(p["start_ms"]), float(p["end_ms"])] for p in doc.get("pauses") or ()]


def synth_backchannels(audio: Path) -> list[list[float]] | None:
    """The caller's backchannels a rendered call made (its truth.json beside call.wav), for
    the replay's metrics (None: no truth)."""
    truth = audio.with_name("truth.json")
    if not truth.is_file():
        return None
    doc = json.loads(truth.read_text(encoding="utf-8"))
    return [[float(b["start_ms"]), float(b["end_ms"])] for b in doc.get("backchannels") or ()]
