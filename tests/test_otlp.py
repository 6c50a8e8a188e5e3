"""The OTLP receiver and OpenTelemetry spans as an agent trace: protobuf and JSON batches
encoded by opentelemetry-proto, bad input (garbage, a 50 MB batch, spans ending before they
start, another conversation's spans), and the hops of each reply summing to its latency."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from tests.interop.pipecat import free_port
from tests.test_latency_split import DIALOGUE
from turnscope.errors import InputError
from turnscope.otlp.receiver import OtlpReceiver, parse_endpoint
from turnscope.scoring.agent_trace import CallTimes, read_agent_trace
from turnscope.scoring.latency import Point, split_latency

T0 = 1_700_000_000.0  # the call clock's sample 0, Unix seconds
TIMES = CallTimes(origin_monotonic=None, origin_unix=T0, duration_ms=8000)
# (name, start ms, end ms, attributes) on the call clock: the second reply's turn decision
# at 5700, its llm's first token 300 ms after its start, tts first byte 50 ms after its start.
SPANS = [
    ("end_of_turn", 1650, 1650, {}),
    ("llm", 1660, 1800, {"metrics.ttfb": 0.2}),
    ("tts", 1870, 2100, {"metrics.ttfb": 0.04}),
    ("stt", 5000, 5600, {}),
    ("end_of_turn", 5700, 5700, {}),
    ("llm", 5710, 6100, {"metrics.ttfb": 0.3}),
    ("tts", 6020, 6400, {"metrics.ttfb": 0.05}),
]


def _ns(ms: float) -> int:
    return int(round((T0 + ms / 1000) * 1e9))


def _request(spans=SPANS, conversation: str = "call-1") -> ExportTraceServiceRequest:
    out = []
    for i, (name, start, end, attrs) in enumerate(spans):
        kv = [KeyValue(key="conversation.id", value=AnyValue(string_value=conversation))]
        kv += [KeyValue(key=k, value=AnyValue(double_value=v)) for k, v in attrs.items()]
        trace_id = conversation.encode().ljust(16, b"-")[:16]
        out.append(
            Span(trace_id=trace_id, span_id=i.to_bytes(8, "big"), name=name,
                 start_time_unix_nano=_ns(start), end_time_unix_nano=_ns(end), attributes=kv)
        )  # fmt: skip
    return ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=out)])]
    )


def _json(request: ExportTraceServiceRequest) -> dict:
    """OTLP JSON as the spec has it (ids in hex, times as strings)."""
    spans = []
    for s in request.resource_spans[0].scope_spans[0].spans:
        attrs = []
        for a in s.attributes:
            kind = a.value.WhichOneof("value")
            key = {"string_value": "stringValue", "double_value": "doubleValue"}[kind]
            attrs.append({"key": a.key, "value": {key: getattr(a.value, kind)}})
        spans.append({
            "traceId": s.trace_id.hex(), "spanId": s.span_id.hex(), "name": s.name,
            "startTimeUnixNano": str(s.start_time_unix_nano),
            "endTimeUnixNano": str(s.end_time_unix_nano), "attributes": attrs,
        })  # fmt: skip
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


async def _post(port: int, body: bytes, kind: str) -> int:
    async with (
        aiohttp.ClientSession() as s,
        s.post(
            f"http://127.0.0.1:{port}/v1/traces", data=body, headers={"Content-Type": kind}
        ) as r,
    ):
        return r.status


def _receive(tmp_path, *batches: tuple[bytes, str]) -> tuple[OtlpReceiver, list[int]]:
    async def go():
        port = free_port()
        receiver = OtlpReceiver(f"127.0.0.1:{port}", tmp_path)
        await receiver.start()
        try:
            return receiver, [await _post(port, b, k) for b, k in batches]
        finally:
            await receiver.stop()

    receiver, codes = asyncio.run(go())
    receiver.write()
    return receiver, codes


def _check_reconciled(path):
    trace = read_agent_trace(path, TIMES)
    b = split_latency(DIALOGUE, trace.events, source="otlp", problems=trace.problems)
    assert b.reliable, b.reasons
    first, second = b.replies
    for r in b.replies:
        assert sum(h.ms for h in r.hops) == pytest.approx(r.latency_ms)
    assert [(h.start, h.to, h.ms) for h in first.hops] == [
        (Point.CALLER_END, Point.TURN_END, 650),
        (Point.TURN_END, Point.LLM_FIRST_TOKEN, 210),
        (Point.LLM_FIRST_TOKEN, Point.TTS_FIRST_BYTE, 50),
        (Point.TTS_FIRST_BYTE, Point.FIRST_HEARD, 90),
    ]
    assert [h.to for h in second.hops][:2] == [Point.STT_FINAL, Point.TURN_END]
    assert second.unaccounted_ms == 430  # tts first byte 6070 -> heard 6500
    return b


def test_protobuf_and_json_batches_are_kept_and_reconcile_each_reply(tmp_path):
    req = _request()
    half = len(SPANS) // 2
    pb = _request(SPANS[:half]).SerializeToString()
    js = json.dumps(_json(_request(SPANS[half:]))).encode()
    receiver, codes = _receive(tmp_path, (pb, "application/x-protobuf"), (js, "application/json"))
    assert codes == [200, 200]
    doc = json.loads(receiver.path.read_text())
    assert doc["format"] == "turnscope.agent_spans/1" and len(doc["spans"]) == len(
        req.resource_spans[0].scope_spans[0].spans
    )
    assert doc["received"] == {"batches": 2, "spans": 7, "refused_batches": 0, "dropped_spans": 0}
    b = _check_reconciled(receiver.path)
    # the same trace as a collector's file exporter writes it (OTLP JSON lines), given after
    # the call: the same breakdown
    lines = tmp_path / "collector.jsonl"
    lines.write_text(
        json.dumps(_json(_request(SPANS[:half]))) + "\n" + json.dumps(_json(_request(SPANS[half:])))
    )
    assert _check_reconciled(lines).to_dict() == b.to_dict()


def test_bad_batches_are_refused_in_one_line_each_and_the_rest_still_splits(tmp_path):
    backwards = [("tts", 3000, 2900, {})]  # ends before it starts
    in_1970 = [("llm", -T0 * 1000 + 5, -T0 * 1000 + 9, {})]
    big = b"\0" * (50 * 1024 * 1024)
    receiver, codes = _receive(
        tmp_path,
        (b"garbage \xff\x00", "application/x-protobuf"),
        (b"{not json", "application/json"),
        (big, "application/x-protobuf"),
        (_request(SPANS + backwards + in_1970).SerializeToString(), "application/x-protobuf"),
    )
    assert codes == [400, 400, 413, 200]
    doc = json.loads(receiver.path.read_text())
    assert doc["received"]["refused_batches"] == 3 and len(doc["problems"]) == 3
    assert all("\n" not in p for p in doc["problems"])
    trace = read_agent_trace(receiver.path, TIMES)
    assert any("ending before they start" in p for p in trace.problems)
    assert any("before 2000" in p for p in trace.problems)
    assert len(trace.events) == len(SPANS)  # the sound spans' events, nothing of the bad ones


def test_another_conversations_spans_are_left_out_or_the_choice_said(tmp_path):
    other = _request([(n, s + 60_000, e + 60_000, a) for n, s, e, a in SPANS], "call-2")
    both = tmp_path / "two.jsonl"
    both.write_text(json.dumps(_json(_request())) + "\n" + json.dumps(_json(other)))
    trace = read_agent_trace(both, TIMES)
    assert not trace.problems and trace.spans == len(SPANS)  # the other is outside the call
    near = _request(SPANS, "call-3")
    both.write_text(json.dumps(_json(_request())) + "\n" + json.dumps(_json(near)))
    trace = read_agent_trace(both, TIMES)
    assert len(trace.problems) == 1 and "conversations" in trace.problems[0], trace.problems


def test_no_span_at_all_is_one_line_in_the_file(tmp_path):
    receiver, _ = _receive(tmp_path)
    assert "no span arrived" in json.loads(receiver.path.read_text())["problems"][0]
    assert read_agent_trace(receiver.path, TIMES).events == []


def test_a_port_in_use_or_a_bad_endpoint_is_one_line(tmp_path):
    assert parse_endpoint("") == ("http", "127.0.0.1", 4318)
    assert parse_endpoint("127.0.0.1:4319") == ("http", "127.0.0.1", 4319)
    assert parse_endpoint("grpc://") == ("grpc", "127.0.0.1", 4317)
    assert parse_endpoint("grpc://0.0.0.0:5317") == ("grpc", "0.0.0.0", 5317)
    with pytest.raises(InputError, match="HOST:PORT"):
        parse_endpoint("127.0.0.1:http")
    with pytest.raises(InputError, match="grpc://"):
        parse_endpoint("https://127.0.0.1:4318")

    async def go():
        port = free_port()
        first = OtlpReceiver(f"127.0.0.1:{port}", tmp_path)
        await first.start()
        try:
            with pytest.raises(InputError, match="cannot listen"):
                await OtlpReceiver(f"127.0.0.1:{port}", tmp_path).start()
        finally:
            await first.stop()

    asyncio.run(go())


def test_the_sdks_grpc_exporter_is_received_and_garbage_refused(tmp_path):
    """OTLP over gRPC: the OpenTelemetry SDK's own gRPC exporter sends the spans; a request
    that is not a trace export is refused (INVALID_ARGUMENT) and said once; a second receiver
    on the same port is one line."""
    import grpc
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from turnscope.otlp.grpc_listener import EXPORT

    def export(port: int) -> None:
        provider = TracerProvider()
        exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{port}", insecure=True)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = provider.get_tracer("agent")
        for name, start, end, attrs in SPANS:
            span = tracer.start_span(name, start_time=_ns(start), attributes={
                "conversation.id": "call-1", **attrs})  # fmt: skip
            span.end(end_time=_ns(end))
        provider.shutdown()

    def garbage(port: int) -> grpc.StatusCode:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = channel.unary_unary(EXPORT)
            try:
                call(b"garbage \xff\x00", timeout=5)
            except grpc.RpcError as exc:
                return exc.code()
        return grpc.StatusCode.OK

    async def go():
        port = free_port()
        receiver = OtlpReceiver(f"grpc://127.0.0.1:{port}", tmp_path)
        await receiver.start()
        try:
            await asyncio.to_thread(export, port)  # the SDK blocks: not on the receiver's loop
            code = await asyncio.to_thread(garbage, port)
            with pytest.raises(InputError, match="cannot listen"):
                await OtlpReceiver(f"grpc://127.0.0.1:{port}", tmp_path).start()
        finally:
            await receiver.stop()
        return receiver, code

    receiver, code = asyncio.run(go())
    receiver.write()
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    doc = json.loads(receiver.path.read_text())
    assert doc["endpoint"].startswith("grpc://127.0.0.1:")
    assert doc["received"]["spans"] == len(SPANS) and doc["received"]["refused_batches"] == 1
    assert len(doc["problems"]) == 1 and "not OTLP traces" in doc["problems"][0]
    assert len(read_agent_trace(receiver.path, TIMES).events) == len(SPANS)


def test_call_with_otlp_on_a_port_in_use_is_one_line_and_no_call(tmp_path, cli):
    import socket

    from tests.conftest import ROOT

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = cli(
            "call", "http://127.0.0.1:9/api/offer", "--scenario",
            str(ROOT / "configs" / "scenarios" / "backchannel.yaml"), "-q",
            "-o", str(tmp_path / "run"), "--otlp", f"127.0.0.1:{port}",
        )  # fmt: skip
    assert code == 2, (out, err)
    lines = [x for x in (out + err).splitlines() if "--otlp" in x]
    assert len(lines) == 1 and "cannot listen" in lines[0], (out, err)
    assert not (tmp_path / "run").exists()  # the -o folder made for it is taken away again
