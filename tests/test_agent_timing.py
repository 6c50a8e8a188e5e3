"""The reference agent times a scenario's agent lines against the caller's as the synthetic call
does: it waits through a caller line's planned pauses (actors/agent/pauses.py), an agent line
with ``at_pause_ms`` takes the floor in the first of them, one with ``talk_over_ms`` starts that
long before the caller's line ends (actors/agent/talk_over.py), and a barge-in it talks through
(``yield_ms: null``) is answered its latency after the line ends. One live call through the
demo (the shipped pauses, pause-takeover, talk-over and barge-ins scenarios:
benchmarks/shipped_scenarios.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import turnscope
from turnscope.actors.agent.pauses import PausesHeard

SCENARIO = """
name: agent-waits-through-pauses
task: {budgets: {max_latency_ms: 1500}}
caller: {voice: en-us, hangup_after_ms: 600}
agent: {voice: en-gb, latency_ms: 450}
script:
  - caller: I would like to change the delivery address please.
    at_ms: 400
    pauses: [{after_words: 5, ms: 1100}]
  - agent: Sure, which order is it about?
  - caller: The order number is four two seven.
    pauses: [{after_words: 4, ms: 1000}]
  - agent: Okay.
    at_pause_ms: 300
  - agent: Thank you, I have found the order.
  - caller: Can you send it to my office instead of my home address?
    pauses: [{after_words: 4, ms: 800}]
  - agent: Yes, I can do that.
    talk_over_ms: 600
  - caller: Thank you.
  - agent: >-
      You are welcome. The parcel will go to your office, and the driver will leave it at the
      front desk.
    yield_ms: null
  - caller: no, hold on
    barge_in_ms: 1000
  - agent: Sorry, go ahead.
"""


def lines_notes(result: dict, index: int) -> list[str]:
    return next(r for r in result["script"]["lines"] if r["line"] == index).get("notes", [])


def test_a_silence_counts_as_the_planned_pause_by_its_length():
    heard = PausesHeard()
    heard.stopped(1000.0, agent_quiet=True)
    heard.resumed(1120.0, [900, 600])  # a breath between words
    assert heard.heard == 0 and heard.inside([900, 600])
    heard.stopped(2000.0, agent_quiet=False)  # over the agent's speech: not the caller's pause
    heard.resumed(3000.0, [900, 600])
    assert heard.heard == 0
    heard.stopped(4000.0, agent_quiet=True)
    heard.resumed(4880.0, [900, 600])  # its length as sent, less the network's swing
    heard.stopped(5500.0, agent_quiet=True)
    heard.resumed(5850.0, [900, 600])
    assert heard.heard == 2 and not heard.inside([900, 600])
    heard.reset()
    assert heard.inside([900, 600]) and not heard.inside([])


def test_the_reference_agent_times_its_lines_as_the_script_does(tmp_path: Path):
    scenario = tmp_path / "pauses.yaml"
    scenario.write_text(SCENARIO)
    turnscope.demo(outdir=tmp_path / "call", scenario=scenario)
    result = json.loads((tmp_path / "call" / "result.json").read_text())
    truth = json.loads((tmp_path / "call" / "agent_truth.json").read_text())
    # (the agent's times on its own clock, which starts with the media as the caller's does)
    said = {u["text"]: u for u in truth["utterances"]}
    lines = {r["line"]: r["sent"] for r in result["script"]["lines"]}
    pauses = result["script"]["pauses"]
    assert len(pauses) == 3, pauses
    # Each end of turn in a pause was a pause: the answer came after the line's end ...
    assert said["Sure, which order is it about?"]["start_ms"] > lines[0]["end_ms"], (said, lines)
    assert said["Thank you, I have found the order."]["start_ms"] > lines[2]["end_ms"]
    # ... and "Okay." took the floor inside the second line's pause, as planned.
    a, b = pauses[1]
    assert a + 300 < said["Okay."]["start_ms"] < b, (pauses, said["Okay."])
    assert [e["event"] for e in truth["events"]].count("caller_pause") == 3, truth["events"]
    # "Yes, I can do that." started about 600 ms before the caller's line ended (the agent's
    # clock hears the caller a one-way delay late, ~90 ms), not 600 ms after it began.
    over = said["Yes, I can do that."]["start_ms"] - lines[5]["end_ms"]
    assert -600 - 250 < over < -600 + 350, (over, said["Yes, I can do that."], lines[5])
    # The barge-in it talked through answered 450 ms after the line it was said over ended.
    long = next(u for u in truth["utterances"] if u["text"].startswith("You are welcome."))
    answer = said["Sorry, go ahead."]
    assert not long["stopped_early"] and lines[9]["start_ms"] < long["end_ms"], (long, lines[9])
    assert answer["start_ms"] - long["end_ms"] == pytest.approx(450, abs=25), (long, answer)
    assert result["degraded_codes"] == [] and result["warning_codes"] == [], result["warnings"]
    assert any("began its answer over the end" in n for n in lines_notes(result, 7)), result
    handling = result["turn_taking"]["conditions"]["pause_handling"]
    # (the talk-over line, begun before its caller line ended, is scored a takeover of that
    # line's pause: Full-Duplex-Bench counts any agent start before the caller's end)
    assert (handling["events"], handling["takeovers"]) == (3, 1), handling
    assert result["turn_taking"]["agent_backchannels"] == 1  # the "Okay." in the pause
