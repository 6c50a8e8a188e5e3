"""A run's latency breakdown: its replies split by the agent's own events, from RTVI heard on
the call's data channel, from the agent's own log (``--agent-trace``) or from its OpenTelemetry
spans (``--otlp``'s agent_spans.json, or an OTLP file given as ``--agent-trace``): the last two
read, chosen and aligned by one code path (scoring/agent_trace.py)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from turnscope.errors import InputError
from turnscope.pipeline import PipelineResult
from turnscope.scoring.agent_trace import AgentTrace, CallTimes, read_agent_trace
from turnscope.scoring.latency import (
    AgentEvent,
    Breakdown,
    ReplySplit,
    rtvi_events,
    split_latency,
)
from turnscope.scoring.otlp_spans import FORMAT, AgentSpan, choose_call, sound, span_events
from turnscope.scoring.stats import median


def one_way_estimate(details: dict[str, Any]) -> tuple[float, float | None]:
    """Half the round trip the call measured (RTCP), and its uncertainty (the other half:
    the two directions need not be equal); (0, None) when nothing measured it."""
    rtts = [float(r) for r in details.get("round_trips_ms") or []]
    if not rtts:
        return 0.0, None
    rtt = median(rtts) or 0.0
    return rtt / 2, rtt / 2


TRACE_WAIT_S = 10.0  # an agent writes its log as its side of the call ends, just after ours


def call_times(result: PipelineResult) -> CallTimes:
    details = result.info.details
    agent = [t.start_ms for t in result.assembly.turns if t.speaker == "agent"]
    return CallTimes(
        details.get("clock_origin_monotonic"),
        details.get("clock_origin_unix"),
        result.audio_ms,
        agent_starts_ms=tuple(agent),
        # the agent's id for this call, when the transport recorded one (its spans carry it):
        # WebRTC's session id, a phone line's stream sid
        session=details.get("session_id") or (details.get("ids") or {}).get("stream"),
    )


async def await_trace(path: Path, result: PipelineResult) -> None:
    """Wait (at most TRACE_WAIT_S, on the loop: the call is still hanging up) until the agent's
    trace holds this call; it writes it as its side of the call ends, just after ours."""
    deadline = time.monotonic() + TRACE_WAIT_S
    times = call_times(result)
    if times.origin_monotonic is None and times.origin_unix is None:
        return  # a recording: its trace was written long ago
    while time.monotonic() < deadline:
        if _written_spans(path):
            return  # the receiver's file, written once whole: this call's, with or without spans
        with contextlib.suppress(InputError):
            if read_agent_trace(path, times).events:
                return
        await asyncio.sleep(0.2)


def _written_spans(path: Path) -> bool:
    """``path`` is an agent_spans.json already written (a receiver writes it once, whole)."""
    try:
        with path.open("rb") as f:
            head = f.read(256)
    except OSError:
        return False
    return FORMAT.encode() in head


def _realigned(
    result: PipelineResult, path: Path, trace: AgentTrace, first: Breakdown
) -> tuple[Breakdown, AgentTrace]:
    """A wall-clock trace from another machine whose clock is off (its parts come out
    impossible): lined up by its starts of speaking instead, the skew said."""
    times = call_times(result)
    moved = read_agent_trace(path, CallTimes(None, None, times.duration_ms, times.agent_starts_ms))
    if not moved.events:
        return first, trace
    b = split_latency(
        result.assembly.dialogue(), moved.events, source="agent_trace", problems=moved.problems
    )
    if not b.reliable:
        return first, trace
    skew = moved.events[0].at_ms - trace.events[0].at_ms
    moved.aligned_by = (
        f"its starts of speaking (its wall clock ran {-skew:+.0f} ms ahead of the call's)"
    )
    return b, moved


def latency_breakdown(result: PipelineResult, agent_trace: Path | None = None) -> Breakdown | None:
    """The breakdown of ``result``'s replies, or None when nothing from the agent is known."""
    details = result.info.details
    dialogue = result.assembly.dialogue()
    if agent_trace is not None:
        try:
            trace = read_agent_trace(agent_trace, call_times(result))
        except InputError as exc:
            return Breakdown("agent_trace", [], reliable=False, reasons=[str(exc)])
        b = split_latency(dialogue, trace.events, source="agent_trace", problems=trace.problems)
        if not b.reliable and trace.clock == "unix" and trace.events:
            b, trace = _realigned(result, agent_trace, trace, b)
        if trace.spans:  # OpenTelemetry spans (--otlp, or an OTLP file): the same path
            b.source = "otlp"
            b.note = f"the agent's OpenTelemetry spans ({trace.spans}), on the call clock"
        if trace.aligned_by:
            what = "OpenTelemetry spans" if trace.spans else "own log"
            b.note = f"the agent's {what}, aligned by {trace.aligned_by}"
            for r in b.replies:
                if r.missing is None:
                    r.estimated = ["endpointing", "delivery"]
        return b
    return rtvi_breakdown(details, dialogue)


def rtvi_breakdown(details: dict[str, Any], dialogue: list[dict[str, Any]]) -> Breakdown | None:
    """The split by the RTVI events a WebRTC call heard (so far, live), or None without any."""
    rtvi = details.get("rtvi")
    if not rtvi or not rtvi.get("events"):
        return None
    one_way, uncertainty = one_way_estimate(details)
    problems = list(rtvi.get("problems") or [])
    if uncertainty is None:
        problems.append("no round trip was measured: the one-way delay is unknown (taken as 0)")
    return split_latency(
        dialogue,
        rtvi_events(rtvi),
        source="rtvi",
        one_way_ms=one_way,
        uncertainty_ms=uncertainty,
        problems=problems,
    )


def span_breakdown(
    details: dict[str, Any],
    dialogue: list[dict[str, Any]],
    spans: Sequence[AgentSpan],
    origin_unix: float | None = None,
) -> Breakdown | None:
    """The split by the OpenTelemetry spans received so far (live, on the machine's clock: the
    receiver and the call share it; ``origin_unix``: the call clock's sample 0, else the one the
    call recorded), or None without a span or an origin. The file read after the call
    (``latency_breakdown``) is the breakdown of record."""
    origin = origin_unix if origin_unix is not None else details.get("clock_origin_unix")
    if not spans or origin is None:
        return None
    ok, _ = sound(spans)
    chosen, _ = choose_call(ok, None, details.get("session_id"))
    events = [AgentEvent((t - origin) * 1000, n, v) for t, n, v in span_events(chosen)]
    return split_latency(dialogue, sorted(events, key=lambda e: e.at_ms), source="otlp")


def hops_line(split: ReplySplit) -> str:
    """'turn end +640 · llm first token +310 · tts first byte +45 · heard +120 (unaccounted) ms':
    each hop by the point it reaches."""
    parts = [f"{h.to.label} +{h.ms:.0f}" for h in split.hops]
    if not parts:
        return ""
    return " · ".join(parts) + " (unaccounted) ms"


LIVE_TAIL = 24  # dialogue entries reconciled live: the recent replies, whatever the call's length
LIVE_MARGIN_S = 60.0  # spans ending this long before the tail's start are no longer looked at


class LiveSpanSplit:
    """The spans received so far reconciled with a call's recent replies, as the live view asks
    again and again: bounded work on the event loop however long the call (the last LIVE_TAIL
    dialogue entries, and the spans from a cursor that moves past the ones ended long before
    them; spans come in about the order they end). Older replies are in the breakdown read
    after the call."""

    def __init__(self) -> None:
        self._cursor = 0

    def __call__(
        self,
        details: dict[str, Any],
        dialogue: list[dict[str, Any]],
        spans: Sequence[AgentSpan],
        origin_unix: float | None,
    ) -> Breakdown | None:
        origin = origin_unix if origin_unix is not None else details.get("clock_origin_unix")
        if not dialogue or origin is None:
            return None
        lo = max(0, len(dialogue) - LIVE_TAIL)
        since_ns = (origin + float(dialogue[lo]["start_ms"]) / 1000 - LIVE_MARGIN_S) * 1e9
        while self._cursor < len(spans) and spans[self._cursor].end_unix_nano < since_ns:
            self._cursor += 1
        b = span_breakdown(details, dialogue[lo:], spans[self._cursor :], origin)
        for r in b.replies if b is not None else []:
            r.caller_turn += lo
            r.agent_turn += lo
        return b
