"""Speech on the caller's line that the caller never said (a babble bed's talkers) is said: a
warning naming each such caller turn, never a silent extra turn of the caller's."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.conftest import reference_agent
from tests.interop.pipecat import call_bot
from turnscope.actors.caller.lines import LineRecord
from turnscope.actors.caller.notes import CallerNote
from turnscope.actors.caller.own_line import not_sent, sent_spans, warn_not_sent
from turnscope.reasons import Findings


def _record(line: int, sent: dict | None) -> LineRecord:
    return LineRecord(line, "x", "line", "after_agent_ms", 0, status="spoken", sent=sent)


def _turn(start: float, end: float, text: str = "words") -> dict:
    return {"speaker": "caller", "start_ms": start, "end_ms": end, "text": text}


def test_a_caller_turn_near_no_sent_line_is_named_and_one_over_a_line_is_not():
    records = [
        _record(1, {"start_ms": 1800.0, "end_ms": 5200.0}),
        _record(3, {"dtmf": [{"at_ms": 9000.0, "digit": "1"}]}),
        _record(5, {"start_ms": 12000.0}),  # cut off by the hang-up: runs on
        _record(7, None),  # never spoken
    ]
    assert sent_spans(records) == [(1800.0, 5200.0), (9000.0, 9200.0), (12000.0, float("inf"))]
    dialogue = [
        _turn(1750, 5600),  # the line, its edges a little wide
        {"speaker": "agent", "start_ms": 6000, "end_ms": 7500, "text": "agent"},
        _turn(7600, 7900, "I'm gonna drop it"),  # a babble talker, in the agent's reply
        _turn(9050, 9150),  # a key's tone
        _turn(30000, 31000),  # the cut-off line's
    ]
    assert [t["start_ms"] for t in not_sent(dialogue, sent_spans(records))] == [7600]
    found = Findings()
    warn_not_sent(found, dialogue, records)
    (note,) = found.notes
    assert note.code is CallerNote.NOT_SENT
    assert "1 caller turn(s)" in note.message and '7.6 s ("I\'m gonna drop it")' in note.message
    quiet = Findings()
    warn_not_sent(quiet, dialogue[:2], records)
    assert quiet.notes == []


TALKER = """
name: talker-caller
caller:
  timeout_s: 60
  hangup_after_ms: 800
  acoustics: {noise: talker.wav, snr_db: 3, seed: 3}
script:
  - agent: Thank you for calling. How can I help you today?
  - caller: Hi, I ordered headphones on Monday and I would like a refund.
  - agent: Sure, I can help with that. Refunds go back to the card you paid with.
  - caller: Great, it was order number five five two.
  - agent: Thank you, I have found order five five two.
  - caller: Thank you, goodbye.
  - agent: Goodbye.
"""


def test_a_talker_behind_the_caller_on_a_live_call_is_said_as_not_the_caller(tmp_path: Path):
    """A real call to the reference agent, a talker behind the caller (a recording used as its
    noise bed, 3 dB under it, looping): the caller turns that overlap no line it sent (by its
    own send records) are each counted and the first named, in result.json with their code."""
    import numpy as np
    import soundfile as sf

    from turnscope.actors.caller.speech import speak

    said = speak("The next train to the city leaves from platform four.", voice="en-gb-x-rp")
    talker = np.concatenate([said, np.zeros(24000, np.float32)])
    sf.write(tmp_path / "talker.wav", talker, 16000)
    (tmp_path / "talker.yaml").write_text(TALKER)
    with reference_agent(tmp_path / "talker.yaml") as url:
        asyncio.run(call_bot(url, tmp_path / "talker.yaml", tmp_path / "call"))
    result = json.loads((tmp_path / "call" / "result.json").read_text())
    transcript = json.loads((tmp_path / "call" / "transcript.json").read_text())
    sent = [(u["start_ms"], u["end_ms"]) for u in result["caller_truth"]["utterances"]]
    caller = [t for t in transcript["turns"] if t["speaker"] == "caller"]
    unsent = [t for t in caller if not any(t["start_ms"] < e + 500 and t["end_ms"] > s - 100
                                           for s, e in sent)]  # fmt: skip
    assert unsent, (caller, sent)  # the talker was heard as the caller's turns
    (warned,) = [w for w in result["warnings"] if "overlap no line the caller sent" in w]
    assert f"{len(unsent)} caller turn(s)" in warned, (warned, unsent)
    assert f"{unsent[0]['start_ms'] / 1000:.1f} s" in warned
    assert "caller_turn_not_sent" in result["warning_codes"]


def test_an_agent_that_answered_none_of_the_callers_turns_fails_the_call():
    """The stock pipecat bot on a babble bed greeted, then never found the caller's end of turn:
    latency "not exercised" is no pass of the call when the script planned replies."""
    import dataclasses

    from turnscope.actors.caller.scenario_contract import scenario_contract, scenario_plan
    from turnscope.actors.caller.scenario_file import load_scenario
    from turnscope.configs import config_path
    from turnscope.scoring.outcome import score_outcome

    sc = load_scenario(config_path("scenarios", "refund-call.yaml"))
    assert scenario_plan(sc).replies == 4  # the policy, "go ahead", the label, goodbye
    contract = scenario_contract(sc)
    greeted = [
        {"speaker": "agent", "start_ms": 100, "end_ms": 800, "text": "Hello?"},
        _turn(2000, 5500, "I would like a refund"),
        _turn(13000, 15000, "Can I get a label?"),
    ]
    outcome = score_outcome(greeted, contract, evidence_class="live_lane")
    assert not outcome.passed
    assert outcome.failures == [
        "the agent answered none of the caller's 2 turn(s) (4 replies planned)"
    ]
    answered = [*greeted[:2], {**greeted[0], "start_ms": 6000, "end_ms": 7000}]
    assert score_outcome(answered, contract, evidence_class="live_lane").failures == []
    unplanned = dataclasses.replace(contract, plan=None)  # a replay: no plan, no such failure
    assert score_outcome(greeted, unplanned, evidence_class="live_lane").failures == []


MUTE_AFTER_GREETING = """
name: greets-only
caller: {timeout_s: 40, hangup_after_ms: 500, reply_timeout_ms: 2500}
script:
  - agent: Thank you for calling. How can I help you today?
  - caller: Hi, I would like a refund for my headphones.
  - agent: Sure, I can help with that.
  - caller: Thank you, goodbye.
  - agent: Goodbye.
"""


def test_a_live_agent_that_greets_and_never_answers_fails_the_call(tmp_path: Path, cli):
    """`turnscope agent --never-answer`: its greeting, then silence; the call fails with the
    reason on the terminal and in result.json (it used to pass, latency "not exercised")."""
    import subprocess

    from tests.conftest import turnscope_exe

    scenario = tmp_path / "greets.yaml"
    scenario.write_text(MUTE_AFTER_GREETING)
    agent = subprocess.Popen(
        [*turnscope_exe(), "agent", "--port", "0", "--scenario", str(scenario), "--never-answer"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        line = agent.stdout.readline() if agent.stdout else ""
        url = line.split("SmallWebRTC ", 1)[1].split(",")[0]
        code, out, err = cli("call", url, "--scenario", str(scenario), "--loopback-only",
                             "-q", "-o", str(tmp_path / "call"))  # fmt: skip
    finally:
        agent.terminate()
        agent.wait(10)
    result = json.loads((tmp_path / "call" / "result.json").read_text())
    assert code == 1 and result["verdict"] == "fail", (code, out, err)
    (why,) = [f for f in result["failures"] if "answered none of the caller's" in f]
    assert "(2 replies planned)" in why and why in out + err, (why, out, err)
