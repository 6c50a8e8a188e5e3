"""An agent's OpenTelemetry spans: read from OTLP (JSON or protobuf), kept as a readable file,
and turned into the agent events the latency breakdown splits replies by.

The bundle's ``agent_spans.json`` (``AgentSpans``) holds every span the agent exported during
the call, as received: names, ids, attributes and span events, times in Unix nanoseconds on
the agent's wall clock. ``--agent-trace`` reads it back, and reads the OTLP JSON that a
collector's file exporter writes (``{"resourceSpans": [...]}``, one object or JSON lines).

What a span says about a reply (pipecat's and LiveKit Agents' span names):

    end_of_turn, eou_detection, end_of_utterance, user_turn: their end is the turn decision
    stt: its end is the final transcript
    llm, llm_node, llm_request: start + ``metrics.ttfb`` (or ``gen_ai.server.time_to_first_token``)
        is the first token
    tts, tts_node, tts_request: start + ``metrics.ttfb`` is the first byte (its start when it
        reports none)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

FORMAT = "turnscope.agent_spans/1"
MAX_NANOS = 4_102_444_800 * 10**9  # 2100-01-01: a span past it (or before 2000) is no time
MIN_NANOS = 946_684_800 * 10**9
CONVERSATION_KEYS = ("conversation.id", "session.id", "lk.room_name", "room_id", "call.id")
DECIDED = ("end_of_turn", "eou_detection", "end_of_utterance", "user_turn")
LLM = ("llm", "llm_node", "llm_request")
TTS = ("tts", "tts_node", "tts_request")
TTFB_KEYS = ("metrics.ttfb", "gen_ai.server.time_to_first_token", "ttft", "ttfb")


class SpanEvent(BaseModel):
    name: str
    time_unix_nano: int
    attributes: dict[str, Any] = Field(default_factory=dict)


class AgentSpan(BaseModel):
    """One span as the agent exported it."""

    trace_id: str  # hex
    span_id: str
    parent_span_id: str = ""
    name: str
    service: str = ""  # its resource's service.name
    start_unix_nano: int
    end_unix_nano: int
    attributes: dict[str, Any] = Field(default_factory=dict)
    events: list[SpanEvent] = Field(default_factory=list)

    def conversation(self) -> str:
        """The conversation / session id it carries, or its trace id."""
        for key in CONVERSATION_KEYS:
            if self.attributes.get(key):
                return str(self.attributes[key])
        return self.trace_id


class Received(BaseModel):
    """What the receiver took in, and what it refused (nothing grows without bound)."""

    batches: int = 0
    spans: int = 0
    refused_batches: int = 0
    dropped_spans: int = 0  # past the span limit


class AgentSpans(BaseModel):
    """agent_spans.json: the agent's OpenTelemetry spans during the call."""

    format: Literal["turnscope.agent_spans/1"] = FORMAT
    about: str = (
        "every span the agent exported over OTLP while the call ran (and a short grace after "
        "it); times are Unix nanoseconds on the agent's clock"
    )
    endpoint: str = ""
    received: Received = Field(default_factory=Received)
    problems: list[str] = Field(default_factory=list)
    spans: list[AgentSpan] = Field(default_factory=list)


def _value(v: Any) -> Any:
    """An OTLP JSON AnyValue as a plain value."""
    if not isinstance(v, Mapping):
        return None
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            return v[key]
    if "intValue" in v:
        try:
            return int(v["intValue"])
        except (TypeError, ValueError):
            return None
    if "arrayValue" in v:
        return [_value(x) for x in _list(_map(v["arrayValue"]).get("values"))]
    return None


def _list(x: Any) -> list[Any]:
    return x if isinstance(x, list) else []


def _map(x: Any) -> Mapping[str, Any]:
    return x if isinstance(x, Mapping) else {}


def _attrs(items: Any) -> dict[str, Any]:
    return {
        str(a.get("key")): _value(a.get("value"))
        for a in _list(items)
        if isinstance(a, Mapping) and a.get("key")
    }


def _nanos(x: Any) -> int | None:
    try:
        n = int(x)
    except (TypeError, ValueError):
        return None
    return n


def from_otlp_json(data: Mapping[str, Any]) -> tuple[list[AgentSpan], int]:
    """The spans of one ExportTraceServiceRequest in OTLP JSON, and how many were unreadable."""
    spans, bad = [], 0
    for rs in _list(data.get("resourceSpans")):
        if not isinstance(rs, Mapping):
            bad += 1
            continue
        service = str(_attrs(_map(rs.get("resource")).get("attributes")).get("service.name", ""))
        for ss in _list(rs.get("scopeSpans")):
            for s in _list(_map(ss).get("spans")):
                start = _nanos(s.get("startTimeUnixNano")) if isinstance(s, Mapping) else None
                if start is None or not s.get("name"):
                    bad += 1
                    continue
                end = _nanos(s.get("endTimeUnixNano"))
                spans.append(
                    AgentSpan(
                        trace_id=str(s.get("traceId", "")),
                        span_id=str(s.get("spanId", "")),
                        parent_span_id=str(s.get("parentSpanId") or ""),
                        name=str(s["name"]),
                        service=service,
                        start_unix_nano=start,
                        end_unix_nano=end if end is not None else 0,
                        attributes=_attrs(s.get("attributes")),
                        events=[
                            SpanEvent(
                                name=str(e.get("name", "")),
                                time_unix_nano=t,
                                attributes=_attrs(e.get("attributes")),
                            )
                            for e in _list(s.get("events"))
                            if isinstance(e, Mapping)
                            and (t := _nanos(e.get("timeUnixNano"))) is not None
                        ],
                    )
                )
    return spans, bad


def _pb_value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_pb_value(x) for x in v.array_value.values]
    if kind in ("kvlist_value", "bytes_value") or kind is None:
        return None
    return getattr(v, kind)


def _pb_attrs(items: Iterable[Any]) -> dict[str, Any]:
    return {a.key: _pb_value(a.value) for a in items}


def from_otlp_protobuf(body: bytes) -> list[AgentSpan]:
    """The spans of one ExportTraceServiceRequest in protobuf (ValueError when it is not one)."""
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except DecodeError as exc:
        raise ValueError(f"not an OTLP protobuf trace request: {exc}") from None
    spans = []
    for rs in request.resource_spans:
        service = str(_pb_attrs(rs.resource.attributes).get("service.name", ""))
        for ss in rs.scope_spans:
            for s in ss.spans:
                spans.append(
                    AgentSpan(
                        trace_id=s.trace_id.hex(),
                        span_id=s.span_id.hex(),
                        parent_span_id=s.parent_span_id.hex(),
                        name=s.name,
                        service=service,
                        start_unix_nano=s.start_time_unix_nano,
                        end_unix_nano=s.end_time_unix_nano,
                        attributes=_pb_attrs(s.attributes),
                        events=[
                            SpanEvent(
                                name=e.name,
                                time_unix_nano=e.time_unix_nano,
                                attributes=_pb_attrs(e.attributes),
                            )
                            for e in s.events
                        ],
                    )
                )
    return spans


def sound(spans: Iterable[AgentSpan]) -> tuple[list[AgentSpan], list[str]]:
    """The spans whose times make sense, and one line per kind of span left out."""
    ok, no_end, backwards, out_of_range = [], 0, 0, 0
    for s in spans:
        if not MIN_NANOS <= s.start_unix_nano <= MAX_NANOS:
            out_of_range += 1
        elif s.end_unix_nano == 0:
            no_end += 1
        elif s.end_unix_nano < s.start_unix_nano:
            backwards += 1
        else:
            ok.append(s)
    problems = []
    if no_end:
        problems.append(f"{no_end} span(s) with no end, left out")
    if backwards:
        problems.append(f"{backwards} span(s) ending before they start, left out")
    if out_of_range:
        problems.append(f"{out_of_range} span(s) dated before 2000 or after 2100, left out")
    return ok, problems


def _ttfb_s(s: AgentSpan) -> float | None:
    for key in TTFB_KEYS:
        v = s.attributes.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            return float(v) if 0 <= v <= 3600 else None
    return None


def span_events(spans: Iterable[AgentSpan]) -> Iterator[tuple[float, str, float | None]]:
    """(Unix seconds, agent event name, metric ms) for what the spans say about replies."""
    for s in spans:
        name = s.name.lower().replace(" ", "_").replace("-", "_")
        start, end = s.start_unix_nano / 1e9, s.end_unix_nano / 1e9
        if name in DECIDED:
            yield end, "user_stopped_speaking", None
        elif name == "stt":
            yield end, "stt_final", None
        elif name in LLM:
            ttfb = _ttfb_s(s)
            if ttfb is not None:
                yield start + ttfb, "llm_first_token", ttfb * 1000
        elif name in TTS:
            ttfb = _ttfb_s(s)
            yield start + (ttfb or 0.0), "tts_first_byte", None if ttfb is None else ttfb * 1000


def choose_call(
    spans: list[AgentSpan], window: tuple[float, float] | None, session: str | None = None
) -> tuple[list[AgentSpan], list[str]]:
    """The spans of this call's conversation: the one ``session`` names, else the one that
    overlaps the call's Unix-time ``window`` most; one line when it was a choice."""
    groups: dict[str, list[AgentSpan]] = {}
    by_trace: dict[str, str] = {}
    for s in spans:  # a span without the id is its trace's (the id is on the conversation span)
        conv = s.conversation()
        if conv != s.trace_id:
            by_trace[s.trace_id] = conv
    for s in spans:
        own = s.conversation()
        groups.setdefault(by_trace.get(s.trace_id, own) if own == s.trace_id else own, []).append(s)
    if session is not None and session in groups:
        return groups[session], []
    if len(groups) <= 1:
        return spans, []

    def overlap(group: list[AgentSpan]) -> float:
        if window is None:
            return float(len(group))
        lo = min(s.start_unix_nano for s in group) / 1e9
        hi = max(s.end_unix_nano for s in group) / 1e9
        return max(0.0, min(hi, window[1]) - max(lo, window[0]))

    ranked = sorted(groups.items(), key=lambda kv: overlap(kv[1]), reverse=True)
    touching = [k for k, g in ranked if overlap(g) > 0]
    if len(touching) <= 1 and window is not None:
        return (ranked[0][1] if touching else []), []
    return ranked[0][1], [
        f"the spans of {len(groups)} conversations could be this call's: took {ranked[0][0]} "
        "(the one overlapping the call most); the agent can name its conversation.id"
    ]
