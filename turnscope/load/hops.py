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
    # the median at the most calls up minus at the fewest (None: one level only)
    growth_ms: float | None = None


class HopsReport(BaseModel):
    """load.json ``hops``: the replies split hop by hop, across calls."""

    calls: int  # calls with hops
    replies: int
    sources: dict[str, int] = Field(default_factory=dict)  # what split them -> calls
    hops: list[HopStats] = Field(default_factory=list)
    unaccounted_ms: Percentiles  # the last hop of every reply, whatever point it starts from
    grows_most: str | None = None  # the hop whose median grew most with the calls up
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
        grows_most=top.name if top is not None and (top.growth_ms or 0) > 0 else None,
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
    growth = round(levels[-1].p50 - levels[0].p50, 1) if len(levels) > 1 else None
    return HopStats(start=start, to=to, name=hop_name(start, to),
                    ms=Percentiles.of([ms for _, ms in values]), by_calls_up=levels,
                    growth_ms=growth)  # fmt: skip


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
