"""`turnscope load --otlp`: one receiver for the run, each call its own spans and hops.

- which spans are a call's among every call's (its id in any attribute, the only conversation
  overlapping it, or not separable), read from the run's file as it is being appended to;
- the per-hop aggregate across calls, and the one line when calls' spans are not separable;
- the run's receiver refusing --ray, and a port in use, in one line;
- a real load run of 3 calls against the stock pipecat bot exporting its spans with the
  OpenTelemetry SDK to the run's receiver: every call's hops, summing to its latency, and the
  per-hop percentiles in load.json, the terminal and load.html.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import subprocess

import pytest

from tests.conftest import ROOT, turnscope_exe
from tests.interop.pipecat import free_port, pipecat_bot
from turnscope.errors import InputError
from turnscope.load.hops import (
    GROWTH_MIN_MS,
    growth_line,
    hops_report,
    levels_cell,
    not_separable_line,
    sources_text,
)
from turnscope.load.record import CallRecord, Reply, ReplyHop
from turnscope.otlp.records import SpansBy
from turnscope.otlp.shared import RunReceiver, SpanBatch
from turnscope.otlp.tap import call_ids, read_batches, this_calls
from turnscope.scoring.otlp_spans import AgentSpan

T0 = 1_700_000_000.0


def _span(name: str, trace: str, at_s: float, **attrs) -> AgentSpan:
    ns = int((T0 + at_s) * 1e9)
    return AgentSpan(trace_id=trace * 32, span_id="1" * 16, name=name, start_unix_nano=ns,
                     end_unix_nano=ns + 10**8, attributes=attrs)  # fmt: skip


def test_a_call_keeps_the_traces_that_name_it_and_says_when_none_can_be_told():
    a = [_span("conversation", "a", 0, **{"conversation.id": "pc-a"}), _span("turn", "a", 1)]
    b = [_span("conversation", "b", 0, **{"twilio.stream_sid": "MZ1"}), _span("llm", "b", 2)]
    both = [*a, *b]
    window = (T0 - 2, T0 + 10)
    # WebRTC's session id as conversation.id; a carrier's stream sid under any key
    assert this_calls(both, ["pc-a"], window)[:2] == (a, SpansBy.OWN_ID)
    details = {"ids": {"stream": "MZ1", "call": "CA1"}}
    assert call_ids(details) == ["MZ1", "CA1"]
    assert this_calls(both, call_ids(details), window)[:2] == (b, SpansBy.OWN_ID)
    # no id in the spans: the only conversation overlapping the call is its own; two are not
    assert this_calls(a, ["CA9"], window)[:2] == (a, SpansBy.ONLY_ONE)
    assert this_calls(both, ["CA9"], window) == ([], SpansBy.NOT_SEPARABLE, 2)
    assert this_calls([], ["CA9"], window) == ([], SpansBy.NONE, 0)


def test_the_run_file_is_read_from_the_calls_start_to_its_last_whole_line(tmp_path):
    path = tmp_path / "agent_spans.jsonl"
    before = SpanBatch(received_unix=T0, spans=[_span("turn", "0", 0)]).model_dump_json()
    mine = SpanBatch(received_unix=T0, spans=[_span("llm", "a", 1), _span("tts", "a", 2)])
    path.write_text(before + "\n" + mine.model_dump_json() + "\n" + '{"received_unix": 1, "sp')
    spans, batches = read_batches(path, len(before) + 1)
    assert batches == 1 and [s.name for s in spans] == ["llm", "tts"]


def _record(slot: int, up: float, down: float, hops: list[list[float]], **kw) -> CallRecord:
    names = ["caller_end_heard", "turn_end", "llm_first_token", "tts_first_byte",
             "first_sample_heard"]  # fmt: skip
    pairs = list(itertools.pairwise(names))
    replies = [
        Reply(at_ms=2000 * (k + 1), latency_ms=sum(ms),
              hops=[ReplyHop(start=a, to=b, ms=v) for (a, b), v in zip(pairs, ms, strict=True)])
        for k, ms in enumerate(hops)
    ]  # fmt: skip
    return CallRecord(slot=slot, status="completed", planned_s=up, placed_s=up, connected_s=up,
                      ended_s=down, replies=replies, breakdown_source="otlp", **kw)  # fmt: skip


def test_the_hops_across_calls_and_the_one_that_grows_under_load():
    # call 0 alone for its first three replies (2, 4, 6 s), then call 1 joins (7 s): the tts
    # hop grows, the rest do not
    alone, joined = [600, 300, 40, 120], [600, 300, 240, 120]
    records = [
        _record(0, 0.0, 20.0, [alone, alone, alone, joined, joined]),
        _record(1, 7.0, 20.0, [[600, 300, 250, 120]]),
        CallRecord(
            slot=2,
            status="completed",
            planned_s=0,
            connected_s=30,
            ended_s=40,
            spans_by=SpansBy.NOT_SEPARABLE,
            hops_missing="not separable",
        ),
    ]
    unsplit = "no turn decision (user-stopped-speaking) from the agent for it"
    records[1].replies.append(Reply(at_ms=9000, latency_ms=950, no_hops=unsplit))
    h = hops_report(records)
    assert h is not None and h.calls == 2 and h.replies == 6 and h.sources == {"otlp": 2}
    assert sources_text(h) == "OpenTelemetry spans in 2 calls"
    assert h.replies_without == 1
    names = [x.name for x in h.hops]
    assert names == ["caller end -> turn end", "turn end -> llm first token",
                     "llm first token -> tts first byte",
                     "tts first byte -> heard (unaccounted)"]  # fmt: skip
    tts = h.hops[2]
    assert [(v.calls_up, v.n, v.p50) for v in tts.by_calls_up] == [(1, 3, 40.0), (2, 3, 240.0)]
    assert tts.growth_ms == 200.0 and tts.compared == [1, 2] and h.grows_most == tts.name
    assert growth_line(h) == (
        "grew most under load: llm first token -> tts first byte, p50 40 ms at 1 call(s) up "
        "-> 240 ms at 2"
    )
    assert levels_cell(tts) == "1: 40 (3) · 2: 240 (3)"
    assert h.unaccounted_ms.p50 == 120.0 and h.calls_without == 1 and h.not_separable == 1
    line = not_separable_line(records)
    assert line is not None and "1 of 3 call(s) are not separable" in line
    assert not_separable_line(records[:2]) is None


def test_a_rise_within_the_splits_error_or_over_too_few_replies_is_not_named_as_growth():
    # A 6-call run of the reference agent said its endpointing "grew most under load" for
    # 540 -> 544 ms, the 540 one reply at 4 calls up. Now: one reply is no median, and a rise
    # under GROWTH_MIN_MS is within what the split measures under load.
    lone = [
        _record(0, 0.0, 30.0, [[540, 1, 40, 98]]),
        _record(1, 3.0, 30.0, [[544, 1, 40, 99]] * 5),
    ]
    h = hops_report(lone)
    assert h is not None and h.grows_most is None and growth_line(h) is None
    assert all(x.growth_ms is None and not x.compared for x in h.hops)
    rise = GROWTH_MIN_MS - 1
    steady = [
        _record(0, 0.0, 30.0, [[540, 1, 40, 98]] * 3 + [[540 + rise, 1, 40, 99]] * 3),
        _record(1, 7.0, 30.0, [[540 + rise, 1, 40, 99]]),
    ]
    h = hops_report(steady)
    assert h is not None and h.grows_most is None
    assert [x.growth_ms for x in h.hops] == [rise, 0.0, 0.0, 1.0]
    assert (
        growth_line(h)
        == "no hop grew under load (by 20 ms or more of its p50 from 1 to 2 calls up)"
    )


def test_the_hop_table_keeps_its_medians_by_calls_up_whole_on_a_narrow_terminal(
    capsys, monkeypatch
):
    from turnscope.cli import console, load_tables
    from turnscope.load.report import LoadReport

    alone, joined = [600, 300, 40, 120], [600, 300, 240, 120]
    records = [_record(0, 0.0, 20.0, [alone] * 3 + [joined] * 2),
               _record(1, 7.0, 20.0, [joined])]  # fmt: skip
    report = LoadReport.model_construct(hops=hops_report(records))
    shown = {}
    for width in (80, 200):
        monkeypatch.setattr(console.out, "width", width)  # restored after the test
        load_tables.hop_table(report)
        shown[width] = capsys.readouterr().out
    # narrow: the medians by calls up a line per hop under the table, not folded in a cell
    assert "┃ p50 by calls up" not in shown[80]
    assert "turn end -> llm first token, p50 by calls up (replies): 1: 300 (3) · 2: 300 (3)" in (
        " ".join(shown[80].split())
    )
    assert (
        "┃ p50 by calls up (replies)" in shown[200]
        and "p50 by calls up (replies):" not in (shown[200])
    )


def test_the_runs_receiver_says_a_port_in_use_in_one_line(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(InputError, match=f"127.0.0.1:{port}: cannot listen"):
            RunReceiver(f"127.0.0.1:{port}", tmp_path).start()
    assert list(tmp_path.iterdir()) == []  # no empty span file left in the run's folder


def test_the_runs_receiver_appends_each_batch_as_a_line_and_counts_what_it_refused(tmp_path):
    from tests.test_otlp import _post, _request

    port = free_port()
    receiver = RunReceiver(f"127.0.0.1:{port}", tmp_path)
    receiver.start()
    try:
        protobuf = "application/x-protobuf"
        codes = [
            asyncio.run(_post(port, _request(conversation=c).SerializeToString(), protobuf))
            for c in ("call-1", "call-2")
        ]
        codes.append(asyncio.run(_post(port, b"not a trace", protobuf)))
    finally:
        summary = receiver.stop()
    assert codes == [200, 200, 400]
    got = summary.received
    assert (got.batches, got.spans, got.refused_batches) == (2, 14, 1), got
    assert len(summary.problems) == 1 and "refused" in summary.problems[0]
    spans, batches = read_batches(tmp_path / "agent_spans.jsonl", 0)
    assert batches == 2 and {s.conversation() for s in spans} == {"call-1", "call-2"}
    assert receiver.stop().received == got  # a second stop does nothing


def test_otlp_with_ray_is_one_line(tmp_path):
    cmd = [*turnscope_exe(), "load", "http://127.0.0.1:9/api/offer", "--scenario", "refund-call",
           "--calls", "2", "--ray", "auto", "--otlp", "", "-o", str(tmp_path / "x")]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode != 0 and "--otlp is for a load run on this machine" in done.stderr
    assert "Traceback" not in done.stderr


SCENARIO = """
name: load-otlp
task: {budgets: {max_latency_ms: 3000}}
caller: {voice: en-us, timeout_s: 30, hangup_after_ms: 400}
script:
  - caller: Hi, I would like a refund for my headphones please.
  - agent: Sure.
  - caller: Can you email me a return label?
  - agent: Yes.
"""
LLM_MS = 400


# Three calls and the stock bot with its tracing take both cores: beside another worker's
# calls (in a CI run, and locally beside test_load.py) the starved bot's replies came out in
# pieces, 7 of 9 unsplit. It runs with the solo files, as the phone-line one does.
@pytest.mark.solo
def test_a_load_run_against_the_pipecat_bot_splits_every_calls_replies(tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO)
    port, out = free_port(), tmp_path / "run"
    with pipecat_bot(tmp_path / "bot", greeting=False, reply="short", latency_ms=LLM_MS,
                     otlp=f"http://127.0.0.1:{port}") as bot:  # fmt: skip
        cmd = [*turnscope_exe(), "load", bot.url, "--scenario", str(scenario), "-o", str(out),
               "--loopback-only", "--calls", "3", "--rate", "3",
               "--otlp", f"127.0.0.1:{port}"]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT)
        sessions = {r["session"] for r in bot.truth() if r["event"] == "client_connected"}
    assert done.returncode in (0, 1), done.stdout + done.stderr
    r = json.loads((out / "load.json").read_text())
    assert r["completed"] == 3 and not r["degraded"], r["degraded"]
    assert r["otlp"]["received"]["batches"] >= 3 and not r["otlp"]["problems"], r["otlp"]
    assert (out / "agent_spans.jsonl").stat().st_size > 0
    kept: set[str] = set()
    unsplit = []
    for c in r["calls"]:
        assert c["spans_by"] == "own_id" and c["breakdown_source"] == "otlp", c
        assert any(x["hops"] for x in c["replies"]), c["hops_missing"]
        # A reply the breakdown could not split says why (seen once in CI on a starved
        # machine: the bot decided the turn had ended ~0.9 s before the caller finished).
        unsplit += [x for x in c["replies"] if not x["hops"]]
        assert all(x["no_hops"] for x in c["replies"] if not x["hops"]), c["replies"]
        for x in c["replies"]:
            assert sum(h["ms"] for h in x["hops"]) == pytest.approx(
                x["latency_ms"] if x["hops"] else 0, abs=0.5
            )
        spans = json.loads((out / "calls" / c["bundle"].split("/")[-1] / "agent_spans.json")
                           .read_text())["spans"]  # fmt: skip
        ids = {s["attributes"].get("conversation.id") for s in spans} - {None}
        assert len(ids) == 1, ids  # its own conversation, and no other call's
        kept |= ids
    assert kept == sessions
    h = r["hops"]
    # and (a CI run, 2 of 6 replies) the bot's tts span stamped 22-49 ms after its audio was
    # heard: each said, at most one unsplit for any other reason.
    stamped = [x for x in unsplit if "is stamped" in x["no_hops"]]
    assert len(unsplit) - len(stamped) <= 1 and h["replies_without"] == len(unsplit), unsplit
    assert h["calls"] == 3 and h["replies"] + len(unsplit) >= 6 and h["sources"] == {"otlp": 3}
    llm = next(x for x in h["hops"] if x["name"] == "turn end -> llm first token")
    assert abs(llm["ms"]["p50"] - LLM_MS) <= 30 and llm["ms"]["n"] == h["replies"], llm
    assert h["unaccounted_ms"]["n"] == h["replies"]
    assert "reply latency by hop" in done.stdout and "llm first token" in done.stdout
    assert "Latency by hop" in (out / "load.html").read_text()
