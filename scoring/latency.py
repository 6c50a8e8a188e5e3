"""Why a reply took as long as it did, from the caller's side: each ear-measured reply gap
split by the agent's own events into endpointing, processing and delivery.

    caller's speech ends (heard) -> the agent decides the caller has finished: endpointing
    -> the agent starts speaking (its own event): processing
    -> its first sample is heard by the caller: delivery (transport, jitter buffer, playout)

The agent's events are on the call clock either as they arrived (RTVI on the data channel: the
agent sent each ``one_way_ms`` earlier, an estimate from the measured round trip, uncertain by
``uncertainty_ms``) or as aligned from the agent's own log (``--agent-trace``). The parts sum to
the verifier's latency by construction: delivery is what is left; which parts carry the
estimate is said. Plain code: the events in, the breakdown out.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any, Literal

from turnscope.scoring.stats import median
from turnscope.scoring.verifier import verifier_facts

Source = Literal["rtvi", "agent_trace", "otlp"]
DECIDED = ("user_stopped_speaking",)
STARTED = ("bot_started_speaking",)
# An agent that reports no start of speaking (OpenTelemetry spans): its TTS's first byte instead.
STARTED_ELSE = ("tts_first_byte",)


class Point(str, Enum):
    """The moments of one reply, in the order they normally come (the hops run between them)."""

    CALLER_END = "caller_end_heard"
    TURN_END = "turn_end"  # the agent's turn decision
    STT_FINAL = "stt_final"
    LLM_FIRST_TOKEN = "llm_first_token"
    TTS_FIRST_BYTE = "tts_first_byte"
    AGENT_STARTED = "agent_started"  # the agent's own start of speaking (RTVI, its log)
    FIRST_HEARD = "first_sample_heard"

    @property
    def label(self) -> str:
        """How a page or a terminal names it."""
        return POINT_LABELS[self]


POINT_LABELS = {
    Point.CALLER_END: "caller end",
    Point.TURN_END: "turn end",
    Point.STT_FINAL: "stt final",
    Point.LLM_FIRST_TOKEN: "llm first token",
    Point.TTS_FIRST_BYTE: "tts first byte",
    Point.AGENT_STARTED: "agent started",
    Point.FIRST_HEARD: "heard",
}

# the agent's event names that are points of a reply (the others are the decision and start)
POINT_EVENTS = {
    "stt_final": Point.STT_FINAL,
    "llm_first_token": Point.LLM_FIRST_TOKEN,
    "tts_first_byte": Point.TTS_FIRST_BYTE,
}


@dataclass
class Hop:
    """The time between two of a reply's points; ``to`` FIRST_HEARD from the agent's last point
    is the unaccounted part (transport, jitter buffer, queueing, playout: no span covers it)."""

    start: Point
    to: Point
    ms: float


# How far before the caller's speech end a turn decision may be logged and still be this reply's
# (an agent that decides early, on a pause, then waits it out).
EARLY_DECISION_MS = 300
# An RTVI start of speaking that came this much later, against the audio heard, than the call's
# other replies say it comes: a delayed message (a busy agent's, in a load run: 78-88 ms), not
# a split (a stock pipecat bot's sit within ~25 ms of each other, even beside busy loops).
LATE_START_MS = 60.0


@dataclass(frozen=True)
class AgentEvent:
    """One event of the agent's, on the call clock (``at_ms``: when it happened at the agent,
    as far as turnscope can tell)."""

    at_ms: float
    name: str  # user_stopped_speaking, bot_started_speaking, ... (RTVI names, snake case)
    value_ms: float | None = None  # a metric (ttfb) the agent reported with it


@dataclass
class ReplySplit:
    """One reply's latency, split."""

    caller_turn: int
    agent_turn: int
    latency_ms: int
    endpointing_ms: float | None = None
    processing_ms: float | None = None
    delivery_ms: float | None = None
    decided_at_ms: float | None = None  # the agent's turn decision, call clock
    started_at_ms: float | None = None  # the agent's own start of speaking, call clock
    ttfb_ms: list[float] = field(default_factory=list)  # the agent's own metrics in between
    estimated: list[str] = field(default_factory=list)  # parts that carry the one-way estimate
    missing: str | None = None  # why this reply has no split
    # caller end heard -> turn end -> stt final -> llm first token -> tts first byte -> heard,
    # the points the agent reported, in time order: the hops sum to latency_ms
    hops: list[Hop] = field(default_factory=list)
    unaccounted_ms: float | None = None  # the last hop: what none of the agent's events covers

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if v is not None and v != []}
        if self.hops:
            out["hops"] = [{"from": h.start.value, "to": h.to.value, "ms": h.ms} for h in self.hops]
        return out


@dataclass
class Breakdown:
    """Every reply's split, what it rests on, and whether it can be trusted."""

    source: Source | None
    replies: list[ReplySplit]
    one_way_ms: float | None = None
    uncertainty_ms: float | None = None
    reliable: bool = True
    reasons: list[str] = field(default_factory=list)  # why it is unreliable or absent
    note: str = ""

    def medians(self) -> dict[str, float]:
        """The median endpointing / processing / delivery of the replies that were split."""
        split = [r for r in self.replies if r.missing is None]
        if not split:
            return {}
        parts = ("endpointing", "processing", "delivery")
        return {k: median(getattr(r, f"{k}_ms") for r in split) or 0.0 for k in parts}

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "reliable": self.reliable,
            "reasons": self.reasons,
            "one_way_ms": self.one_way_ms,
            "uncertainty_ms": self.uncertainty_ms,
            "note": self.note,
            "replies": [r.to_dict() for r in self.replies],
        }


def normal_name(name: str) -> str:
    """``user-stopped-speaking`` and ``UserStoppedSpeaking``-style names as snake case."""
    out = []
    for i, c in enumerate(name.strip()):
        if c.isupper() and i and name[i - 1].islower():
            out.append("_")
        out.append("_" if c in "- ." else c.lower())
    return "".join(out)


def _last_within(times: Sequence[float], lo: float, hi: float) -> float | None:
    """The last of the sorted ``times`` in [lo, hi], or None."""
    i = bisect.bisect_right(times, hi)
    return times[i - 1] if i and times[i - 1] >= lo else None


NO_START = "no bot-started-speaking from the agent for it"
NO_DECISION = "no turn decision (user-stopped-speaking) from the agent for it"


def _after_heard(
    times: Sequence[float], heard: float, until: float, what: str, rtvi: bool
) -> str | None:
    """Why a reply has no ``what`` (the agent's turn decision or start of speaking) before it
    was heard, when one came only while the reply was being heard (up to ``until``, its turn's
    end); None when none came. An RTVI message arrives late, as one can from a busy agent; an
    agent's own log or spans stamp it late (a starved pipecat bot's tts span began 22-49 ms
    after its audio was heard). Split at it, a part would come out negative."""
    i = bisect.bisect_right(times, heard)
    if i < len(times) and times[i] <= until:
        late = times[i] - heard
        if rtvi:
            return f"the agent's {what} came {late:.0f} ms after the reply was heard"
        return f"the agent's {what} is stamped {late:.0f} ms after the reply was heard"
    return None


def _unsplit_late_starts(replies: list[ReplySplit]) -> None:
    """Over three or more split replies of a call, one whose delivery is LATE_START_MS or more
    under their median had its start of speaking arrive late: split at it, its processing
    would be over-stated by that much (and its last hop under-stated), so it is not split."""
    split = [k for k, r in enumerate(replies) if r.missing is None]
    if len(split) < 3:
        return
    typical = median(replies[k].delivery_ms or 0.0 for k in split) or 0.0
    for k in split:
        r = replies[k]
        short = typical - (r.delivery_ms or 0.0)
        if short >= LATE_START_MS:
            replies[k] = ReplySplit(r.caller_turn, r.agent_turn, r.latency_ms, missing=(
                f"the agent's bot-started-speaking came {short:.0f} ms later, against its "
                "audio, than in the call's other replies (a delayed message)"))  # fmt: skip


def split_latency(
    dialogue: Sequence[Mapping[str, Any]],
    events: Sequence[AgentEvent],
    *,
    source: Source,
    one_way_ms: float = 0.0,
    uncertainty_ms: float | None = None,
    problems: Sequence[str] = (),
) -> Breakdown:
    """Each reply the verifier pairs (caller turn -> agent turn), split by ``events``.

    With ``source`` rtvi the events are arrival times: the agent's moments are taken
    ``one_way_ms`` earlier. Endpointing and delivery then carry that estimate, processing
    does not (both its ends came the same way)."""
    facts = verifier_facts(dialogue)
    shift = one_way_ms if source == "rtvi" else 0.0
    decided = sorted(e.at_ms - shift for e in events if e.name in DECIDED)
    started = sorted(e.at_ms - shift for e in events if e.name in STARTED) or sorted(
        e.at_ms - shift for e in events if e.name in STARTED_ELSE
    )
    points = sorted(
        (e.at_ms - shift, POINT_EVENTS[e.name]) for e in events if e.name in POINT_EVENTS
    )
    ttfb = sorted((e.at_ms - shift, e.value_ms) for e in events if e.value_ms is not None)
    replies = []
    for gap in facts.gaps:
        c, a = dialogue[gap.caller], dialogue[gap.agent]
        end, start = int(c["end_ms"]), int(a["start_ms"])
        split = ReplySplit(gap.caller, gap.agent, gap.gap_ms)
        replies.append(split)
        if gap.gap_ms < 0:
            split.missing = "the agent started before the caller finished (talked over)"
            continue
        # The agent's decision about this caller turn (its last in the window), and its start
        # of speaking for this reply: found by bisection, the events being sorted (scanning
        # them all for every reply was quadratic in a long call).
        d = _last_within(decided, end - EARLY_DECISION_MS, start)
        rtvi, until = source == "rtvi", a["end_ms"]
        if d is None:  # one after a caller turn begun in the reply would be about that turn
            cut = [float(t["start_ms"]) for t in dialogue[gap.agent + 1 :]
                   if t.get("speaker") == "caller"]  # fmt: skip
            by = min([until, *cut])
            late = _after_heard(decided, start, by, "user-stopped-speaking", rtvi)
            split.missing = late or NO_DECISION
            continue
        s = _last_within(started, d, start + tolerance(uncertainty_ms))
        if s is None:
            late = _after_heard(started, start, until, "bot-started-speaking", rtvi)
            split.missing = late or NO_START
            continue
        split.decided_at_ms, split.started_at_ms = round(d, 1), round(s, 1)
        split.endpointing_ms = round(d - end, 1)
        split.processing_ms = round(s - d, 1)
        split.delivery_ms = round(gap.gap_ms - split.endpointing_ms - split.processing_ms, 1)
        lo = bisect.bisect_left(ttfb, d, key=lambda x: x[0])
        hi = bisect.bisect_right(ttfb, s + 50, key=lambda x: x[0])
        split.ttfb_ms = [round(v, 1) for _, v in ttfb[lo:hi]]
        _hops(split, end, d, s, start, points)
        if source == "rtvi":
            split.estimated = ["endpointing", "delivery"]
    if source == "rtvi":
        _unsplit_late_starts(replies)
    reasons = list(problems)
    split_any = any(r.missing is None for r in replies)
    if replies and not split_any:
        reasons.append(f"no reply could be split: {replies[0].missing}")
    impossible = [
        r
        for r in replies
        if r.missing is None
        and min(r.endpointing_ms or 0, r.delivery_ms or 0) < -tolerance(uncertainty_ms)
    ]
    if impossible:
        reasons.append(
            f"{len(impossible)} repl{'y' if len(impossible) == 1 else 'ies'} with a negative part "
            "(the agent's clock and the call's do not line up)"
        )
    note = (
        f"endpointing and delivery carry the one-way delay estimate ({one_way_ms:.1f} ms, "
        f"half the measured round trip, +/- {uncertainty_or(uncertainty_ms):.1f} ms); "
        "processing does not"
        if source == "rtvi"
        else "the agent's own log, aligned to the call clock"
    )
    return Breakdown(
        source,
        replies,
        one_way_ms=round(one_way_ms, 1) if source == "rtvi" else None,
        uncertainty_ms=None if uncertainty_ms is None else round(uncertainty_ms, 1),
        reliable=not reasons,
        reasons=reasons,
        note=note,
    )


def _hops(
    split: ReplySplit,
    end: float,
    decided: float,
    started: float,
    heard: float,
    points: Sequence[tuple[float, Point]],
) -> None:
    """The reply's points between the caller's end and the agent's start (the last of each kind
    in the window), in time order, and the hops between them: they sum to the latency."""
    lo = bisect.bisect_left(points, end - EARLY_DECISION_MS, key=lambda p: p[0])
    hi = bisect.bisect_right(points, started + 1.0, key=lambda p: p[0])
    last: dict[Point, float] = {}
    for t, p in points[lo:hi]:
        last[p] = t
    marks = [(end, Point.CALLER_END), (decided, Point.TURN_END)]
    marks += [(t, p) for p, t in last.items()]
    if Point.TTS_FIRST_BYTE not in last or started != last[Point.TTS_FIRST_BYTE]:
        marks.append((started, Point.AGENT_STARTED))
    marks = [*sorted(marks, key=lambda m: m[0]), (heard, Point.FIRST_HEARD)]
    split.hops = [Hop(a[1], b[1], round(b[0] - a[0], 1)) for a, b in itertools.pairwise(marks)]
    # rounding each hop may leave a tenth over: the last absorbs it, so they sum to the latency
    drift = round(split.latency_ms - sum(h.ms for h in split.hops), 1)
    split.hops[-1].ms = round(split.hops[-1].ms + drift, 1)
    split.unaccounted_ms = split.hops[-1].ms


def uncertainty_or(value: float | None) -> float:
    return 0.0 if value is None else value


def tolerance(uncertainty_ms: float | None) -> float:
    """How negative a part may be and still be noise: the estimate's uncertainty, 5 ms at least."""
    return max(5.0, uncertainty_or(uncertainty_ms))


def rtvi_events(record: Mapping[str, Any] | None) -> list[AgentEvent]:
    """The RTVI events a WebRTC call heard (source.details.rtvi), as agent events."""
    out = []
    for e in (record or {}).get("events", []):
        name = normal_name(str(e.get("type", "")))
        out.append(AgentEvent(float(e["at_ms"]), name))
        for item in ((e.get("data") or {}).get("ttfb") or []) if name == "metrics" else []:
            out.append(AgentEvent(float(e["at_ms"]), "ttfb", float(item["value"]) * 1000))
    return out


def summary_line(split: ReplySplit) -> str:
    """'endpointing 640 / processing 310 / delivery 120 ms' (~ marks a part with an estimate)."""
    if split.missing is not None:
        return ""
    parts = []
    for name in ("endpointing", "processing", "delivery"):
        value = getattr(split, f"{name}_ms")
        mark = "~" if name in split.estimated else ""
        parts.append(f"{name} {mark}{value:.0f}")
    return " / ".join(parts) + " ms"
