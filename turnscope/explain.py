"""A run's latency breakdown: its replies split by the agent's own events, from RTVI heard on
the call's data channel or from the agent's own log (``--agent-trace``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from turnscope.errors import InputError
from turnscope.pipeline import PipelineResult
from turnscope.scoring.agent_trace import AgentTrace, CallTimes, read_agent_trace
from turnscope.scoring.latency import Breakdown, rtvi_events, split_latency


def one_way_estimate(details: dict[str, Any]) -> tuple[float, float | None]:
    """Half the round trip the call measured (RTCP), and its uncertainty (the other half:
    the two directions need not be equal); (0, None) when nothing measured it."""
    rtts = [float(r) for r in details.get("round_trips_ms") or []]
    if not rtts:
        return 0.0, None
    rtt = sorted(rtts)[len(rtts) // 2]
    return rtt / 2, rtt / 2


TRACE_WAIT_S = 3.0  # an agent writes its log as its side of the call ends, just after ours


def settled_trace(path: Path, times: CallTimes) -> AgentTrace:
    """The trace once it holds this call (the agent may still be writing it)."""
    deadline = time.monotonic() + TRACE_WAIT_S
    while True:
        try:
            trace = read_agent_trace(path, times)
            if trace.events or time.monotonic() >= deadline:
                return trace
        except InputError:
            if time.monotonic() >= deadline:
                raise
        time.sleep(0.25)


def latency_breakdown(result: PipelineResult, agent_trace: Path | None = None) -> Breakdown | None:
    """The breakdown of ``result``'s replies, or None when nothing from the agent is known."""
    details = result.info.details
    dialogue = result.assembly.dialogue()
    if agent_trace is not None:
        times = CallTimes(
            details.get("clock_origin_monotonic"),
            details.get("clock_origin_unix"),
            result.audio_ms,
        )
        trace = read_agent_trace(agent_trace, times)
        return split_latency(dialogue, trace.events, source="agent_trace", problems=trace.problems)
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
