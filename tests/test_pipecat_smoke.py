"""A real call against a stock pipecat bot (pipecat's runner, SmallWebRTC, Silero VAD, its own
turn handling) in its own venv: the call completes, and every agent turn turnscope measured at
the caller's ear lands where the bot's pipeline really wrote the reply's audio, give or take the
constant one-way delay.

Needs .venv-pipecat (scripts/setup.sh --dev builds it); without it this fails, never skips.
"""

from __future__ import annotations

import asyncio
import statistics

from tests.interop.pipecat import call_bot, pipecat_bot

LATENCY_MS = 600

# The caller opens; each of its lines is answered by the bot's one short canned line.
SCENARIO = """
name: pipecat-smoke
description: The caller opens, the stock pipecat bot answers each caller line.
caller: {voice: en-us, timeout_s: 30, hangup_after_ms: 1000}
agent: {voice: en-gb}
script:
  - caller: Hi, I would like to check on my order please.
    at_ms: 600
  - agent: Sure, I can help with that.
  - caller: It was placed last Tuesday.
    after_agent_ms: 500
  - agent: Sure, I can help with that.
"""


def test_pipecat_bot_call_matches_its_truth_log(tmp_path):
    scenario_path = tmp_path / "pipecat-smoke.yaml"
    scenario_path.write_text(SCENARIO)
    with pipecat_bot(tmp_path / "bot", greeting=False, reply="short", latency_ms=LATENCY_MS) as bot:
        assert bot.url == f"http://127.0.0.1:{bot.port}/api/offer"
        run, call, _ = asyncio.run(call_bot(bot.url, scenario_path, tmp_path / "call"))
        truth = bot.truth()
        log = bot.log_tail()

    assert call.end_reason == "scenario finished", (call.end_reason, log)
    assert not call.info.degraded, call.info.degraded
    assert (tmp_path / "call" / "result.json").exists()

    origin = call.clock.origin  # time.monotonic() seconds, the bot's clock too
    measured = [(t.start_ms, t.end_ms) for t in run.result.assembly.turns if t.speaker == "agent"]
    replies = [r for r in truth if r["event"] == "reply"]
    assert len(measured) == 2, (run.result.assembly.turns, log)
    assert len(replies) == 2, (truth, log)
    assert not any(r["interrupted"] for r in replies), replies
    written = [
        ((r["start_monotonic"] - origin) * 1000, (r["end_monotonic"] - origin) * 1000)
        for r in replies
    ]
    offsets = [m[0] - w[0] for m, w in zip(measured, written, strict=True)]
    offsets += [m[1] - w[1] for m, w in zip(measured, written, strict=True)]
    one_way = statistics.median(offsets)  # written by the bot -> heard at the caller's ear
    assert 0 <= one_way <= 300, offsets
    assert max(abs(o - one_way) for o in offsets) <= 40, (one_way, offsets)

    # The latency knob: from pipecat's user-stopped-speaking to the reply's first sample.
    stops = [r["monotonic"] for r in truth if r["event"] == "user_stopped_speaking"]
    for r in replies:
        before = max(s for s in stops if s < r["start_monotonic"])
        assert abs((r["start_monotonic"] - before) * 1000 - LATENCY_MS) <= 30, (r, stops)
