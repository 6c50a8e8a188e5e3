"""An agent's own event log (``--agent-trace FILE``), read and put on the call clock.

The format is JSON lines, one event each, with a time and a name:

    {"time": 1764590000.123, "clock": "unix", "event": "user-stopped-speaking"}
    {"monotonic": 51234.5678, "event": "bot_started_speaking"}
    {"time": 1764590001.0, "event": "metrics", "ttfb_ms": 310}

``time`` is Unix seconds (``"clock": "monotonic"`` for time.monotonic() seconds of the same
machine; a ``monotonic`` key says so too). Event names are pipecat's RTVI names (either
spelling: ``user-stopped-speaking``, ``user_stopped_speaking``, ``UserStoppedSpeaking``).
Also read as they are: LiveKit's metrics events dumped as JSON (``{"type": "eou_metrics",
"timestamp": ...}``: the turn decision; ``{"type": "agent_state_changed", "new_state":
"speaking", "created_at": ...}``: the start of speaking; ``llm_metrics`` ``ttft`` and
``tts_metrics`` ``ttfb`` as metrics), turnscope's reference-agent truth log (one call per line,
``--truth-log``), the interop pipecat bot's log (``reply`` records), and OpenTelemetry spans:
OTLP JSON as a collector's file exporter writes it (``{"resourceSpans": [...]}``, one object or
JSON lines) and the bundle's own ``agent_spans.json`` (scoring/otlp_spans.py says what each
span means). Spans are on the agent's wall clock (Unix time) and go through the same alignment.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from turnscope.errors import InputError
from turnscope.jsonio import FILE_LIMITS, MESSAGE_LIMITS, loads
from turnscope.scoring.latency import AgentEvent, normal_name
from turnscope.scoring.otlp_spans import (
    FORMAT,
    AgentSpan,
    AgentSpans,
    choose_call,
    from_otlp_json,
    sound,
    span_events,
)

FIX = "JSON lines with a time and an event name (see `turnscope call --help`, --agent-trace)"
MAX_SECONDS = 1e11  # a time past this (the year 5138) is no time: the line is left out
MAX_METRIC_MS = 3_600_000.0  # a ttfb past an hour is no measurement: left out


@dataclass(frozen=True)
class CallTimes:
    """Where the call clock's sample 0 is, on the machine's clocks, and how long the call was."""

    origin_monotonic: float | None
    origin_unix: float | None
    duration_ms: float
    agent_starts_ms: tuple[float, ...] = ()  # the agent turns' starts (a replay aligns by them)
    session: str | None = None  # the conversation id the agent reported, to choose its spans by


@dataclass
class AgentTrace:
    """The trace's events on the call clock, and what kept some of them out."""

    path: Path
    events: list[AgentEvent] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    clock: str = ""
    aligned_by: str = ""  # how it was put on the call clock when the machine's clocks could not
    spans: int = 0  # OpenTelemetry spans of this call it holds


@dataclass(frozen=True)
class _Raw:
    t: float
    clock: str  # unix | monotonic
    name: str
    value_ms: float | None = None


def read_agent_trace(path: Path, times: CallTimes) -> AgentTrace:
    """The trace at ``path`` on the call clock. A file that cannot be read is an InputError
    (checked before the call); lines that make no sense are problems, kept out."""
    try:
        if path.stat().st_size > FILE_LIMITS.size:
            raise InputError(
                f"the agent trace is larger than {FILE_LIMITS.size // 1048576} MiB", path=path
            )
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such agent trace", path=path, fix=FIX) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the agent trace: {exc}", path=path, fix=FIX) from None
    trace = AgentTrace(path)
    raws: list[_Raw] = []
    spans: list[AgentSpan] = []
    bad = 0
    whole = _whole(text)
    if whole is not None:  # one JSON document of spans (agent_spans.json, OTLP JSON)
        spans, bad = _spans_of(whole, trace)
    for line in text.splitlines() if whole is None else []:
        if not line.strip():
            continue
        try:
            # one line at a time, each within a message's limits: a line nested too deep or
            # with a number that does not fit is one bad line, not the end of the trace
            data = loads(line, limits=MESSAGE_LIMITS)
        except ValueError:
            bad += 1
            continue
        if isinstance(data, dict) and "resourceSpans" in data:
            found_spans, unread = _spans_of(data, trace)
            spans += found_spans
            bad += unread
            continue
        found = list(_events(data, times)) if isinstance(data, dict) else []
        if not found:
            bad += 1
        raws += found
    if bad:
        trace.problems.append(f"{bad} line(s) of {path.name} are not events turnscope reads")
    if spans:
        raws += _span_raws(spans, times, trace)
    if not raws:
        trace.problems.append(f"{path.name} has no event turnscope can read ({FIX})")
        return trace
    clocks = {r.clock for r in raws}
    trace.clock = "/".join(sorted(clocks))
    if times.origin_monotonic is None and times.origin_unix is None:
        return _by_first_reply(trace, raws, times)
    for r in raws:
        origin = times.origin_monotonic if r.clock == "monotonic" else times.origin_unix
        if origin is None:
            continue
        trace.events.append(AgentEvent((r.t - origin) * 1000, r.name, r.value_ms))
    if not trace.events:
        trace.problems.append(f"the call's {trace.clock} clock origin is unknown")
        return trace
    inside = [e for e in trace.events if -2000 <= e.at_ms <= times.duration_ms + 2000]
    if not inside:
        first = min(e.at_ms for e in trace.events) / 1000
        trace.problems.append(
            f"none of {path.name}'s events falls within this call (the first is {first:+.0f} s "
            "from its start): a trace of another call?"
        )
    trace.events = sorted(inside, key=lambda e: e.at_ms)
    return trace


def _by_first_reply(trace: AgentTrace, raws: list[_Raw], times: CallTimes) -> AgentTrace:
    """A recording has no clock origin: the trace is shifted so that its starts of speaking
    best meet the agent turns heard (the shift that puts its first start on one of them with
    the smallest total mismatch): the delivery of that reply is then 0 by construction, and
    every other part is relative to it."""
    if len({r.clock for r in raws}) > 1:
        trace.problems.append("the trace mixes clocks and the recording has none to align to")
        return trace
    starts = sorted(r.t * 1000 for r in raws if r.name == "bot_started_speaking") or sorted(
        r.t * 1000 for r in raws if r.name == "tts_first_byte"
    )
    heard = sorted(times.agent_starts_ms)
    if not starts or not heard:
        trace.problems.append(
            "a recording has no clock to align the trace to, and no start of speaking in it "
            "to align by"
        )
        return trace

    def mismatch(shift: float) -> float:
        return sum(min(abs(h - (t + shift)) for h in heard) for t in starts)

    shift = min((h - starts[0] for h in heard), key=mismatch)
    trace.aligned_by = "its starts of speaking, placed where the agent was heard starting"
    trace.events = sorted(
        (AgentEvent(r.t * 1000 + shift, r.name, r.value_ms) for r in raws), key=lambda e: e.at_ms
    )
    return trace


def _time(value: Any) -> float | None:
    """A finite number of seconds within MAX_SECONDS (a number, or a string of one), else None
    (an integer too large for a float included)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        seconds = float(value)
    except (ValueError, OverflowError):
        return None
    return seconds if math.isfinite(seconds) and abs(seconds) <= MAX_SECONDS else None


def _events(data: Mapping[str, Any], times: CallTimes) -> Iterator[_Raw]:
    if "utterances" in data and "clock_origin_monotonic" in data:
        yield from _reference_agent(data, times)
        return
    if data.get("event") == "reply" and "start_monotonic" in data:
        t = _time(data.get("start_monotonic"))
        if t is not None:
            yield _Raw(t, "monotonic", "bot_started_speaking")
        return
    kind = data.get("type")
    if (isinstance(kind, str) and kind.endswith("_metrics")) or kind == "agent_state_changed":
        yield from _livekit(data)
        return
    name = data.get("event") or data.get("type") or data.get("name")
    if not isinstance(name, str):
        return
    if "monotonic" in data:
        t, clock = _time(data.get("monotonic")), "monotonic"
    else:
        t = _time(data.get("time", data.get("timestamp")))
        clock = "monotonic" if data.get("clock") == "monotonic" else "unix"
    if t is None:
        return
    value = _metric_ms(_time(data.get("ttfb_ms", data.get("value_ms"))))
    yield _Raw(t, clock, normal_name(name), value)


def _reference_agent(data: Mapping[str, Any], times: CallTimes) -> Iterator[_Raw]:
    """turnscope's reference agent: its turn decisions (its clock) and its prompts' starts."""
    origin = _time(data.get("clock_origin_monotonic"))
    if origin is None:
        return
    for e in _dicts(data.get("events")):
        if e.get("event") == "caller_end_of_turn":
            at = _time(e.get("decided_ms", e.get("at_ms")))
            if at is not None:
                yield _Raw(origin + at / 1000, "monotonic", "user_stopped_speaking")
    for u in _dicts(data.get("utterances")):
        t = _time(u.get("start_monotonic"))
        if t is not None:
            yield _Raw(t, "monotonic", "bot_started_speaking")


def _metric_ms(value: float | None) -> float | None:
    """A reported ttfb within what a measurement can be (0 to an hour), else None."""
    return value if value is not None and 0 <= value <= MAX_METRIC_MS else None


def _dicts(items: Any) -> list[Mapping[str, Any]]:
    """The objects of a list the trace holds (anything else in it, or in its place, skipped)."""
    return [i for i in items if isinstance(i, Mapping)] if isinstance(items, list) else []


def _livekit(data: Mapping[str, Any]) -> Iterator[_Raw]:
    kind = data.get("type")
    t = _time(data.get("timestamp", data.get("created_at")))
    if t is None:
        return
    if kind == "eou_metrics":
        yield _Raw(t, "unix", "user_stopped_speaking")
    elif kind == "agent_state_changed" and data.get("new_state") == "speaking":
        yield _Raw(t, "unix", "bot_started_speaking")
    elif kind in ("llm_metrics", "tts_metrics"):
        value = _time(data.get("ttft" if kind == "llm_metrics" else "ttfb"))
        value_ms = _metric_ms(None if value is None else value * 1000)
        if value_ms is not None:
            yield _Raw(t, "unix", "ttfb", value_ms)


def _whole(text: str) -> dict[str, Any] | None:
    """The file as one JSON document of spans, or None (JSON lines, or not spans)."""
    if not text.lstrip().startswith("{") or ("resourceSpans" not in text and FORMAT not in text):
        return None
    try:
        data = loads(text, limits=FILE_LIMITS)
    except ValueError:
        return None
    spans_doc = isinstance(data, dict) and ("resourceSpans" in data or data.get("format") == FORMAT)
    return data if spans_doc else None


def _spans_of(data: dict[str, Any], trace: AgentTrace) -> tuple[list[AgentSpan], int]:
    """The spans of one document: OTLP JSON, or agent_spans.json (its problems kept)."""
    if "resourceSpans" in data:
        return from_otlp_json(data)
    try:
        doc = AgentSpans.model_validate(data)
    except ValueError:
        return [], 1
    trace.problems += doc.problems
    return doc.spans, 0


def _span_raws(spans: list[AgentSpan], times: CallTimes, trace: AgentTrace) -> list[_Raw]:
    """The events the call's spans say, on the agent's wall clock."""
    spans, problems = sound(spans)
    window = None
    if times.origin_unix is not None:
        window = (times.origin_unix - 2, times.origin_unix + times.duration_ms / 1000 + 2)
    chosen, why = choose_call(spans, window, times.session)
    trace.problems += problems + why
    trace.spans = len(chosen)
    return [_Raw(t, "unix", name, value) for t, name, value in span_events(chosen)]
