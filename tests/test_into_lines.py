"""Two caller lines into the agent's speech, live against the reference agent: a backchannel
after the agent's false yield goes into its restart, not the turn it stopped (whose end is not
yet decided), and a barge-in placed where the backchannel before it in the same turn is still
sounding is kept apart from it (actors/caller/into_agent.py's INTO_AGAIN_MS), so both are heard.
The shipped pauses and backchannel-yield scenarios: benchmarks/shipped_scenarios.py."""

from __future__ import annotations

import json
from pathlib import Path

import turnscope
from turnscope.actors.caller.into_agent import INTO_AGAIN_MS

EXPLAIN = (
    "First you send the item back to us, then we check it in our warehouse, and then we pay "
    "the money back to your card."
)
SCENARIO = f"""
name: two-lines-into-one-turn
task: {{budgets: {{max_latency_ms: 1500}}}}
caller: {{voice: en-us, hangup_after_ms: 600}}
agent: {{voice: en-gb, latency_ms: 450, yield_ms: 250}}
script:
  - agent: Hello, how can I help?
  - caller: Can you tell me how the refund works?
  - agent: Of course. {EXPLAIN}
    backchannel_yield_ms: 250
  - caller: mm-hmm
    backchannel_ms: 1500
  - agent: {EXPLAIN}
    latency_ms: 1100
  - caller: mm-hmm
    backchannel_at: early
  - caller: wait
    barge_in_ms: 1200
  - agent: Yes?
  - caller: Is the postage free?
  - agent: Yes, it is free.
"""


def test_lines_into_the_agents_speech_go_into_the_turn_the_script_means(tmp_path: Path):
    scenario = tmp_path / "into.yaml"
    scenario.write_text(SCENARIO)
    turnscope.demo(outdir=tmp_path / "call", scenario=scenario)
    result = json.loads((tmp_path / "call" / "result.json").read_text())
    truth = json.loads((tmp_path / "call" / "agent_truth.json").read_text())["utterances"]
    lines = {r["line"]: r for r in result["script"]["lines"]}
    restart = next(u for u in truth if u["text"] == EXPLAIN)
    # The second "mm-hmm" went into the restart (its times on the agent's own clock, which
    # starts with the media as the caller's does), as a backchannel the agent talked on through.
    assert lines[5]["spoken_as"] == "backchannel", lines[5]
    assert lines[5]["sent"]["start_ms"] > restart["start_ms"], (lines[5], restart)
    # "wait", placed 1.2 s in (inside the "mm-hmm" or just after it), went out apart from it,
    # and the agent yielded to it.
    said = lines[6]["sent"]["start_ms"] - lines[5]["sent"]["end_ms"]
    assert lines[6]["spoken_as"] == "barge_in" and said >= INTO_AGAIN_MS - 1, lines[6]
    assert any("to be heard apart from it" in n for n in lines[6].get("notes", [])), lines[6]
    assert restart["stopped_early"] is True and restart["end_ms"] > lines[6]["sent"]["start_ms"]
    assert result["degraded_codes"] == [] and result["warning_codes"] == [], result["warnings"]
    assert result["script"]["barge_ins"] == {"planned": 1, "exercised": 1}


def test_a_barge_in_said_into_a_pause_of_the_agents_turn_is_said_to_be_none():
    """The stock pipecat bot's long reply pauses 400 ms between sentences; a `mid` barge-in due
    33 ms into such a pause went out (the caller's ear, within the VAD's hangover, still heard
    the agent speaking), overlapped no agent speech, and the verdict counted no barge-in, while
    the call's closing line said "1 of 1 planned barge-ins exercised". Agent turns and the send
    record as that call had them (2026-12-07); the closing line now counts as the verdict does."""
    from turnscope.actors.caller.into_agent import warn_into_no_speech
    from turnscope.actors.caller.lines import LineRecord
    from turnscope.actors.caller.notes import CallerFindings, CallerNote
    from turnscope.scoring.exercise import Exercise, barge_ins_happened

    dialogue = [
        {"speaker": "agent", "start_ms": 7716.0, "end_ms": 9341.0, "text": "Let me explain."},
        {"speaker": "caller", "start_ms": 9379.0, "end_ms": 9558.0, "text": "Wait."},
        {"speaker": "agent", "start_ms": 9737.0, "end_ms": 9762.0, "text": ""},
    ]
    into_pause = LineRecord(3, "wait", "barge_in", "barge_in_ms", 1658, status="spoken")
    into_pause.spoken_as, into_pause.sent = "barge_in", {"start_ms": 9380.0, "end_ms": 9556.1}
    into_speech = LineRecord(5, "hold on", "barge_in", "barge_in_ms", 500, status="spoken")
    into_speech.spoken_as, into_speech.sent = "barge_in", {"start_ms": 8200.0, "end_ms": 8600.0}
    found = CallerFindings()
    warn_into_no_speech(found, dialogue, [into_pause, into_speech])
    assert [n.code for n in found.notes] == [CallerNote.INTO_NO_SPEECH], found.notes
    [note] = found.notes
    assert note.message.startswith("script[3] 'wait': said as a barge-in at 9.38 s, 39 ms after")
    assert "no barge-in to the verifier" in note.message, note.message
    assert barge_ins_happened({"barge_in": Exercise("barge_in", 0, 1)}, 1) == 0
    assert barge_ins_happened({"barge_in": Exercise("barge_in", 3, 1)}, 1) == 1
