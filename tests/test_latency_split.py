"""The latency split: plain parts (the split, the agent-trace formats, RTVI bookkeeping) and a
real call to the reference agent whose own log is read back with --agent-trace."""

from __future__ import annotations

import itertools
import json
import statistics
import subprocess

import pytest

from tests.conftest import ROOT, turnscope_exe
from turnscope.capture.webrtc.rtvi import MAX_EVENTS, Rtvi
from turnscope.errors import InputError
from turnscope.scoring.agent_trace import CallTimes, read_agent_trace
from turnscope.scoring.latency import AgentEvent, normal_name, rtvi_events, split_latency

DIALOGUE = [
    {"speaker": "caller", "start_ms": 0, "end_ms": 1000, "text": "hello"},
    {"speaker": "agent", "start_ms": 2000, "end_ms": 3000, "text": "hi"},
    {"speaker": "caller", "start_ms": 4000, "end_ms": 5000, "text": "bye"},
    {"speaker": "agent", "start_ms": 6500, "end_ms": 7000, "text": "bye"},
]


# The agent's RTVI events for DIALOGUE's two replies.
EVENTS = [
    AgentEvent(1650, "user_stopped_speaking"),
    AgentEvent(1910, "bot_started_speaking"),
    AgentEvent(5700, "user_stopped_speaking"),
    AgentEvent(6310, "bot_started_speaking"),
]


def test_parts_sum_to_the_ear_latency_and_say_which_carry_the_estimate():
    b = split_latency(DIALOGUE, EVENTS, source="rtvi", one_way_ms=10, uncertainty_ms=10)
    assert b.reliable and [r.latency_ms for r in b.replies] == [1000, 1500]
    first, second = b.replies
    assert (first.endpointing_ms, first.processing_ms, first.delivery_ms) == (640, 260, 100)
    assert (second.endpointing_ms, second.processing_ms, second.delivery_ms) == (690, 610, 200)
    assert first.estimated == ["endpointing", "delivery"]
    assert "one-way" in b.note


def test_a_reply_without_the_agents_events_is_not_split_and_says_why():
    b = split_latency(DIALOGUE, [AgentEvent(1650, "user_stopped_speaking")], source="rtvi")
    assert all(r.missing for r in b.replies)
    assert not b.reliable and "bot-started-speaking" in b.reasons[0]


def test_a_start_of_speaking_that_came_after_the_reply_was_heard_is_said_late():
    """A busy agent's RTVI message can arrive after its audio (a load run's reference agent:
    131 ms): that reply is not split (its delivery would be negative) and says why."""
    events = [*EVENTS[:-1], AgentEvent(6631, "bot_started_speaking")]  # the second one late
    b = split_latency(DIALOGUE, events, source="rtvi", one_way_ms=10, uncertainty_ms=10)
    first, second = b.replies
    assert first.missing is None and first.delivery_ms == 100
    late = "the agent's bot-started-speaking came 121 ms after the reply was heard"
    assert second.missing == late
    assert b.reliable  # one reply split is a split: the other says why it is not


def test_a_turn_decision_or_own_start_stamped_after_the_reply_was_heard_says_so():
    """A busy agent's user-stopped-speaking can come after its reply was heard too; an agent's
    own spans can stamp its start of speaking after its audio was heard (a starved pipecat
    bot's tts span: 22-49 ms, two replies of a CI load run). Not split, and the reason says
    which and how late, not that none came. A decision only after a caller turn begun in the
    reply (a barge-in's) is about that turn: none came for the reply."""
    late_decision = [*EVENTS[:2], AgentEvent(6600, "user_stopped_speaking"), EVENTS[3]]
    b = split_latency(DIALOGUE, late_decision, source="rtvi", one_way_ms=10, uncertainty_ms=10)
    said = "the agent's user-stopped-speaking came 90 ms after the reply was heard"
    assert b.replies[1].missing == said, b.replies[1]
    own = [*EVENTS[:3], AgentEvent(6549, "bot_started_speaking")]
    b = split_latency(DIALOGUE, own, source="otlp")
    said = "the agent's bot-started-speaking is stamped 49 ms after the reply was heard"
    assert b.replies[1].missing == said, b.replies[1]
    barged = [*DIALOGUE[:3], {**DIALOGUE[3], "end_ms": 9000},
              {"speaker": "caller", "start_ms": 7000, "end_ms": 7400, "text": "wait"}]  # fmt: skip
    events = [*EVENTS[:2], AgentEvent(7500, "user_stopped_speaking")]
    b = split_latency(barged, events, source="rtvi", one_way_ms=10, uncertainty_ms=10)
    assert b.replies[1].missing.startswith("no turn decision"), b.replies[1]


def _pairs(deliveries: list[float]) -> tuple[list[dict], list[AgentEvent]]:
    """A call of one reply per delivery (caller turn, 500 ms endpointing, 300 ms processing)."""
    dialogue, events = [], []
    for k, delivery in enumerate(deliveries):
        end = 1000 + 5000 * k
        heard = end + 800 + delivery
        dialogue += [
            {"speaker": "caller", "start_ms": end - 1000, "end_ms": end, "text": "x"},
            {"speaker": "agent", "start_ms": heard, "end_ms": heard + 1000, "text": "y"},
        ]
        events += [AgentEvent(end + 500, "user_stopped_speaking"),
                   AgentEvent(end + 800, "bot_started_speaking")]  # fmt: skip
    return dialogue, events


def test_a_start_of_speaking_later_against_its_audio_than_the_calls_others_is_not_split():
    """RTVI: one reply whose bot-started-speaking came 80 ms later, against its audio, than in
    the call's other replies (a delayed message) is not split; 40 ms is the agent's own; an
    agent's log (its own clock) is taken as it is, and two replies are too few to tell."""
    dialogue, events = _pairs([85, 90, 5, 88, 45])  # the third's message 80+ ms late
    b = split_latency(dialogue, events, source="rtvi")
    assert [r.missing is None for r in b.replies] == [True, True, False, True, True]
    assert b.replies[2].missing.startswith("the agent's bot-started-speaking came 80 ms later")
    assert b.replies[2].hops == [] and b.reliable
    assert all(r.missing is None for r in split_latency(dialogue, events, source="otlp").replies)
    few, evs = _pairs([85, 5])
    assert all(r.missing is None for r in split_latency(few, evs, source="rtvi").replies)


def test_names_in_every_spelling():
    for name in ("user-stopped-speaking", "user_stopped_speaking", "UserStoppedSpeaking"):
        assert normal_name(name) == "user_stopped_speaking"


def _times() -> CallTimes:
    return CallTimes(origin_monotonic=1000.0, origin_unix=1_700_000_000.0, duration_ms=8000)


def test_agent_trace_formats_land_on_the_call_clock(tmp_path):
    lines = [
        {"time": 1_700_000_001.65, "event": "user-stopped-speaking"},
        {"monotonic": 1001.91, "event": "bot_started_speaking"},
        {"type": "eou_metrics", "timestamp": 1_700_000_005.7, "end_of_utterance_delay": 0.5},
        {"type": "agent_state_changed", "new_state": "speaking", "created_at": 1_700_000_006.31},
        {"type": "tts_metrics", "timestamp": 1_700_000_006.2, "ttfb": 0.21},
    ]
    path = tmp_path / "agent.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    trace = read_agent_trace(path, _times())
    assert trace.problems == []
    got = [(round(e.at_ms), e.name) for e in trace.events]
    assert (1650, "user_stopped_speaking") in got and (1910, "bot_started_speaking") in got
    assert (5700, "user_stopped_speaking") in got and (6310, "bot_started_speaking") in got
    b = split_latency(DIALOGUE, trace.events, source="agent_trace")
    assert b.reliable and b.replies[1].ttfb_ms == [210.0]
    assert b.replies[0].estimated == []


def test_bad_agent_traces_are_said_and_change_nothing_else(tmp_path):
    with pytest.raises(InputError, match="no such agent trace"):
        read_agent_trace(tmp_path / "missing.jsonl", _times())
    junk = tmp_path / "junk.jsonl"
    junk.write_text("not json\n[1, 2]\n{}\n")
    assert "no event turnscope can read" in read_agent_trace(junk, _times()).problems[-1]
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"monotonic": 5000.0, "event": "bot_started_speaking"}) + "\n")
    assert "another call" in read_agent_trace(other, _times()).problems[-1]
    skewed = tmp_path / "skewed.jsonl"  # a wall clock 0.8 s off: decisions after the replies
    skewed.write_text(
        "\n".join(
            json.dumps({"time": 1_700_000_000 + t, "event": n})
            for t, n in ((2.45, "user_stopped_speaking"), (2.7, "bot_started_speaking"))
        )
    )
    b = split_latency(DIALOGUE, read_agent_trace(skewed, _times()).events, source="agent_trace")
    assert not b.reliable


def test_rtvi_bookkeeping_counts_what_it_cannot_trust():
    r = Rtvi(now_ms=lambda: 0.0)
    r.heard({"label": "rtvi-ai"}, 10)
    r.heard({"label": "rtvi-ai", "type": "dance"}, 20)
    r.heard({"label": "rtvi-ai", "type": "bot-stopped-speaking"}, 30)
    for i in range(MAX_EVENTS + 3):
        r.heard({"label": "rtvi-ai", "type": "user-started-speaking"}, 40 + i)
    problems = " | ".join(r.problems())
    assert "without a type" in problems and "'dance'" in problems
    assert "out of order" in problems and "flooded" in problems
    assert len(r.events) == MAX_EVENTS


def test_the_reference_agents_own_log_splits_a_real_call(tmp_path, cli):
    """`call --agent-trace` with the reference agent's truth log (its true send times)."""
    truth = tmp_path / "agent-truth.jsonl"
    agent = subprocess.Popen(
        [*turnscope_exe(), "agent", "--port", "0", "--no-greet", "--latency-ms", "700",
         "--line", "Sure.", "--line", "Goodbye.",
         "--truth-log", str(truth)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        line = agent.stdout.readline() if agent.stdout else ""
        base = line.split("reference agent on ", 1)[1].split(":", 2)
        url = f"{base[0]}:{base[1]}:{base[2].split(':')[0]}/api/offer"
        sc = tmp_path / "s.yaml"
        sc.write_text(
            "name: split\ncaller: {timeout_s: 30, hangup_after_ms: 500}\nscript:\n"
            "  - caller: Hello, I would like a refund please.\n  - agent: Sure.\n"
            "  - caller: Thank you, goodbye.\n  - agent: Goodbye.\n"
        )
        out = tmp_path / "run"
        code, stdout, stderr = cli(
            "call", url, "--scenario", str(sc), "--loopback-only", "-q", "-o", str(out),
            "--agent-trace", str(truth),
        )  # fmt: skip
    finally:
        agent.terminate()
        agent.wait(10)
    assert code in (0, 1), (stdout, stderr)
    assert "latency split (agent_trace" in stdout
    b = json.loads((out / "result.json").read_text())["latency_breakdown"]
    assert b["source"] == "agent_trace" and b["reliable"], b
    replies = [r for r in b["replies"] if "missing" not in r]
    assert len(replies) == 2
    # The agent answers 700 ms after the speech end it found, which it found some hundreds of ms
    # before deciding: processing is 700 ms less that wait, by its own log (on a loaded machine
    # the end it finds in the Opus audio moves by 100+ ms, so the wait is read, not assumed).
    log = json.loads(truth.read_text().splitlines()[-1])
    waits = [
        e["decided_ms"] - e["at_ms"] for e in log["events"] if e["event"] == "caller_end_of_turn"
    ]
    for r in replies:
        total = r["endpointing_ms"] + r["processing_ms"] + r["delivery_ms"]
        assert total == pytest.approx(r["latency_ms"], abs=0.2)
        assert any(abs(r["processing_ms"] - (700 - w)) <= 30 for w in waits), (r, waits)
        assert 0 < r["processing_ms"] < 700, r
        assert 60 <= r["delivery_ms"] <= 200, r  # transport + the caller's jitter buffer
    assert statistics.median(r["endpointing_ms"] for r in replies) >= 300
    # The same agent says the same moments as RTVI on the data channel: both paths agree.
    result = json.loads((out / "result.json").read_text())
    dialogue = json.loads((out / "transcript.json").read_text())["turns"]
    rtvi = split_latency(dialogue, rtvi_events(result["source"]["details"]["rtvi"]), source="rtvi")
    heard = [r for r in rtvi.replies if r.missing is None]
    assert len(heard) == len(replies)
    for a, b in zip(heard, replies, strict=True):
        for part in ("endpointing", "processing", "delivery"):
            # its RTVI start is when it queued the prompt; its log, when the first sample left.
            # RTVI is stamped on arrival over SCTP, which lags by tens of ms on a loaded machine.
            assert abs(getattr(a, f"{part}_ms") - b[f"{part}_ms"]) <= 60, (part, a, b)


def test_a_replay_aligns_the_agents_log_by_its_first_reply(sample_bundle, tmp_path, cli):
    """A recording has no clock: the agent's first start of speaking is put where it was
    heard, and every reply is split relative to it."""
    turns = json.loads((sample_bundle / "transcript.json").read_text())["turns"]
    lines, base = [], 5000.0  # the agent's own clock: anything
    for prev, t in itertools.pairwise(turns):
        if t["speaker"] == "agent" and prev["speaker"] == "caller":
            gap = t["start_ms"] - prev["end_ms"]
            decided = prev["end_ms"] + (gap - 120) / 2  # then as long again to its start,
            began = t["start_ms"] - 120  # and 120 ms of delivery
            lines.append({"monotonic": base + decided / 1000, "event": "user-stopped-speaking"})
            lines.append({"monotonic": base + began / 1000, "event": "bot-started-speaking"})
    trace = tmp_path / "agent.jsonl"
    trace.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    out = tmp_path / "replay"
    code, _, stderr = cli(
        "replay", str(ROOT / "recordings" / "refund-call.wav"), "-q",
        "-o", str(out), "--agent-trace", str(trace),
    )  # fmt: skip
    assert code in (0, 1), stderr
    b = json.loads((out / "result.json").read_text())["latency_breakdown"]
    assert b["reliable"] and "starts of speaking" in b["note"], b
    split = [r for r in b["replies"] if "missing" not in r]
    assert len(split) >= 2
    for r in split:  # the log's 120 ms of delivery moves into endpointing, for every reply alike
        assert abs(r["delivery_ms"]) <= 2, r
        assert abs(r["endpointing_ms"] - r["processing_ms"] - 120) <= 2, r


def test_a_missing_agent_trace_is_one_line_and_changes_nothing_else(tmp_path, cli):
    code, stdout, stderr = cli(
        "replay", str(ROOT / "recordings" / "refund-call.wav"), "-q",
        "-o", str(tmp_path / "r"), "--agent-trace", str(tmp_path / "nope.jsonl"),
    )  # fmt: skip
    assert code == 2 and "no such agent trace" in stdout + stderr


def test_a_skewed_wall_clock_is_lined_up_by_the_agents_starts_and_said(tmp_path):
    """A live call's trace from a machine whose wall clock is 0.8 s ahead: the parts come out
    impossible, so the trace is lined up by its starts of speaking and the skew is said."""
    from types import SimpleNamespace

    from turnscope.explain import latency_breakdown

    origin_unix = 1_700_000_000.0
    skew = 0.8
    lines = []
    for caller_end, agent_start in ((1000, 2000), (5000, 6500)):
        lines.append(
            {
                "time": origin_unix + skew + (caller_end + 600) / 1000,
                "event": "user-stopped-speaking",
            }
        )
        lines.append(
            {
                "time": origin_unix + skew + (agent_start - 100) / 1000,
                "event": "bot-started-speaking",
            }
        )
    trace = tmp_path / "agent.jsonl"
    trace.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    turns = [SimpleNamespace(speaker=t["speaker"], start_ms=t["start_ms"]) for t in DIALOGUE]
    result = SimpleNamespace(
        info=SimpleNamespace(
            details={"clock_origin_unix": origin_unix, "clock_origin_monotonic": 10.0}
        ),
        assembly=SimpleNamespace(dialogue=lambda: DIALOGUE, turns=turns),
        audio_ms=8000,
    )
    b = latency_breakdown(result, trace)
    assert b.reliable and "+700 ms ahead" in b.note, (b.reasons, b.note)  # 800 less its delivery
    assert [r.delivery_ms for r in b.replies] == [0.0, 0.0]
