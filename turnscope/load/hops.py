"""Each reply's hops across a load run's calls: per hop (turn end -> llm first token, llm ->
tts first byte, the unaccounted part, ...) its percentiles, and its median by how many calls
were up when the reply came, so the hop that grows under load is named."""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel, Field

from turnscope.load.record import CallRecord
from turnscope.load.stats import Percentiles
from turnscope.otlp.records import SpansBy
from turnscope.scoring.latency import Point
from turnscope.scoring.stats import median

ORDER = {p.value: k for k, p in enumerate(Point)}
LAST = Point.FIRST_HEARD.value
NAMES = {p.value: p.label for p in Point}
# A hop's median at a number of calls up is compared only over this many of its replies (one
# reply is no median), and named as grown under load only by this much: the split's own error
# under load (benchmarks/latency_breakdown.py --busy 4: p95 10-20 ms per part). Before, any
# rise was named: a 6-call run said the reference agent's endpointing "grew most under load"
# for 540 -> 544 ms.
MIN_LEVEL_REPLIES = 3
GROWTH_MIN_MS = 20.0


class Level(BaseModel):
    """A hop's replies that came while ``calls_up`` calls were connected."""

    calls_up: int
    n: int
    p50: float


class HopStats(BaseModel):
    """One hop (from one point of a reply to the next) over every reply that had it."""

    start: str
    to: str
    name: str  # "turn end -> llm first token"
    ms: Percentiles
    by_calls_up: list[Level] = Field(default_factory=list)
    # the median at the most calls up minus at the fewest, over the levels with at least
    # MIN_LEVEL_REPLIES replies (None: fewer than two such levels)
    growth_ms: float | None = None
    compared: list[int] = Field(default_factory=list)  # those two levels' calls up


class HopsReport(BaseModel):
    """load.json ``hops``: the replies split hop by hop, across calls."""

    calls: int  # calls with hops
    replies: int
    sources: dict[str, int] = Field(default_factory=dict)  # what split them -> calls
    hops: list[HopStats] = Field(default_factory=list)
    unaccounted_ms: Percentiles  # the last hop of every reply, whatever point it starts from
    # the hop whose median grew most with the calls up, by GROWTH_MIN_MS or more
    grows_most: str | None = None
    calls_without: int = 0  # completed calls whose replies have no hops
    replies_without: int = 0  # replies of the calls with hops that could not be split
    not_separable: int = 0  # --otlp: calls whose spans could not be told from the others'


def hop_name(start: str, to: str) -> str:
    return f"{NAMES.get(start, start)} -> {NAMES.get(to, to)}" + (
        " (unaccounted)" if to == LAST else ""
    )


class _Up:
    """How many calls were connected at a moment of the run (by bisection: a long run has
    thousands of calls and tens of thousands of replies)."""

    def __init__(self, records: Sequence[CallRecord]):
        up = [r for r in records if r.connected_s is not None]
        self.starts = sorted(r.connected_s or 0.0 for r in up)
        self.ends = sorted(r.ended_s for r in up if r.ended_s is not None)

    def at(self, t: float) -> int:
        return bisect.bisect_right(self.starts, t) - bisect.bisect_right(self.ends, t)


def hops_report(records: Sequence[CallRecord]) -> HopsReport | None:
    """The run's hops, or None when no call's replies were split into any."""
    values: dict[tuple[str, str], list[tuple[int, float]]] = {}
    unaccounted: list[float] = []
    with_hops = [r for r in records if any(x.hops for x in r.replies)]
    if not with_hops:
        return None
    calls_up = _Up(records)
    for r in with_hops:
        for x in r.replies:
            up = calls_up.at((r.connected_s or 0.0) + x.at_ms / 1000)
            for h in x.hops:
                values.setdefault((h.start, h.to), []).append((up, h.ms))
            if x.hops:
                unaccounted.append(x.hops[-1].ms)
    stats = [_stats(start, to, vs) for (start, to), vs in values.items()]
    stats.sort(key=lambda s: (ORDER.get(s.to, 99), ORDER.get(s.start, 99)))
    grown = [s for s in stats if s.growth_ms is not None]
    top = max(grown, key=lambda s: s.growth_ms or 0.0, default=None)
    completed = [r for r in records if r.status == "completed"]
    return HopsReport(
        calls=len(with_hops),
        replies=sum(1 for r in with_hops for x in r.replies if x.hops),
        sources=dict(Counter(r.breakdown_source or "?" for r in with_hops)),
        hops=stats,
        unaccounted_ms=Percentiles.of(unaccounted),
        grows_most=top.name if top is not None and (top.growth_ms or 0) >= GROWTH_MIN_MS else None,
        calls_without=sum(1 for r in completed if not any(x.hops for x in r.replies)),
        replies_without=sum(1 for r in with_hops for x in r.replies if not x.hops),
        not_separable=sum(1 for r in records if r.spans_by is SpansBy.NOT_SEPARABLE),
    )


def _stats(start: str, to: str, values: list[tuple[int, float]]) -> HopStats:
    by: dict[int, list[float]] = {}
    for up, ms in values:
        by.setdefault(up, []).append(ms)
    levels = [Level(calls_up=k, n=len(v), p50=round(median(v) or 0.0, 1))
              for k, v in sorted(by.items())]  # fmt: skip
    enough = [v for v in levels if v.n >= MIN_LEVEL_REPLIES]
    lo, hi = (enough[0], enough[-1]) if len(enough) > 1 else (None, None)
    return HopStats(start=start, to=to, name=hop_name(start, to),
                    ms=Percentiles.of([ms for _, ms in values]), by_calls_up=levels,
                    growth_ms=round(hi.p50 - lo.p50, 1) if lo and hi else None,
                    compared=[lo.calls_up, hi.calls_up] if lo and hi else [])  # fmt: skip


SOURCE_NAMES = {"rtvi": "RTVI", "otlp": "OpenTelemetry spans", "agent_trace": "a trace file"}


def sources_text(h: HopsReport) -> str:
    """What split the calls' replies: 'RTVI in 6 calls'."""
    return ", ".join(f"{SOURCE_NAMES.get(k, k)} in {n} call{'s' * (n != 1)}"
                     for k, n in h.sources.items())  # fmt: skip


def levels_cell(x: HopStats) -> str:
    """A hop's median by calls up, each with its replies: '4: 540 (1) · 6: 544 (22)'."""
    return " · ".join(f"{v.calls_up}: {v.p50:.0f} ({v.n})" for v in x.by_calls_up)


def growth_line(h: HopsReport) -> str | None:
    """What the hops say about load, in one line: the hop that grew most, or that none grew
    (None: no hop has two numbers of calls up with enough replies to compare)."""
    judged = [x for x in h.hops if x.compared]
    if not judged:
        return None
    grown = next((x for x in judged if x.name == h.grows_most), None)
    if grown is not None:
        lo, hi = (next(v for v in grown.by_calls_up if v.calls_up == k) for k in grown.compared)
        return (f"grew most under load: {grown.name}, p50 {lo.p50:.0f} ms at {lo.calls_up} "
                f"call(s) up -> {hi.p50:.0f} ms at {hi.calls_up}")  # fmt: skip
    ranges = {tuple(x.compared) for x in judged}
    where = f" from {judged[0].compared[0]} to {judged[0].compared[1]} calls up" if len(
        ranges) == 1 else ""  # fmt: skip
    return f"no hop grew under load (by {GROWTH_MIN_MS:.0f} ms or more of its p50{where})"


def not_separable_line(records: Sequence[CallRecord]) -> str | None:
    """One line for the run when some calls' spans could not be told apart (--otlp)."""
    n = sum(1 for r in records if r.spans_by is SpansBy.NOT_SEPARABLE)
    if not n:
        return None
    return (
        f"--otlp: the spans of {n} of {len(records)} call(s) are not separable (several "
        "calls' conversations overlapped and none of their spans names the call's session id "
        "or carrier stream/call sid): those calls have no hops; the agent can put the id in "
        "its spans' conversation.id"
    )
