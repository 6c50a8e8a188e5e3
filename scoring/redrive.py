"""A re-driven call set beside the recorded call it re-drives: the same caller (its own clips,
spoken when it spoke them), so what differs is the agent.

Both calls are read through the verifier's pairing (``verifier_facts``), in order: the k-th
timed reply of one beside the k-th of the other (its latency), the k-th caller reply gap (the
caller's start after the agent turn before it), the k-th barge-in (how long the agent went on)
and the k-th agent turn's words. Paired by order, not by time: today's agent may answer at other
moments, and a reply it skipped shifts every later pair (the counts say so).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from turnscope.asr.normalise import normalise
from turnscope.scoring.verifier import verifier_facts


@dataclass(frozen=True)
class Pair:
    """One measure of the recorded call beside the same measure of the new one (ms)."""

    index: int
    recorded: float | None
    new: float | None

    @property
    def diff(self) -> float | None:
        if self.recorded is None or self.new is None:
            return None
        return self.new - self.recorded


@dataclass(frozen=True)
class Said:
    """The k-th agent turn's words on each call, and whether they are the same words."""

    index: int
    recorded: str
    new: str

    @property
    def same(self) -> bool:
        return normalise(self.recorded) == normalise(self.new)


@dataclass
class Comparison:
    """The new call beside the recorded one."""

    latencies: list[Pair] = field(default_factory=list)
    caller_gaps: list[Pair] = field(default_factory=list)
    barge_in_yields: list[Pair] = field(default_factory=list)
    said: list[Said] = field(default_factory=list)
    counts: dict[str, tuple[int, int]] = field(default_factory=dict)  # recorded, new

    @property
    def latency_median_abs_diff_ms(self) -> float | None:
        """The median of |new - recorded| over the replies timed on both calls."""
        return median_abs(self.latencies)

    @property
    def latency_median_diff_ms(self) -> float | None:
        """The median of new - recorded (positive: the new agent answers later)."""
        diffs = [p.diff for p in self.latencies if p.diff is not None]
        return statistics.median(diffs) if diffs else None


def median_abs(pairs: Sequence[Pair]) -> float | None:
    diffs = [abs(p.diff) for p in pairs if p.diff is not None]
    return statistics.median(diffs) if diffs else None


def _pairs(recorded: Sequence[float | None], new: Sequence[float | None]) -> list[Pair]:
    n = max(len(recorded), len(new))
    return [
        Pair(k, recorded[k] if k < len(recorded) else None, new[k] if k < len(new) else None)
        for k in range(n)
    ]


@dataclass(frozen=True)
class _Measures:
    latencies: list[float]
    gaps: list[float]
    yields: list[float | None]
    said: list[str]
    counts: dict[str, int]


def _measures(turns: Sequence[Mapping[str, Any]]) -> _Measures:
    facts = verifier_facts(turns)
    gaps = []
    for k, turn in enumerate(turns):
        if turn.get("speaker") != "caller" or turn.get("interrupt"):
            continue
        before = [t for t in turns[:k] if t.get("speaker") == "agent"]
        if before and before[-1]["end_ms"] <= turn["start_ms"]:
            gaps.append(float(turn["start_ms"]) - float(before[-1]["end_ms"]))
    barges = facts.barge_ins
    agents = [str(t.get("text") or "") for t in turns if t.get("speaker") == "agent"]
    return _Measures(
        latencies=[float(g.gap_ms) for g in facts.gaps],
        gaps=gaps,
        yields=[None if b.yield_ms is None else float(b.yield_ms) for b in barges],
        said=agents,
        counts={
            "caller turns": sum(t.get("speaker") == "caller" for t in turns),
            "agent turns": len(agents),
            "barge-ins": len(barges),
            "barge-ins the agent yielded to": sum(1 for b in barges if b.handled),
        },
    )


def compare(recorded: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]) -> Comparison:
    """The new call's turns (the verifier's shape) beside the recorded call's."""
    a, b = _measures(recorded), _measures(new)
    n = max(len(a.said), len(b.said))
    return Comparison(
        latencies=_pairs(a.latencies, b.latencies),
        caller_gaps=_pairs(a.gaps, b.gaps),
        barge_in_yields=_pairs(a.yields, b.yields),
        said=[
            Said(k, a.said[k] if k < len(a.said) else "", b.said[k] if k < len(b.said) else "")
            for k in range(n)
        ],
        counts={k: (a.counts[k], b.counts[k]) for k in a.counts},
    )
